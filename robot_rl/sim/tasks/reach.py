"""``reach``: move the TCP to a randomly placed goal (shown as a green sphere). Fast; used by tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from robot_rl.data.symmetry import SymmetryGroup
from robot_rl.envs.contract import Field
from robot_rl.sim.config import ArmEnvConfig
from robot_rl.sim.readings import WorldReadings
from robot_rl.sim.scene import ArmScene
from robot_rl.sim.tasks.base import TABLETOP_SYMMETRY, Expert, Task, TaskConfig, expert_action, move_toward


@dataclass(frozen=True)
class ReachConfig(TaskConfig):
    env: ArmEnvConfig = field(default_factory=lambda: ArmEnvConfig(max_episode_steps=40))
    reward_weights: dict[str, float] = field(default_factory=lambda: {"distance": 0.1})
    symmetry: SymmetryGroup = TABLETOP_SYMMETRY
    goal_low: tuple[float, float, float] = (0.35, -0.2, 0.08)
    """Lower corner (m) of the box goals are sampled in."""
    goal_high: tuple[float, float, float] = (0.6, 0.2, 0.35)
    success_radius_m: float = 0.03

    def __post_init__(self) -> None:
        if any(lo > hi for lo, hi in zip(self.goal_low, self.goal_high)):
            raise ValueError(
                f"ReachConfig.goal_low must be <= goal_high, got {self.goal_low} / {self.goal_high}"
            )
        if self.success_radius_m <= 0:
            raise ValueError(f"ReachConfig.success_radius_m must be > 0, got {self.success_radius_m}")


class Reach(Task):
    name = "reach"
    privileged_layout = (Field("goal_pos", 3, "m, base frame", "point"),
                         Field("goal_minus_tcp", 3, "m, base frame", "vector"))
    config: ReachConfig

    def scene_xml(self) -> tuple[str, str]:
        body = (
            '<body name="goal" mocap="true" pos="0.5 0 0.2">'
            '<geom type="sphere" size="0.02" rgba="0.1 0.9 0.2 0.8" contype="0" conaffinity="0"/></body>'
        )
        return body, ""

    def bind(self, scene: ArmScene) -> None:
        self.goal_mocap = scene.model.body_mocapid[scene.model.body("goal").id]

    def reset(self, scene: ArmScene, rng: np.random.Generator) -> None:
        scene.data.mocap_pos[self.goal_mocap] = rng.uniform(self.config.goal_low, self.config.goal_high)

    def goal(self, scene: ArmScene) -> np.ndarray:
        return scene.data.mocap_pos[self.goal_mocap].copy()

    def privileged(self, scene: ArmScene) -> np.ndarray:
        goal = self.goal(scene)
        return np.concatenate([goal, goal - scene.tcp_pos()])

    @classmethod
    def reward_term_names(cls) -> tuple[str, ...]:
        return ("distance",)

    def reward_terms(self, scene: ArmScene) -> dict[str, float]:
        return {"distance": 1.0 - float(np.tanh(5.0 * np.linalg.norm(self.goal(scene) - scene.tcp_pos())))}

    def is_success(self, scene: ArmScene) -> bool:
        return bool(np.linalg.norm(self.goal(scene) - scene.tcp_pos()) < self.config.success_radius_m)

    # --- batched twins ----------------------------------------------------------------------------------
    def _goal_distance(self, worlds: WorldReadings) -> tuple[torch.Tensor, torch.Tensor]:
        goal = worlds.mocap_pos[:, self.goal_mocap]
        return goal, torch.linalg.vector_norm(goal - worlds.tcp_pos, dim=-1)

    def batched_privileged(self, worlds: WorldReadings) -> torch.Tensor:
        goal = worlds.mocap_pos[:, self.goal_mocap]
        return torch.cat([goal, goal - worlds.tcp_pos], dim=-1)

    def batched_reward_terms(self, worlds: WorldReadings) -> dict[str, torch.Tensor]:
        return {"distance": 1.0 - torch.tanh(5.0 * self._goal_distance(worlds)[1])}

    def batched_success(self, worlds: WorldReadings) -> torch.Tensor:
        return self._goal_distance(worlds)[1] < self.config.success_radius_m


class ReachExpert(Expert):
    task: Reach

    def plan(self, scene: ArmScene) -> np.ndarray:
        step = self.task.config.env.max_step_m
        return expert_action(move_toward(scene.tcp_pos(), self.task.goal(scene), step), gripper=1.0)
