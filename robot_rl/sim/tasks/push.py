"""``push``: push a block across the table into a goal region with the closed gripper.

Mirror symmetry (``PushConfig.symmetry``, for symmetry augmentation). The scene is symmetric about the x-z
plane: arm base at the origin facing +x, home posture in that plane, table, workspace box, front camera and
wrist camera all symmetric, and the block start (xy, yaw) and the goal are drawn from distributions symmetric
under ``y -> -y``; rewards and success are invariant, and the cameras' images flip left-right. Rotations
about the arm's base axis hold too (``BASE_AXIS_SYMMETRY``); translations are not declared: with them
``robot-rl check-symmetry`` finds the pushed block's orientation diverging from its twin's beyond the limit
on some seeds (pushing contacts amplify the arm's small differences in configuration).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from robot_rl.data.symmetry import SymmetryGroup
from robot_rl.envs.contract import Field
from robot_rl.envs.geometry import matrix_to_rot6d
from robot_rl.envs.geometry_torch import matrix_to_rot6d as batched_rot6d
from robot_rl.sim.arm import frame_sensors
from robot_rl.sim.config import ArmEnvConfig
from robot_rl.sim.readings import WorldReadings
from robot_rl.sim.scene import ArmScene
from robot_rl.sim.tasks.base import (
    BASE_AXIS_SYMMETRY,
    Expert,
    Task,
    TaskConfig,
    expert_action,
    move_toward,
    rotate_toward,
    top_down_mat,
)

PARK_POS = (0.0, 0.6, 0.02)  # off the workspace: where the block sits until the first reset
PUSHER_RADIUS_M = 0.012  # half the extent of the closed fingertips in the horizontal plane

PRIVILEGED_LAYOUT = (
    Field("block_pos", 3, "m, base frame, block centre", "point"),
    Field("block_rot6d", 6, "first two columns of the block's rotation matrix, base frame", "rot6d"),
    Field("goal_pos", 2, "m, base frame, centre of the goal region on the table", "point"),
    Field("block_minus_tcp", 3, "m, base frame", "vector"),
    Field("goal_minus_block", 2, "m, base frame, xy", "vector"),
)


@dataclass(frozen=True)
class PushConfig(TaskConfig):
    env: ArmEnvConfig = field(default_factory=lambda: ArmEnvConfig(max_episode_steps=100))
    reward_weights: dict[str, float] = field(default_factory=lambda: {"reach": 0.1, "push": 0.5})
    symmetry: SymmetryGroup = BASE_AXIS_SYMMETRY
    block_half_size_m: tuple[float, float, float] = (0.025, 0.025, 0.02)
    """Half extents (m) of the block: 5 x 5 cm footprint, 4 cm tall."""
    block_mass_kg: float = 0.1
    xy_low: tuple[float, float] = (0.42, -0.15)
    """Lower corner (m) of the table area block starts and goals are sampled in (y range symmetric)."""
    xy_high: tuple[float, float] = (0.58, 0.15)
    block_yaw_range_rad: float = float(np.pi / 4)
    """Block yaw is uniform in [-range, range] (symmetric)."""
    min_push_distance_m: float = 0.1
    """Goals are re-drawn until at least this far (m) from the block's start."""
    goal_radius_m: float = 0.025
    """Success: the block's centre within this distance (m, xy) of the goal."""

    def __post_init__(self) -> None:
        if not np.isclose(self.xy_low[1], -self.xy_high[1]):
            raise ValueError(
                f"PushConfig.xy_low/xy_high must be symmetric in y (mirror symmetry), "
                f"got {self.xy_low} / {self.xy_high}"
            )
        if any(lo > hi for lo, hi in zip(self.xy_low, self.xy_high)):
            raise ValueError(f"PushConfig.xy_low must be <= xy_high, got {self.xy_low} / {self.xy_high}")
        diagonal = float(np.hypot(self.xy_high[0] - self.xy_low[0], self.xy_high[1] - self.xy_low[1]))
        if not 0 <= self.min_push_distance_m < 0.7 * diagonal:
            raise ValueError(
                f"PushConfig.min_push_distance_m must be in [0, {0.7 * diagonal:.3f}) m for the "
                f"sampling area, got {self.min_push_distance_m}"
            )
        if not all(0.01 <= h <= 0.05 for h in self.block_half_size_m):
            raise ValueError(
                f"PushConfig.block_half_size_m must be in [0.01, 0.05] m, got {self.block_half_size_m}"
            )
        for name in ("block_mass_kg", "goal_radius_m"):
            if getattr(self, name) <= 0:
                raise ValueError(f"PushConfig.{name} must be > 0, got {getattr(self, name)}")
        if not 0 <= self.block_yaw_range_rad <= np.pi:
            raise ValueError(
                f"PushConfig.block_yaw_range_rad must be in [0, pi], got {self.block_yaw_range_rad}"
            )


