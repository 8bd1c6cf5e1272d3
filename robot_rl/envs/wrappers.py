"""Wrappers that put any gymnasium env on the learner's observation convention (a flat dict)."""

from __future__ import annotations

from typing import Any, TypeVar

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import is_image_key

W = TypeVar("W", bound=gym.Wrapper)


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


class LearnerActionBox(gym.ActionWrapper):
    """The learner's actions in [-1, 1], mapped linearly onto the env's action box, or onto the narrower box
    ``scale`` declares: per dimension the half-range (env units) around the box's centre that [-1, 1] spans.

    An env whose box is far wider than any sensible step (metre-valued target displacements in [-1, 1]) is
    explored across its whole box by a fresh policy, which then knocks objects away before it learns anything;
    the narrower box makes the learner's whole range the sensible one, as robot_rl's own tasks are built."""

    def __init__(self, env: gym.Env, scale: np.ndarray | None = None, where: str = "action_scale") -> None:
        super().__init__(env)
        box = env.action_space
        if not isinstance(box, gym.spaces.Box) or not (np.all(np.isfinite(box.low)) and np.all(np.isfinite(box.high))):
            raise ValueError(f"{where}: the learner needs a bounded continuous Box action space, got {box}")
        centre, half = (box.high + box.low) / 2.0, (box.high - box.low) / 2.0
        if scale is not None:
            scale = np.asarray(scale, np.float64)
            if scale.size not in (1, box.low.size):
                raise ValueError(f"{where}: action_scale has {scale.size} values for {box.low.size} action "
                                 "dimensions (give one, or one per dimension)")
            scale = np.broadcast_to(scale.reshape(-1) if scale.size > 1 else scale, box.shape)
            too_wide = np.flatnonzero(scale > half + 1e-9 * np.abs(half))
            if too_wide.size:
                d = int(too_wide[0])
                raise ValueError(f"{where}: {float(scale.flat[d])} for action dimension {d} exceeds the env's "
                                 f"half-range {float(half.flat[d])} (its box is [{box.low.flat[d]}, "
                                 f"{box.high.flat[d]}])")
            half = scale
        self.scale = None if scale is None else tuple(float(s) for s in scale.reshape(-1))
        """The half-ranges the learner's [-1, 1] spans (None: the env's whole box)."""
        self.centre, self.half = centre.astype(np.float64), np.asarray(half, np.float64)
        self.action_space = gym.spaces.Box(-1.0, 1.0, box.shape, np.float32)

    def action(self, action: np.ndarray) -> np.ndarray:
        unit = np.clip(np.asarray(action, np.float64), -1.0, 1.0)
        inner = self.env.action_space
        return np.clip(self.centre + self.half * unit, inner.low, inner.high).astype(inner.dtype)


def find_wrapper(env: gym.Env, kind: type[W]) -> W | None:
    """The outermost wrapper of type ``kind`` in ``env``'s wrapper chain, if any."""
    while isinstance(env, gym.Wrapper):
        if isinstance(env, kind):
            return env
        env = env.env
    return None


def learner_action_box(env: gym.Env) -> LearnerActionBox | None:
    """The ``LearnerActionBox`` in ``env``'s wrapper chain (None: a robot_rl task's env has none)."""
    return find_wrapper(env, LearnerActionBox)


def action_scale_of(env: gym.Env) -> tuple[float, ...] | None:
    """The half-ranges ``env``'s ``LearnerActionBox`` declares (None: none, or the env's whole box)."""
    box = learner_action_box(env)
    return None if box is None else box.scale


def narrow_box_advice(actions: np.ndarray, box: LearnerActionBox | None) -> str | None:
    """Advice when demos (``actions``: [N, A] in the learner's [-1, 1]) move at most a tenth of the whole action
    box in some dimension they use: a fresh policy explores all of it, and the narrower box fitting the demos is
    suggested in env units (twice their largest action per dimension)."""
    if box is None or box.scale is not None or len(actions) == 0:
        return None
    largest = np.abs(actions).max(axis=0)
    small = np.flatnonzero((largest > 0) & (largest < 0.1))
    if small.size == 0:
        return None
    suggested = [round(float(s), 6) for s in np.minimum(2 * largest * box.half.reshape(-1), box.half.reshape(-1))]
    return (f"the demos move at most {largest[small].max():.1%} of the action range in dimension(s) "
            f"{small.tolist()}: a fresh policy explores the whole range, on a manipulation env knocking objects "
            "away before it learns. If the env's action box is wider than any sensible step, narrow it with "
            f"--action-scale '{suggested}' (env units: twice the demos' largest actions) and record the demos "
            "again with controllers that act in the new [-1, 1]")
