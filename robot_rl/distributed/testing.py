"""``CounterEnv``: a tiny deterministic env for link tests and transport benchmarks (no MuJoCo).

Every observation says where it comes from, so a test can check content after a crash: ``state`` is
``[episode_seed, t, 0, 0]``, and every pixel of camera number c at step t is
``(episode_seed * 31 + t + c) % 256``
(``pattern="counter"``); or a smooth moving gradient with sensor-like noise (``pattern="scene"``, realistic
compression ratios); or uniform noise (``pattern="noise"``, incompressible: the worst case).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import ACTION_DIM, CameraSpec, ContractSpec


class CounterEnv(gym.Env):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": [], "render_fps": 10}

    def __init__(
        self,
        image_size: int = 32,
        cameras: tuple[str, ...] = ("front", "wrist"),
        episode_len: int = 20,
        pattern: str = "counter",
        render_mode: str | None = None,
    ) -> None:
        self.contract = ContractSpec(cameras=tuple(CameraSpec(c, image_size, image_size) for c in cameras))
        spaces = {"state": gym.spaces.Box(-np.inf, np.inf, (4,), np.float32)}
        spaces.update(
            {f"images/{c}": gym.spaces.Box(0, 255, (image_size, image_size, 3), np.uint8) for c in cameras}
        )
        self.observation_space = gym.spaces.Dict(spaces)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)
        self.cameras, self.size, self.episode_len, self.pattern = cameras, image_size, episode_len, pattern
        self._seed, self._t = 0, 0
        self._rng = np.random.default_rng(0)
        yy, xx = np.mgrid[0:image_size, 0:image_size]
        self._grad = (xx + yy).astype(np.float32) / (2 * image_size)

    def _obs(self) -> dict[str, np.ndarray]:
        obs = {"state": np.array([self._seed, self._t, 0, 0], np.float32)}
        for c, cam in enumerate(self.cameras):
            shape = (self.size, self.size, 3)
            if self.pattern == "noise":
                img = self._rng.integers(0, 256, shape, dtype=np.uint8)
            elif self.pattern == "scene":
                base = 80 + 120 * np.sin(self._grad * 6 + 0.1 * self._t + c)
                noise = self._rng.normal(0, 2.0, shape)
                img = np.clip(base[..., None] + np.array([0, 20, 40]) + noise, 0, 255).astype(np.uint8)
            else:
                img = np.full(shape, (self._seed * 31 + self._t + c) % 256, np.uint8)
            obs[f"images/{cam}"] = img
        return obs

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self._seed = int(seed or 0) % 1_000_000
        self._t = 0
        self._rng = np.random.default_rng(self._seed)
        return self._obs(), {}

    def step(self, action: np.ndarray):
        self._t += 1
        done = self._t >= self.episode_len
        terminated = done and self._seed % 2 == 0  # even episodes end in a terminal state, odd ones time out
        truncated = done and not terminated
        info = {"intervention": self._t % 5 == 0, "is_success": terminated, "safety_clipped": False}
        if info["intervention"]:
            info["intervention_action"] = np.zeros(ACTION_DIM, np.float32)
        return self._obs(), float(terminated), terminated, truncated, info


def counter_env(**kwargs: Any) -> CounterEnv:
    """``--env-factory robot_rl.distributed.testing:counter_env --env-kwargs '{"image_size": 32}'``."""
    return CounterEnv(**kwargs)
