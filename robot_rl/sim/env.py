"""``ArmEnv``: the CPU MuJoCo backend of the environment contract (see ``robot_rl.envs.contract``)."""

from __future__ import annotations

from collections import deque
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import (
    ACTION_DIM,
    GRIPPER_CLOSE_THRESHOLD,
    GRIPPER_OPEN_THRESHOLD,
    STATE_LAYOUT,
    CameraSpec,
    ContractSpec,
    check_action,
    image_key,
)
from robot_rl.envs.geometry import matrix_to_rot6d
from robot_rl.safety.gate import in_box, pose_step
from robot_rl.sim.models import task_scene_xml
from robot_rl.sim.randomization import DomainRandomizer
from robot_rl.sim.rendering import CameraRenderer
from robot_rl.sim.scene import ArmScene
from robot_rl.sim.tasks.base import Task

SETTLE_STEPS = 150  # physics steps after reset so objects rest and the arm reaches its start pose


class ArmEnv(gym.Env):
    """Gymnasium env: contract observations/actions over a simulated arm executing ``task``.

    The action moves the impedance controller's target through the safety gate the robot bridge uses
    (``robot_rl.safety.gate.pose_step`` with ``ArmEnvConfig.safety``): ``target += a[:3] * max_step_m``,
    ``R_target = exp(a[3:6] * max_step_rad) R_target``, clipped to the workspace box and tilt cone (reported as
    ``info["safety_clipped"]``), kept near the measured TCP (reference limiting, bounding contact forces) and
    within the per-command step limits. Physics then runs ``substeps`` steps.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, task: Task, render_mode: str | None = None) -> None:
        self.task = task
        self.cfg = cfg = task.config.env
        self.render_mode = render_mode
        self.scene = ArmScene(task_scene_xml(task))
        task.bind(self.scene)
        self.randomizer = DomainRandomizer(self.scene, cfg.randomization)
        self.contract = ContractSpec(
            cameras=tuple(CameraSpec(c, cfg.image_size, cfg.image_size) for c in cfg.cameras)
            if cfg.obs_mode == "pixels"
            else (),
            privileged_layout=task.privileged_layout if cfg.obs_mode == "state" else (),
            control_hz=cfg.control_hz,
            max_step_m=cfg.max_step_m,
            max_step_rad=cfg.max_step_rad,
        )
        self.observation_space = self.contract.observation_space()
        self.action_space = self.contract.action_space()
        self.metadata = {**self.metadata, "render_fps": cfg.control_hz}
        self._renderer: CameraRenderer | None = None
        self._latency: deque[np.ndarray] = deque()
        self._target_pos = np.zeros(3)
        self._target_mat = np.eye(3)
        self._gripper_open = True
        self._steps = 0

    # --- gymnasium API -------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        rng = self.np_random
        scene = self.scene
        self.randomizer.apply(rng)
        scene.reset_arm()
        start = self.task.start_tcp_pos(rng) + rng.uniform(-1, 1, 3) * self.cfg.init_tcp_noise_m
        self._target_pos = in_box(start, self.cfg.safety)
        self._target_mat = scene.tcp_mat()
        self._gripper_open = True
        scene.set_gripper(1.0)
        # Drive to the start pose with objects parked, then let the task place them and everything settle.
        scene.set_target(self._target_pos, self._target_mat)
        scene.step(SETTLE_STEPS)
        self.task.reset(scene, rng)
        scene.forward()
        self._gripper_open = (
            scene.data.ctrl[scene.gripper_actuator]
            > 0.5 * scene.model.actuator_ctrlrange[scene.gripper_actuator, 1]
        )
        scene.step(SETTLE_STEPS // 3)
        self._target_pos, self._target_mat = scene.tcp_pos(), scene.tcp_mat()
        scene.set_target(self._target_pos, self._target_mat)
        scene.tare_wrench()
        low, high = self.cfg.randomization.latency_range
        delay = low if low == high else int(rng.integers(low, high + 1))  # a fixed delay draws nothing
        self._latency = deque(np.zeros(ACTION_DIM, np.float32) for _ in range(delay))
        self._steps = 0
        return self._observation(), self._info(safety_clipped=False, success=self.task.is_success(scene))

    def step(self, action: np.ndarray):
        raw = check_action(action, source="ArmEnv.step(action)")
        a = np.minimum(np.maximum(raw, -1.0), 1.0)
        clipped = bool((a != raw).any())
        if self._latency:
            self._latency.append(a)
            a = self._latency.popleft()
        clipped |= self._apply_action(a)
        self.scene.step(self.cfg.substeps)
        self._steps += 1
        success = self.task.is_success(self.scene)
        terms = self.task.reward_terms(self.scene)
        reward = float(success)
        if self.cfg.dense_reward:
            reward += sum(w * terms[name] for name, w in self.task.config.reward_weights.items())
        terminated = success and self.cfg.terminate_on_success
        truncated = not terminated and self._steps >= self.cfg.max_episode_steps
        info = self._info(safety_clipped=clipped, success=success)
        info["reward_terms"] = terms
        return self._observation(), reward, terminated, truncated, info

    def render(self) -> np.ndarray | None:
        if self.render_mode != "rgb_array":
            return None
        return self._get_renderer().render("front", self.scene.data)

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    # --- internals -----------------------------------------------------------------------------------
    def _apply_action(self, a: np.ndarray) -> bool:
        """Move the impedance target by ``a``; return True if the workspace/tilt safety clip acted."""
        scene = self.scene
        reasons: list[str] = []
        last, measured = (self._target_pos, self._target_mat), (scene.tcp_pos(), scene.tcp_mat())
        self._target_pos, self._target_mat = pose_step(last, a.astype(np.float64), measured, self.cfg.safety, reasons)
        clipped = any(r.startswith("clipped_") for r in reasons)
        scene.set_target(self._target_pos, self._target_mat)
        if a[6] <= GRIPPER_CLOSE_THRESHOLD:
            self._gripper_open = False
        elif a[6] >= GRIPPER_OPEN_THRESHOLD:
            self._gripper_open = True
        scene.set_gripper(1.0 if self._gripper_open else 0.0)
        return clipped

    def _observation(self) -> dict[str, np.ndarray]:
        scene = self.scene
        linvel, angvel = scene.tcp_velocity()
        state = np.empty(STATE_LAYOUT.dim, np.float32)
        state[STATE_LAYOUT.slice("tcp_pos")] = scene.tcp_pos()
        state[STATE_LAYOUT.slice("tcp_rot6d")] = matrix_to_rot6d(scene.tcp_mat())
        state[STATE_LAYOUT.slice("tcp_linvel")] = linvel
        state[STATE_LAYOUT.slice("tcp_angvel")] = angvel
        state[STATE_LAYOUT.slice("gripper_opening")] = scene.gripper_opening()
        wrench = scene.wrench()
        state[STATE_LAYOUT.slice("wrench_force")] = wrench[:3]
        state[STATE_LAYOUT.slice("wrench_torque")] = wrench[3:]
        obs: dict[str, np.ndarray] = {"state": self.randomizer.noisy(state, self.np_random)}
        if self.cfg.obs_mode == "state":
            if self.task.privileged_layout:
                priv = self.task.privileged(scene).astype(np.float32)
                obs["privileged"] = self.randomizer.noisy(priv, self.np_random)
        else:
            renderer = self._get_renderer()
            for cam in self.cfg.cameras:
                obs[image_key(cam)] = renderer.render(cam, scene.data)
        return obs

    def _info(self, safety_clipped: bool, success: bool) -> dict[str, Any]:
        return {"intervention": False, "safety_clipped": safety_clipped, "is_success": success}

    def _get_renderer(self) -> CameraRenderer:
        if self._renderer is None:
            size = self.cfg.image_size if self.cfg.obs_mode == "pixels" else 256
            self._renderer = CameraRenderer(self.scene.model, size, size)
        return self._renderer
