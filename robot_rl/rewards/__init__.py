"""Learned rewards: a success classifier on camera images (HIL-SERL's reward classifier).

``robot-rl record-success-fail`` -> ``robot-rl train-classifier`` -> ``robot-rl train --reward-classifier``.
The ROS 2 reward node calls ``load_classifier`` once and ``classifier_reward`` per observation.
"""

from robot_rl.rewards.classifier import LoadedClassifier, SuccessClassifier, load_classifier
from robot_rl.rewards.config import ClassifierConfig
from robot_rl.rewards.state_check import StateCheck, parse_state_check
from robot_rl.rewards.wrapper import ClassifierOutput, ClassifierRewardWrapper, classifier_reward

__all__ = [
    "ClassifierConfig",
    "ClassifierOutput",
    "ClassifierRewardWrapper",
    "LoadedClassifier",
    "StateCheck",
    "SuccessClassifier",
    "classifier_reward",
    "load_classifier",
    "parse_state_check",
]