class Push(Task):
    name = "push"
    privileged_layout = PRIVILEGED_LAYOUT
    config: PushConfig

    def scene_xml(self) -> tuple[str, str]:
        c = self.config
        hx, hy, hz = c.block_half_size_m
        x, y, _ = PARK_POS
        body = (
            f'<body name="block" pos="{x} {y} {hz}"><freejoint name="block_joint"/>'
            f'<geom name="block" type="box" size="{hx} {hy} {hz}" mass="{c.block_mass_kg}" '
            f'rgba="0.2 0.4 0.85 1"/></body>'
            f'<body name="goal" mocap="true" pos="0.5 0 0">'
            f'<geom type="cylinder" size="{c.goal_radius_m} 0.0005" rgba="0.1 0.9 0.2 0.6" '
            f'contype="0" conaffinity="0"/></body>'
        )
        return body, ""

    def sensor_xml(self) -> str:
        return frame_sensors("block", "xbody", "block")

    def bind(self, scene: ArmScene) -> None:
        m = scene.model
        self.block_body = m.body("block").id
        self.goal_mocap = m.body_mocapid[m.body("goal").id]

    def reset(self, scene: ArmScene, rng: np.random.Generator) -> None:
        c = self.config
        start = rng.uniform(c.xy_low, c.xy_high)
        goal = rng.uniform(c.xy_low, c.xy_high)
        while np.linalg.norm(goal - start) < c.min_push_distance_m:  # symmetric acceptance keeps symmetry
            goal = rng.uniform(c.xy_low, c.xy_high)
        yaw = rng.uniform(-c.block_yaw_range_rad, c.block_yaw_range_rad)
        quat = np.array([np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)])
        scene.set_free_body_pose("block_joint", np.array([*start, c.block_half_size_m[2]]), quat)
        scene.data.mocap_pos[self.goal_mocap] = (*goal, 0.0)
        # Push with the closed fingertips: start closed (the policy may open them again).
        scene.data.qpos[scene.finger_qpos_adr] = 0.0
        scene.set_gripper(0.0)

    # --- state reads -----------------------------------------------------------------------------------
    def block_pos(self, scene: ArmScene) -> np.ndarray:
        return scene.body_pos(self.block_body)

    def goal(self, scene: ArmScene) -> np.ndarray:
        """Goal centre (m, xy)."""
        return scene.data.mocap_pos[self.goal_mocap, :2].copy()

    def distance(self, scene: ArmScene) -> float:
        """Block centre to goal centre (m, xy)."""
        return float(np.linalg.norm(self.goal(scene) - self.block_pos(scene)[:2]))

    # --- MDP terms -------------------------------------------------------------------------------------
    def privileged(self, scene: ArmScene) -> np.ndarray:
        block, goal = self.block_pos(scene), self.goal(scene)
        rot6d = matrix_to_rot6d(scene.body_mat(self.block_body))
        return np.concatenate([block, rot6d, goal, block - scene.tcp_pos(), goal - block[:2]])

    @classmethod
    def reward_term_names(cls) -> tuple[str, ...]:
        return ("reach", "push")

    def reward_terms(self, scene: ArmScene) -> dict[str, float]:
        reach = float(np.linalg.norm(self.block_pos(scene) - scene.tcp_pos()))
        return {
            "reach": 1.0 - float(np.tanh(10.0 * reach)),
            "push": 1.0 - float(np.tanh(5.0 * self.distance(scene))),
        }

    def is_success(self, scene: ArmScene) -> bool:
        return self.distance(scene) < self.config.goal_radius_m

    # --- batched twins ----------------------------------------------------------------------------------
    def _batched_block_goal(self, worlds: WorldReadings) -> tuple[torch.Tensor, torch.Tensor]:
        return worlds.sensor("block_pos"), worlds.mocap_pos[:, self.goal_mocap, :2]

    def batched_privileged(self, worlds: WorldReadings) -> torch.Tensor:
        block, mat = worlds.frame("block")
        goal = worlds.mocap_pos[:, self.goal_mocap, :2]
        return torch.cat([block, batched_rot6d(mat), goal, block - worlds.tcp_pos, goal - block[:, :2]], dim=-1)

    def batched_reward_terms(self, worlds: WorldReadings) -> dict[str, torch.Tensor]:
        block, goal = self._batched_block_goal(worlds)
        reach = torch.linalg.vector_norm(block - worlds.tcp_pos, dim=-1)
        distance = torch.linalg.vector_norm(goal - block[:, :2], dim=-1)
        return {"reach": 1.0 - torch.tanh(10.0 * reach), "push": 1.0 - torch.tanh(5.0 * distance)}

    def batched_success(self, worlds: WorldReadings) -> torch.Tensor:
        block, goal = self._batched_block_goal(worlds)
        return torch.linalg.vector_norm(goal - block[:, :2], dim=-1) < self.config.goal_radius_m


