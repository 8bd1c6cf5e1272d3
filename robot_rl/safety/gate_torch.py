"""Batched torch twin of ``robot_rl.safety.gate``: the pose step for N worlds at once, on any device.

The same steps in the same order as ``gate.pose_step`` (box, tilt cone, reference limiting, per-command step
limits), with a branch's result selected per world by ``torch.where``; ``tests/safety/test_gate_torch.py``
holds it to the numpy gate on random and boundary inputs. Targets are ``(position (N, 3), rotation (N, 3, 3))``.
A branch that no world takes is skipped: most steps turn no target past the cone or a rotation limit, and the
rotation maths of those branches is most of the gate's small-tensor operations.
"""

from __future__ import annotations

import torch

from robot_rl.envs.geometry_torch import matrix_to_rotvec, rotation_angle_between, rotvec_to_matrix
from robot_rl.safety.config import SafetyLimits
from robot_rl.safety.gate import TILT_ROUNDING_RAD

Poses = tuple[torch.Tensor, torch.Tensor]


def _where_any(mask: torch.Tensor, compute, current: torch.Tensor) -> torch.Tensor:
    """``compute()`` where ``mask`` is set (per world), ``current`` elsewhere; ``compute`` runs only if needed."""
    if not bool(mask.any()):
        return current
    return torch.where(mask.reshape(-1, *([1] * (current.dim() - 1))), compute(), current)


class BatchedGate:
    """``pose_step`` for N worlds with the limits held as tensors on the worlds' device."""

    def __init__(self, limits: SafetyLimits, device: torch.device, dtype: torch.dtype) -> None:
        self.limits = limits
        self.low = torch.tensor(limits.workspace_low_m, dtype=dtype, device=device)
        self.high = torch.tensor(limits.workspace_high_m, dtype=dtype, device=device)
        self.down = torch.tensor([0.0, 0.0, -1.0], dtype=dtype, device=device)
        self.x_axis = torch.tensor([1.0, 0.0, 0.0], dtype=dtype, device=device)

    def pose_step(self, last: Poses, action: torch.Tensor, measured: Poses) -> tuple[torch.Tensor, torch.Tensor,
                                                                                    torch.Tensor]:
        """The targets after ``action`` (N, 7) and whether the box, cone or a step limit clipped each one
        (``gate.pose_step``'s ``clipped_*`` reasons; reference limiting alone is not a clip)."""
        lim = self.limits
        old_pos, old_rot = last
        pos = old_pos + action[:, :3] * lim.max_step_m
        rot = rotvec_to_matrix(action[:, 3:6] * lim.max_step_rad) @ old_rot
        boxed = self.in_box(pos)
        clipped = (boxed != pos).any(dim=-1)
        rot, tilted = self.limit_tilt(rot)
        limited, rot_limited, turned = self.limit_reference(boxed, rot, measured)
        rot_limited = _where_any(turned, lambda: self.limit_tilt(rot_limited)[0], rot_limited)
        pos, rot, stepped = self.step_toward(last, limited, rot_limited)
        return pos, rot, clipped | tilted | stepped

    def in_box(self, position: torch.Tensor) -> torch.Tensor:
        return torch.minimum(torch.maximum(position, self.low), self.high)

    def tool_tilt(self, mat: torch.Tensor) -> torch.Tensor:
        return torch.acos((-mat[:, 2, 2]).clamp(-1.0, 1.0))

    def limit_tilt(self, mat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.limits.max_tilt_rad is None:
            return mat, torch.zeros(mat.shape[0], dtype=torch.bool, device=mat.device)
        tilt = self.tool_tilt(mat)
        over = tilt > self.limits.max_tilt_rad

        def fixed() -> torch.Tensor:
            axis = torch.linalg.cross(mat[:, :, 2], self.down.expand(mat.shape[0], 3))
            norm = torch.linalg.vector_norm(axis, dim=-1, keepdim=True)
            axis = torch.where(norm < 1e-9, self.x_axis, axis / norm.clamp_min(1e-9))
            return rotvec_to_matrix(axis * (tilt - self.limits.max_tilt_rad)[:, None]) @ mat

        return _where_any(over, fixed, mat), over

    def limit_reference(self, pos: torch.Tensor, rot: torch.Tensor, measured: Poses) -> tuple[torch.Tensor,
                                                                                            torch.Tensor,
                                                                                            torch.Tensor]:
        """Reference limiting: the target within ``max_target_error_*`` of the measured pose; also whether
        the rotation was limited."""
        lim = self.limits
        measured_pos, measured_rot = measured
        limited = measured_pos + (pos - measured_pos).clamp(-lim.max_target_error_m, lim.max_target_error_m)
        turned = rotation_angle_between(rot, measured_rot) > lim.max_target_error_rad

        def pulled() -> torch.Tensor:
            rv = matrix_to_rotvec(rot @ measured_rot.transpose(-1, -2))
            norm = torch.linalg.vector_norm(rv, dim=-1, keepdim=True).clamp_min(1e-12)
            return rotvec_to_matrix(rv * (lim.max_target_error_rad / norm)) @ measured_rot

        return limited, _where_any(turned, pulled, rot), turned

    def step_toward(self, last: Poses, pos: torch.Tensor, rot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                                    torch.Tensor]:
        """``gate.step_toward``: the last target moved toward (pos, rot) within the per-command step limits,
        inside the box and the tilt cone; also whether a step limit acted."""
        lim = self.limits
        old_pos, old_rot = last
        step = pos - old_pos
        norm = torch.linalg.vector_norm(step, dim=-1, keepdim=True)
        long = norm[:, 0] > lim.max_translation_step_m
        shortened = old_pos + step * (lim.max_translation_step_m / norm.clamp_min(1e-12))
        pos = self.in_box(torch.where(long[:, None], shortened, pos))
        angle = rotation_angle_between(rot, old_rot)
        wide = angle > lim.max_rotation_step_rad

        def narrowed() -> torch.Tensor:
            rv = matrix_to_rotvec(rot @ old_rot.transpose(-1, -2))
            return rotvec_to_matrix(rv * (lim.max_rotation_step_rad / angle.clamp_min(1e-12))[:, None]) @ old_rot

        rot = _where_any(wide, narrowed, rot)
        if lim.max_tilt_rad is not None:
            tilt = self.tool_tilt(rot)
            leaving = (tilt > lim.max_tilt_rad + TILT_ROUNDING_RAD) & (tilt > self.tool_tilt(old_rot))
            rot = torch.where(leaving[:, None, None], old_rot, rot)
        return pos, rot, long | wide
