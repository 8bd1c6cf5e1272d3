"""``StateAssembler``: driver readings -> the contract's ``state`` vector (``STATE_LAYOUT``), pure numpy.

The TCP pose comes from the driver's pose topic (the driver's quaternion is converted once, to 6-D);
TCP velocity is a low-passed finite difference of stamped poses (crisp and UR publish no Cartesian twist);
the gripper opening is the sum of the finger joint positions over ``max_width_m`` (or the sum itself for
crisp_py's fraction convention); arm joints are mapped by name (ros2_control does not fix the order of
``joint_states``). Malformed messages raise, so the bridge counts and drops them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from robot_rl.envs.contract import STATE_LAYOUT
from robot_rl.envs.geometry import matrix_to_rot6d, matrix_to_rotvec

_S = {f.name: STATE_LAYOUT.slice(f.name) for f in STATE_LAYOUT.fields}
MAX_WRENCH = 1e4
"""N and N m: readings beyond it are refused as bad input."""


class StateAssembler:
    def __init__(self, joint_names: Sequence[str] = (), gripper_joints: Sequence[str] = (),
                 max_width_m: float = 0.08, velocity_smoothing: float = 0.3, gripper_units: str = "m") -> None:
        if not 0 < velocity_smoothing <= 1:
            raise ValueError(f"velocity_smoothing must be in (0, 1], got {velocity_smoothing}")
        self.joint_names = tuple(joint_names)
        self.gripper_joints = tuple(gripper_joints)
        self.full_width = 1.0 if gripper_units == "fraction" else max_width_m  # finger sum at opening 1
        self.alpha = velocity_smoothing
        self.state = np.zeros(STATE_LAYOUT.dim, np.float32)
        self.state[_S["gripper_opening"]] = 1.0
        self.position: np.ndarray | None = None
        self.rotation: np.ndarray | None = None
        self.pose_stamp_s: float | None = None
        self.q: np.ndarray | None = None
        self.dq: np.ndarray | None = None
        self.joint_stamp_s: float | None = None

    def on_pose(self, position: np.ndarray, rotation: np.ndarray, stamp_s: float) -> None:
        s = self.state
        if self.position is not None and self.pose_stamp_s is not None:
            dt = stamp_s - self.pose_stamp_s
            if 1e-5 < dt < 0.2:
                lin = (position - self.position) / dt
                ang = matrix_to_rotvec(rotation @ self.rotation.T) / dt  # type: ignore[union-attr]
                a = self.alpha
                s[_S["tcp_linvel"]] = (1 - a) * s[_S["tcp_linvel"]] + a * lin
                s[_S["tcp_angvel"]] = (1 - a) * s[_S["tcp_angvel"]] + a * ang
            elif dt >= 0.2:  # a gap: restart the estimate
                s[_S["tcp_linvel"]] = 0.0
                s[_S["tcp_angvel"]] = 0.0
        self.position, self.rotation, self.pose_stamp_s = position, rotation, stamp_s
        s[_S["tcp_pos"]] = position
        s[_S["tcp_rot6d"]] = matrix_to_rot6d(rotation)

    def on_wrench(self, force: Sequence[float], torque: Sequence[float]) -> bool:
        """A wrench reading; False (nothing changed) when it is not finite or beyond ``MAX_WRENCH`` (no wrist
        sensor reads that much; such a value would also overflow the float32 state)."""
        f, t = np.asarray(force, float), np.asarray(torque, float)
        if not (np.all(np.abs(f) <= MAX_WRENCH) and np.all(np.abs(t) <= MAX_WRENCH)):  # NaN fails too
            return False
        self.state[_S["wrench_force"]] = f
        self.state[_S["wrench_torque"]] = t
        return True

    def on_joint_states(self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float],
                        stamp_s: float) -> tuple[bool, bool]:
        """Any joint_states message (arm, gripper or merged): picks what it knows by name. Returns whether it
        updated (the arm joints, the gripper opening). Raises ``ValueError`` for a message that cannot be read
        (positions and names of different lengths, repeated names, non-finite values of our joints)."""
        if len(positions) != len(names):
            raise ValueError(f"{len(names)} names but {len(positions)} positions")
        if len(velocities) not in (0, len(names)):
            raise ValueError(f"{len(names)} names but {len(velocities)} velocities")
        index = {n: i for i, n in enumerate(names)}
        if len(index) != len(names):
            raise ValueError(f"repeated joint names {sorted(n for n in index if list(names).count(n) > 1)}")
        arm = bool(self.joint_names) and all(n in index for n in self.joint_names)
        grip = bool(self.gripper_joints) and all(n in index for n in self.gripper_joints)
        q = dq = width = None
        if arm:
            idx = [index[n] for n in self.joint_names]
            q = np.asarray([positions[i] for i in idx], float)
            dq = np.asarray([velocities[i] for i in idx] if velocities else np.zeros(len(idx)), float)
            if not (np.all(np.isfinite(q)) and np.all(np.isfinite(dq))):
                raise ValueError(f"non-finite arm joint values {q.tolist()} / {dq.tolist()}")
        if grip:
            width = float(sum(positions[index[n]] for n in self.gripper_joints))
            if not math.isfinite(width):
                raise ValueError(f"non-finite gripper joint positions for {list(self.gripper_joints)}")
        if q is not None:
            self.q, self.dq, self.joint_stamp_s = q, dq, stamp_s
        if width is not None:
            self.state[_S["gripper_opening"]] = np.clip(width / self.full_width, 0.0, 1.0)
        return arm, grip

    @property
    def ready(self) -> bool:
        return self.position is not None
