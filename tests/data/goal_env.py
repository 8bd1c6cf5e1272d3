"""A tiny goal-conditioned env in gymnasium-robotics' shape (``observation`` / ``achieved_goal`` /
``desired_goal``, vectorised ``compute_reward``), for hindsight relabelling tests.

A point in the unit square moves by ``0.1 * action`` per step towards a random goal; the reward is sparse
(0 within ``radius`` of the goal, else -1) and episodes run to their time limit, as Fetch's do. A random
policy rarely reaches a goal, so it learns little without relabelling.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np


class PointGoalEnv(gym.Env):
    metadata: ClassVar[dict] = {"render_modes": [], "render_fps": 10}

    def __init__(self, horizon: int = 20, radius: float = 0.1, render_mode: str | None = None) -> None:
        box = lambda: gym.spaces.Box(-1.0, 1.0, (2,), np.float32)  # noqa: E731
        self.observation_space = gym.spaces.Dict(
            {"observation": box(), "achieved_goal": box(), "desired_goal": box()})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self.horizon, self.radius, self.render_mode = horizon, radius, render_mode

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray, info) -> np.ndarray:
        far = np.linalg.norm(np.asarray(achieved_goal) - np.asarray(desired_goal), axis=-1) > self.radius
        return -far.astype(np.float32)

    def _obs(self) -> dict[str, np.ndarray]:
        return {"observation": self.pos.copy(), "achieved_goal": self.pos.copy(), "desired_goal": self.goal.copy()}

    def reset(self, *, seed: int | None = None, options=None):
        super().reset(seed=seed)
        self.pos = self.np_random.uniform(-0.8, 0.8, 2).astype(np.float32)
        self.goal = self.np_random.uniform(-0.8, 0.8, 2).astype(np.float32)
        self.t = 0
        return self._obs(), {}

    def step(self, action):
        self.pos = np.clip(self.pos + 0.1 * np.clip(action, -1, 1), -1, 1).astype(np.float32)
        self.t += 1
        reward = float(self.compute_reward(self.pos, self.goal, {}))
        return self._obs(), reward, False, self.t >= self.horizon, {"is_success": reward == 0.0}


def make_point_goal(**kwargs) -> gym.Env:
    return PointGoalEnv(**kwargs)
