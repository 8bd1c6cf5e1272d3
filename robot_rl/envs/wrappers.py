"""Wrappers that put any gymnasium env on the learner's observation convention (a flat dict)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import is_image_key


class DictObservation(gym.ObservationWrapper):
    """Box observation -> ``{"state": obs}``; nested Dict -> flat ``{"a/b": ...}``; non-image keys float32.

    Our own envs already emit this shape and pass through unchanged. Keys under ``images/`` must be uint8
    HxWx3; everything else is treated as a vector and flattened.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.observation_space = gym.spaces.Dict(_flat_spaces(env.observation_space))

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        flat = _flat_values(observation, self.env.observation_space)
        return {k: flat[k] for k in self.observation_space.spaces}


def _flat_spaces(space: gym.spaces.Space, prefix: str = "") -> dict[str, gym.spaces.Box]:
    if isinstance(space, gym.spaces.Box):
        key = prefix or "state"
        if is_image_key(key):
            if space.dtype != np.uint8 or len(space.shape) != 3 or space.shape[2] != 3:
                raise ValueError(f"observation {key!r}: image keys must be uint8 HxWx3, got {space}")
            return {key: space}
        size = int(np.prod(space.shape))
        low = np.broadcast_to(space.low, space.shape).reshape(size).astype(np.float32)
        high = np.broadcast_to(space.high, space.shape).reshape(size).astype(np.float32)
        return {key: gym.spaces.Box(low, high, (size,), np.float32)}
    if isinstance(space, gym.spaces.Dict):
        out: dict[str, gym.spaces.Box] = {}
        for name, sub in space.spaces.items():
            out.update(_flat_spaces(sub, f"{prefix}/{name}" if prefix else name))
        return out
    raise ValueError(f"Unsupported observation space {space!r}: use Box or Dict of Box")


def _flat_values(obs: Any, space: gym.spaces.Space, prefix: str = "") -> dict[str, np.ndarray]:
    if isinstance(space, gym.spaces.Dict):
        out: dict[str, np.ndarray] = {}
        for name, sub in space.spaces.items():
            out.update(_flat_values(obs[name], sub, f"{prefix}/{name}" if prefix else name))
        return out
    key = prefix or "state"
    value = np.asarray(obs)
    return {key: value if is_image_key(key) else value.reshape(-1).astype(np.float32)}