class PushExpert(Expert):
    """Closed-loop pusher: get behind the block (as seen from the goal) above it, go down, push through it.

    The pushing direction is recomputed every step from the live block position, so the pusher steers
    the block back onto the line to the goal as it drifts or turns; if the pusher ends up beside or in
    front of the block, it lifts and re-approaches. All decisions are mirror-equivariant in y.
    """

    task: Push
    SAFE_Z_M = 0.08  # TCP height for moving over the block
    PUSH_Z_M = 0.02  # TCP height while pushing (fingertips 5-35 mm above the table)
    BEHIND_M = 0.03  # extra distance behind the block's contact point at the start of a push

    def __init__(self, task: Push, noise_std: float = 0.0, seed: int = 0) -> None:
        super().__init__(task, noise_std, seed)
        self.reset()

    def reset(self) -> None:
        self.phase = "approach"

    def plan(self, scene: ArmScene) -> np.ndarray:
        env = self.task.config.env
        tcp = scene.tcp_pos()
        block, goal = self.task.block_pos(scene)[:2], self.task.goal(scene)
        to_goal = goal - block
        dist = float(np.linalg.norm(to_goal))
        u = to_goal / max(dist, 1e-6)
        contact = self._contact_distance(scene, u)
        behind = block - u * (contact + self.BEHIND_M)
        rel = block - tcp[:2]
        along = float(rel @ u)  # how far the block is ahead of the pusher along the push direction
        across = float(abs(rel[0] * u[1] - rel[1] * u[0]))
        rot = rotate_toward(scene.tcp_mat(), top_down_mat(0.0), env.max_step_rad)
        if self.phase == "approach":
            goal3 = np.array([*behind, self.SAFE_Z_M])
            if np.linalg.norm(behind - tcp[:2]) < 0.01:
                self.phase = "descend"
        elif self.phase == "descend":
            goal3 = np.array([*behind, self.PUSH_Z_M])
            if np.linalg.norm(behind - tcp[:2]) > 0.02:
                self.phase = "approach"
            elif tcp[2] < self.PUSH_Z_M + 0.01:
                self.phase = "push"
        else:  # push: aim the pusher at the contact point behind the block, then through it toward the goal
            advance = min(dist, 2.0 * env.max_step_m)
            goal3 = np.array([*(block - u * contact + u * advance), self.PUSH_Z_M])
            if along < 0.5 * contact or across > contact + 0.01:
                self.phase = "retreat"
        if self.phase == "retreat":
            goal3 = np.array([tcp[0], tcp[1], self.SAFE_Z_M])
            if tcp[2] > self.SAFE_Z_M - 0.02:
                self.phase = "approach"
        return expert_action(move_toward(tcp, goal3, env.max_step_m), -1.0, rot)

    def _contact_distance(self, scene: ArmScene, u: np.ndarray) -> float:
        """Block centre to pusher centre (m) when touching, pushing along ``u``: the block's support width."""
        mat = scene.body_mat(self.task.block_body)
        half = np.asarray(self.task.config.block_half_size_m)
        return float(np.sum(half[:2] * np.abs(u @ mat[:2, :2]))) + PUSHER_RADIUS_M
