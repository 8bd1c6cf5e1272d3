"""``SimArm``: a MuJoCo arm task driven like a real driver stack (no rclpy; needs the ``sim`` extra).

The in-physics Cartesian impedance controller of ``robot_rl.sim`` gets crisp semantics: ``set_target``
sets the reference pose (held until the next one; no timeout, like crisp), and the reference is clipped to
within ``max_target_error`` of the measured TCP at every physics chunk (crisp's error clipping).
``advance(dt)`` steps physics by wall-clock time, so the node runs it in real time.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import mujoco
import numpy as np

from robot_rl.safety.gate import limit_reference
from robot_rl.sim import make_env
from robot_rl.sim.arm import FINGER_MAX_OPENING_M
from robot_rl.sim.rendering import CameraRenderer

JOINT_NAMES = tuple(f"fr3_joint{i}" for i in range(1, 8))
FINGER_NAMES = ("fr3_finger_joint1", "fr3_finger_joint2")


@dataclass(frozen=True)
class Readings:
    q: np.ndarray
    dq: np.ndarray
    fingers: np.ndarray  # [2] m
    tcp_pos: np.ndarray
    tcp_rot: np.ndarray
    wrench: np.ndarray  # [6] N, N m (base frame, tared at reset)
    privileged: np.ndarray
    success: bool
    sim_time_s: float


class SimArm:
    def __init__(self, task: str = "reach", seed: int = 0, max_chunk_s: float = 0.05) -> None:
        self.env = make_env(task, obs_mode="state")
        self.scene = self.env.scene
        self.cfg = self.env.cfg
        self.lock = threading.Lock()
        self.seed = seed
        self.max_chunk_s = max_chunk_s
        self._debt_s = 0.0
        self._target: tuple[np.ndarray, np.ndarray] | None = None
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.env.reset(seed=self.seed)
            self.seed += 1
            self._target = (self.scene.tcp_pos(), self.scene.tcp_mat())
            self._debt_s = 0.0

    def set_target(self, pos: np.ndarray, rot: np.ndarray) -> None:
        with self.lock:
            self._target = (np.asarray(pos, float).copy(), np.asarray(rot, float).copy())
            self._apply_target()

    def set_gripper_width(self, width_m: float) -> None:
        with self.lock:
            self.scene.set_gripper(width_m / (2 * FINGER_MAX_OPENING_M))

    def _apply_target(self) -> None:
        """Error clipping: the reference used by the controller stays near the measured TCP."""
        measured = (self.scene.tcp_pos(), self.scene.tcp_mat())
        ref_pos, ref_rot, _ = limit_reference(self._target, measured, self.cfg.safety)  # type: ignore[arg-type]
        self.scene.set_target(ref_pos, ref_rot)

    def advance(self, dt_s: float) -> int:
        """Step physics by ``dt_s`` of simulated time (whole physics steps; the remainder carries over)."""
        dt = self.cfg.physics_dt_s
        with self.lock:
            self._debt_s = min(self._debt_s + dt_s, self.max_chunk_s)
            n = int(self._debt_s / dt)
            if n > 0:
                self._debt_s -= n * dt
                self._apply_target()
                self.scene.step(n)
            return n

    def read(self) -> Readings:
        s = self.scene
        with self.lock:
            d = s.data
            return Readings(
                q=d.qpos[s.arm_qpos_adr].copy(), dq=d.qvel[s.arm_dof_adr].copy(),
                fingers=d.qpos[s.finger_qpos_adr].copy(), tcp_pos=s.tcp_pos(), tcp_rot=s.tcp_mat(),
                wrench=s.wrench(), privileged=self.env.task.privileged(s).astype(np.float32),
                success=bool(self.env.task.is_success(s)), sim_time_s=float(d.time),
            )

    def snapshot(self, out: mujoco.MjData | None = None) -> mujoco.MjData:
        """A copy of the physics state (for rendering outside the lock, in the renderer's own thread)."""
        out = out if out is not None else mujoco.MjData(self.scene.model)
        with self.lock:
            mujoco.mj_copyData(out, self.scene.model, self.scene.data)
        return out

    def renderer(self, height: int, width: int) -> CameraRenderer:
        """A new offscreen renderer; create and use it in one thread (GL contexts are per thread)."""
        return CameraRenderer(self.scene.model, height, width)

    @property
    def privileged_names(self) -> tuple[str, ...]:
        from robot_rl.envs.contract import Layout

        layout = self.env.task.privileged_layout
        return tuple(Layout(layout).names()) if layout else ()

    def close(self) -> None:
        self.env.close()
