"""Sparse reward from the success classifier: a pure function (for the ROS 2 reward node) and an env wrapper.

``classifier_reward(classifier, obs, threshold, state_checks)`` -> ``ClassifierOutput(probability, success,
reward)``: success = probability >= threshold AND every state check passes (HIL-SERL ANDs its classifier
with proprioceptive checks, e.g. ``sigma > 0.85 and z > 0.04`` for RAM insertion).

``ClassifierRewardWrapper`` replaces the env's reward by that success (1 / 0) and ends the episode on it.
It leaves ``info["is_success"]`` alone (in simulation that is the true success used by evaluation) and adds
``classifier_probability`` / ``classifier_success``. For a state-observation sim env it can render the
classifier's cameras itself (``SimCameraSource``), so a state policy can learn from an image classifier.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import IMAGE_PREFIX, STATE_LAYOUT
from robot_rl.rewards.classifier import LoadedClassifier, load_classifier


@dataclass(frozen=True)
class StateCheck:
    """``low <= obs[key][STATE_LAYOUT field][index] <= high`` (e.g. tcp_pos[2] >= 0.06 m: lifted)."""

    field: str
    index: int = 0
    low: float = -np.inf
    high: float = np.inf
    key: str = "state"

    def __post_init__(self) -> None:
        sl = STATE_LAYOUT.slice(self.field)  # raises naming the known fields
        if not 0 <= self.index < sl.stop - sl.start:
            raise ValueError(f"StateCheck({self.field}).index must be in [0, {sl.stop - sl.start}), got {self.index}")
        if self.low > self.high:
            raise ValueError(f"StateCheck({self.field}).low must be <= high, got {self.low} > {self.high}")

    def passes(self, obs: Mapping[str, np.ndarray]) -> bool:
        value = float(np.asarray(obs[self.key])[STATE_LAYOUT.slice(self.field).start + self.index])
        return self.low <= value <= self.high


@dataclass(frozen=True)
class ClassifierOutput:
    probability: float
    success: bool
    reward: float


def classifier_reward(
    classifier: LoadedClassifier,
    obs: Mapping[str, np.ndarray],
    threshold: float | None = None,
    state_checks: Sequence[StateCheck] = (),
) -> ClassifierOutput:
    """One observation (``images/<cam>`` uint8 [H, W, 3], plus ``state`` for the checks) -> reward."""
    probability = classifier.probability(obs)
    thr = classifier.threshold if threshold is None else threshold
    success = probability >= thr and all(c.passes(obs) for c in state_checks)
    return ClassifierOutput(probability, bool(success), float(success))


class SimCameraSource:
    """Renders missing camera images from a simulated env's scene (for state-observation training).

    shapes: ``{"images/<camera>": (height, width)}``.
    """

    def __init__(self, env: gym.Env, shapes: Mapping[str, tuple[int, int]]) -> None:
        from robot_rl.sim.rendering import CameraRenderer

        self.sim = env.unwrapped
        self.shapes = dict(shapes)
        self._renderers = {hw: CameraRenderer(self.sim.scene.model, *hw) for hw in set(self.shapes.values())}

    def __call__(self, obs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        out = dict(obs)
        for key, hw in self.shapes.items():
            if key not in out:
                out[key] = self._renderers[hw].render(key[len(IMAGE_PREFIX) :], self.sim.scene.data)
        return out


class ClassifierRewardWrapper(gym.Wrapper):
    """Reward = classifier success (0/1, see ``classifier_reward``); terminate on it when ``terminate``."""

    def __init__(
        self,
        env: gym.Env,
        classifier: LoadedClassifier,
        threshold: float | None = None,
        state_checks: Sequence[StateCheck] = (),
        terminate: bool = True,
        image_source: Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]] | None = None,
    ) -> None:
        super().__init__(env)
        self.classifier = classifier
        self.threshold = threshold
        self.state_checks = tuple(state_checks)
        self.terminate = terminate
        space = classifier.model.space.spaces
        missing = {k: tuple(space[k].shape[:2]) for k in space if k not in env.observation_space.spaces}
        if missing and image_source is None:
            image_source = SimCameraSource(env, missing)  # type: ignore[arg-type]
        self.image_source = image_source

    def step(self, action: np.ndarray):
        obs, _, env_terminated, truncated, info = self.env.step(action)
        full = self.image_source(obs) if self.image_source is not None else obs
        out = classifier_reward(self.classifier, full, self.threshold, self.state_checks)
        info = {**info, "classifier_probability": out.probability, "classifier_success": out.success}
        # Only the classifier decides terminal states: an env's own success termination (simulation) becomes a
        # truncation, so the task's true success never reaches the learner through the episode end.
        terminated = self.terminate and out.success
        return obs, out.reward, terminated, bool(truncated or env_terminated) and not terminated, info


def wrap_with_classifier(
    env: gym.Env, path: str | os.PathLike[str], threshold: float | None = None, state_checks: Sequence[StateCheck] = ()
) -> ClassifierRewardWrapper:
    return ClassifierRewardWrapper(env, load_classifier(path), threshold, state_checks)
