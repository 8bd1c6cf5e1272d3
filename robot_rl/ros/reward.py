"""The reward node's logic without ROS: a trained success classifier over the latest camera images (and
state checks) -> ``rl/reward`` ``[reward, success, probability]``, the message ``RosArmEnv`` reads.

The inputs it needs come from the classifier itself: every ``images/<cam>`` key of its training space is read
from ``rl/images/<cam>`` (the camera bridges' output), and ``state`` (or any state check) from
``rl/robot_state``. An input older than ``max_age_s`` means no reward at all (the env then waits and, past its
timeout, truncates the episode): a stale image never becomes a success.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_rl.envs.contract import IMAGE_PREFIX
from robot_rl.rewards.classifier import load_classifier
from robot_rl.rewards.state_check import parse_state_check
from robot_rl.rewards.wrapper import ClassifierOutput, classifier_reward

STATE_KEY = "state"


@dataclass(frozen=True)
class RewardNodeConfig:
    classifier: str = ""
    """Classifier file written by ``robot-rl train-classifier`` (required)."""
    threshold: float = 0.0
    """Success threshold on the probability; 0 keeps the classifier's own (chosen on validation data)."""
    state_checks: tuple[str, ...] = ()
    """Conditions ANDed with the classifier, each ``field:index:low:high`` over the contract state, e.g.
    ``tcp_pos:2:0.06:inf`` (gripper above 6 cm), ``gripper_opening:0:0.01:inf`` (something held)."""
    rate_hz: float = 20.0
    """Evaluation rate (Hz): at least twice the arm's control rate, so each step sees a fresh reward."""
    max_age_s: float = 0.5
    """Inputs older than this (arrival time) produce no reward message."""

    def __post_init__(self) -> None:
        if not self.classifier:
            raise ValueError("RewardNodeConfig.classifier must name a file from `robot-rl train-classifier`")
        if not 0.0 <= self.threshold < 1.0:
            raise ValueError(f"RewardNodeConfig.threshold must be in [0, 1), got {self.threshold}")
        if not (self.rate_hz > 0 and self.max_age_s > 0):
            raise ValueError(
                f"RewardNodeConfig.rate_hz and max_age_s must be > 0, got {self.rate_hz}, {self.max_age_s}"
            )
        for text in self.state_checks:
            parse_state_check(text)


class RewardCore:
    """Latest inputs by key (``images/<cam>``, ``state``) with their arrival times -> ``ClassifierOutput``."""

    def __init__(self, config: RewardNodeConfig) -> None:
        self.config = config
        self.classifier = load_classifier(config.classifier)
        self.checks = tuple(parse_state_check(t) for t in config.state_checks)
        keys = list(self.classifier.model.keys)
        for key in keys:
            if not (key.startswith(IMAGE_PREFIX) or key == STATE_KEY):
                raise ValueError(f"{config.classifier}: input {key!r} has no ROS topic (only images/<cam>, state)")
        if self.checks and STATE_KEY not in keys:
            keys.append(STATE_KEY)
        self.keys = tuple(keys)
        self._latest: dict[str, tuple[np.ndarray, float]] = {}
        self.published = self.stale = 0

    @property
    def cameras(self) -> list[str]:
        return [k[len(IMAGE_PREFIX) :] for k in self.keys if k.startswith(IMAGE_PREFIX)]

    @property
    def needs_state(self) -> bool:
        return STATE_KEY in self.keys

    def put(self, key: str, value: np.ndarray, arrival_s: float) -> None:
        self._latest[key] = (value, arrival_s)

    def compute(self, now_s: float) -> ClassifierOutput | None:
        """The reward of the latest inputs, or None while one is missing or older than ``max_age_s``."""
        obs = {}
        for key in self.keys:
            entry = self._latest.get(key)
            if entry is None or now_s - entry[1] > self.config.max_age_s:
                self.stale += 1
                return None
            obs[key] = entry[0]
        self.published += 1
        return classifier_reward(self.classifier, obs, self.config.threshold or None, self.checks)
