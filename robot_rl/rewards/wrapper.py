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

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import IMAGE_PREFIX, CameraSpec
from robot_rl.rewards.classifier import LoadedClassifier, load_classifier
from robot_rl.rewards.state_check import StateCheck, parse_state_check


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


class SimCameraObservation(gym.ObservationWrapper):
    """Adds rendered ``images/<camera>`` (uint8 [size, size, 3]) to a simulated env's observations, e.g. to
    record classifier frames while a state policy drives."""

    def __init__(self, env: gym.Env, cameras: Sequence[str], image_size: int) -> None:
        super().__init__(env)
        shapes = {f"{IMAGE_PREFIX}{c}": (image_size, image_size) for c in cameras}
        self.source = SimCameraSource(env, shapes)
        base = env.unwrapped.contract  # type: ignore[attr-defined]
        self.contract = dataclasses.replace(base, cameras=tuple(CameraSpec(c, image_size, image_size) for c in cameras))
        spaces = dict(env.observation_space.spaces)  # type: ignore[attr-defined]
        for key in shapes:
            spaces[key] = gym.spaces.Box(0, 255, (image_size, image_size, 3), np.uint8)
        self.observation_space = gym.spaces.Dict(spaces)

    def observation(self, observation: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        return self.source(observation)


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
        # Only the classifier decides terminal states: an env's own success termination becomes a truncation, so
        # the task's true success never reaches the learner through the episode end. (``robot-rl train`` turns a
        # sim task's success termination off under a classifier; a gymnasium env may still end this way.)
        terminated = self.terminate and out.success
        return obs, out.reward, terminated, bool(truncated or env_terminated) and not terminated, info


def wrap_with_classifier(
    env: gym.Env, path: str | os.PathLike[str], threshold: float | None = None, state_checks: Sequence[str] = ()
) -> ClassifierRewardWrapper:
    """``state_checks``: ``field:index:low:high`` texts (``parse_state_check``), ANDed with the classifier."""
    checks = tuple(parse_state_check(t) for t in state_checks)
    return ClassifierRewardWrapper(env, load_classifier(path), threshold, checks)
