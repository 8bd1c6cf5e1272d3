"""The pose step of the safety gate, as pure functions: where one contract action may move the commanded
TCP target. ``SafetyFilter`` (the robot bridge) and the simulated arm (``robot_rl.sim``) both move their
target with ``pose_step``, so a policy meets the same box, tilt cone, reference limiting and step limits in
simulation as on the real arm.

A target is ``(position [3] m, rotation [3, 3])`` in the robot's base frame; ``reasons`` collects what acted
(``clipped_workspace``, ``clipped_tilt``, ``limited_target_error``, ``clipped_translation_step``,
``clipped_rotation_step``).
"""

from __future__ import annotations

import math

import numpy as np

from robot_rl.envs.geometry import matrix_to_rotvec, rotation_angle_between, rotvec_to_matrix
from robot_rl.safety.config import SafetyLimits

Pose = tuple[np.ndarray, np.ndarray]
_DOWN = np.array([0.0, 0.0, -1.0])
TILT_ROUNDING_RAD = 1e-6
"""``limit_tilt`` puts a rotation on the cone's edge up to rounding; the step limit's "would leave the cone"
test allows this much, so float64 and float32 twins of the gate agree there."""


def tool_tilt(mat: np.ndarray) -> float:
    """Angle (rad) between the tool z axis and straight down."""
    return math.acos(min(1.0, max(-1.0, -float(mat[2, 2]))))


def limit_tilt(mat: np.ndarray, max_tilt_rad: float | None) -> tuple[np.ndarray, bool]:
    """Rotate ``mat`` so its tool z axis is within ``max_tilt_rad`` of pointing down; report if it did."""
    if max_tilt_rad is None:
        return mat, False
    tilt = tool_tilt(mat)
    if tilt <= max_tilt_rad:
        return mat, False
    axis = np.cross(mat[:, 2], _DOWN)
    norm = np.linalg.norm(axis)
    axis = np.array([1.0, 0.0, 0.0]) if norm < 1e-9 else axis / norm
    return rotvec_to_matrix(axis * (tilt - max_tilt_rad)) @ mat, True


def in_box(position: np.ndarray, limits: SafetyLimits) -> np.ndarray:
    return np.clip(position, limits.workspace_low_m, limits.workspace_high_m)


def step_toward(last: Pose, pos: np.ndarray, rot: np.ndarray, limits: SafetyLimits, reasons: list[str]) -> Pose:
    """The last commanded target moved toward (pos, rot) by at most the per-command step limits, inside the
    box, with the tool inside the tilt cone. The last target is inside both, so the result is too."""
    old_pos, old_rot = last
    step = pos - old_pos
    norm = float(np.linalg.norm(step))
    if norm > limits.max_translation_step_m:
        pos = old_pos + step * (limits.max_translation_step_m / norm)
        reasons.append("clipped_translation_step")
    pos = in_box(pos, limits)  # a projection: never further from old_pos than before
    angle = rotation_angle_between(rot, old_rot)
    if angle > limits.max_rotation_step_rad:
        rv = matrix_to_rotvec(rot @ old_rot.T)
        rot = rotvec_to_matrix(rv * (limits.max_rotation_step_rad / angle)) @ old_rot
        reasons.append("clipped_rotation_step")
    tilt = limits.max_tilt_rad
    if tilt is not None and tool_tilt(rot) > tilt + TILT_ROUNDING_RAD and tool_tilt(rot) > tool_tilt(old_rot):
        rot = old_rot  # the partial turn would leave the cone: keep the orientation this step
    return pos, rot


def pose_step(last: Pose, action: np.ndarray, measured: Pose, limits: SafetyLimits,
              reasons: list[str]) -> Pose:
    """The target after ``action`` (contract units, in [-1, 1]): ``last`` moved by ``action * max_step``,
    clipped to the box and the tilt cone, kept near the ``measured`` pose (reference limiting: bounded force in
    contact, no wind-up), and last, over everything else, within the step limits of ``last``."""
    old_pos, old_rot = last
    pos = old_pos + action[:3] * limits.max_step_m
    rotvec = action[3:6] * limits.max_step_rad
    rot = rotvec_to_matrix(rotvec) @ old_rot if np.any(rotvec) else old_rot
    boxed = in_box(pos, limits)
    if np.any(boxed != pos):
        reasons.append("clipped_workspace")
    rot, tilted = limit_tilt(rot, limits.max_tilt_rad)
    if tilted:
        reasons.append("clipped_tilt")
    limited, rot_limited, (moved, turned) = limit_reference((boxed, rot), measured, limits)
    if turned:
        rot_limited, _ = limit_tilt(rot_limited, limits.max_tilt_rad)
    if moved or turned:
        reasons.append("limited_target_error")
    return step_toward(last, limited, rot_limited, limits, reasons)


def limit_reference(target: Pose, measured: Pose, limits: SafetyLimits) -> tuple[np.ndarray, np.ndarray,
                                                                                 tuple[bool, bool]]:
    """Reference limiting: ``target`` kept within ``max_target_error_m`` (per axis) and
    ``max_target_error_rad`` of the ``measured`` pose; also whether the position / rotation were limited."""
    (pos, rot), (measured_pos, measured_rot) = target, measured
    limited = measured_pos + np.clip(pos - measured_pos, -limits.max_target_error_m, limits.max_target_error_m)
    turned = rotation_angle_between(rot, measured_rot) > limits.max_target_error_rad
    if turned:
        rv = matrix_to_rotvec(rot @ measured_rot.T)
        rot = rotvec_to_matrix(rv * (limits.max_target_error_rad / np.linalg.norm(rv))) @ measured_rot
    return limited, rot, (bool(np.any(limited != pos)), turned)
