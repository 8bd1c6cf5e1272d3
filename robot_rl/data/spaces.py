"""Observation-space descriptions and episode validation, shared by the replay, demo files, the actor/learner
link and the reward classifier (each stores or sends a space as JSON and checks episodes against it)."""

from __future__ import annotations

from collections.abc import Mapping

import gymnasium as gym
import numpy as np

from robot_rl.data.episode import Episode


def describe_space(space: gym.spaces.Dict) -> dict[str, dict[str, object]]:
    """``{key: {"shape": [...], "dtype": "uint8"}}``: a JSON-able description of a Dict of Boxes."""
    out: dict[str, dict[str, object]] = {}
    for key, sub in space.spaces.items():
        if not isinstance(sub, gym.spaces.Box):
            raise ValueError(f"observation space[{key!r}]: only Box sub-spaces are supported, got {sub}")
        out[key] = {"shape": list(sub.shape), "dtype": np.dtype(sub.dtype).name}
    return out


def space_from_description(desc: Mapping[str, Mapping[str, object]]) -> gym.spaces.Dict:
    """Inverse of ``describe_space`` (bounds are not kept: uint8 -> [0, 255], floats -> unbounded)."""
    spaces: dict[str, gym.spaces.Space] = {}
    for key, d in desc.items():
        dtype = np.dtype(str(d["dtype"]))
        shape = tuple(int(s) for s in d["shape"])  # type: ignore[attr-defined]
        low, high = (0, 255) if dtype == np.uint8 else (-np.inf, np.inf)
        spaces[key] = gym.spaces.Box(low, high, shape, dtype)
    return gym.spaces.Dict(spaces)


def check_episode(episode: Episode, space: gym.spaces.Dict, action_dim: int, source: str = "episode") -> None:
    """Raise ``ValueError`` naming ``source`` and the key when ``episode`` breaks ``space``/``action_dim``."""
    missing, extra = (
        set(space.spaces) - set(episode.observations),
        set(episode.observations) - set(space.spaces),
    )
    if missing or extra:
        raise ValueError(
            f"{source}: observation keys differ (missing {sorted(missing)}, extra {sorted(extra)})"
        )
    t = len(episode)
    for key, sub in space.spaces.items():
        value = episode.observations[key]
        if value.shape != (t + 1, *sub.shape) or value.dtype != sub.dtype:
            raise ValueError(
                f"{source}: observations[{key!r}] expected {sub.dtype}{[t + 1, *sub.shape]}, "
                f"got {value.dtype}{list(value.shape)}"
            )
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"{source}: observations[{key!r}] contains NaN or Inf")
    if episode.actions.shape != (t, action_dim):
        raise ValueError(f"{source}: actions expected shape {[t, action_dim]}, got {list(episode.actions.shape)}")
    if not np.all(np.isfinite(episode.actions)):
        raise ValueError(f"{source}: actions contain NaN or Inf")
    if not np.all(np.isfinite(episode.rewards)):
        raise ValueError(f"{source}: rewards contain NaN or Inf")
