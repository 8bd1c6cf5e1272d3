"""Reward classifier on a tiny generated image set: train / evaluate / threshold / save / load / reward."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from robot_rl.envs.contract import STATE_DIM, STATE_LAYOUT
from robot_rl.rewards import (
    ClassifierConfig,
    ClassifierRewardWrapper,
    StateCheck,
    classifier_reward,
    load_classifier,
    testing,
)
from robot_rl.rewards.classifier import save_classifier
from robot_rl.rewards.train import balanced_accuracy, choose_threshold, confusion, split_by_episode, train_classifier

SIZE = testing.SIZE
TINY = testing.TINY_CONFIG
image = testing.synthetic_image
generated = testing.synthetic_frames


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    torch.set_num_threads(1)


def test_split_is_by_episode_and_threshold_maths() -> None:
    frames = generated()
    train, val, test = split_by_episode(frames, 0.2, 0.2, seed=0)
    groups = [set(frames.episode[i].tolist()) for i in (train, val, test)]
    assert not (groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2])
    assert len(train) + len(val) + len(test) == len(frames) and len(val) and len(test)
    probs = np.array([0.1, 0.2, 0.35, 0.4, 0.9])
    labels = np.array([False, False, True, True, True])
    assert 0.2 < choose_threshold(probs, labels) < 0.35
    # overlapping classes: balanced accuracy accepts a false positive, a false-positive bound does not
    p_mixed = np.array([0.1, 0.3, 0.6, 0.5, 0.7, 0.9])
    l_mixed = np.array([False, False, False, True, True, True])
    assert 0.3 < choose_threshold(p_mixed, l_mixed) <= 0.5
    assert 0.6 < choose_threshold(p_mixed, l_mixed, max_false_positive_rate=0.0) < 0.7
    assert 0.3 < choose_threshold(p_mixed, l_mixed, max_false_positive_rate=0.34) < 0.5
    pred = probs >= 0.3
    assert confusion(pred, labels) == [[2, 0], [0, 3]] and balanced_accuracy(pred, labels) == 1.0
    with pytest.raises(ValueError, match="too few episodes"):
        split_by_episode(generated(episodes=2), 0.2, 0.2, seed=0)


def test_train_evaluate_save_load_and_reward(tmp_path: Path) -> None:
    frames = generated()
    model, report = train_classifier(frames, TINY)
    assert report.test_accuracy >= 0.9, report.summary()
    assert sum(map(sum, report.test_confusion)) == report.frames["test"][0]
    path = tmp_path / "clf.pt"
    save_classifier(path, model, report.threshold, report.as_dict())
    loaded = load_classifier(path)
    assert loaded.threshold == pytest.approx(report.threshold) and loaded.report["steps"] == 80
    obs = {"images/front": frames.observations["images/front"][:20]}
    np.testing.assert_allclose(loaded.model.predict_proba(obs), model.predict_proba(obs), atol=1e-6)

    rng = np.random.default_rng(5)
    state = np.zeros(STATE_DIM, np.float32)
    state[STATE_LAYOUT.slice("tcp_pos")] = [0.5, 0.0, 0.1]
    good = classifier_reward(loaded, {"images/front": image(True, rng), "state": state})
    bad = classifier_reward(loaded, {"images/front": image(False, rng), "state": state})
    assert good.success and good.reward == 1.0 and bad.reward == 0.0 and good.probability > bad.probability
    low = StateCheck("tcp_pos", index=2, low=0.2)  # ANDed with a state check: not lifted -> no reward
    assert not classifier_reward(loaded, {"images/front": image(True, rng), "state": state}, state_checks=[low]).success


class ImageEnv(gym.Env):
    """Shows a success image from step 3 on; the env itself terminates at step 4 (its own success)."""

    def __init__(self) -> None:
        self.observation_space = gym.spaces.Dict({"images/front": gym.spaces.Box(0, 255, (SIZE, SIZE, 3), np.uint8)})
        self.action_space = gym.spaces.Box(-1, 1, (7,), np.float32)
        self.rng = np.random.default_rng(0)

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return {"images/front": image(False, self.rng)}, {"is_success": False}

    def step(self, action):
        self.t += 1
        return {"images/front": image(self.t >= 3, self.rng)}, 7.0, self.t >= 4, False, {"is_success": self.t >= 4}


def test_wrapper_rewards_from_the_classifier_only(tmp_path: Path) -> None:
    model, report = train_classifier(generated(), TINY)
    save_classifier(tmp_path / "c.pt", model, report.threshold, report.as_dict())
    env = ClassifierRewardWrapper(ImageEnv(), load_classifier(tmp_path / "c.pt"))
    env.reset()
    out = [env.step(np.zeros(7, np.float32)) for _ in range(3)]
    rewards = [o[1] for o in out]
    assert rewards == [0.0, 0.0, 1.0] and out[2][2] and out[2][4]["classifier_success"]
    assert not out[0][2] and out[0][4]["classifier_probability"] < 0.5
    # without the classifier's success, the env's own termination becomes a truncation
    env2 = ClassifierRewardWrapper(ImageEnv(), load_classifier(tmp_path / "c.pt"), threshold=0.9999)
    env2.reset()
    last = [env2.step(np.zeros(7, np.float32)) for _ in range(4)][-1]
    assert last[1] == 0.0 and not last[2] and last[3]


def test_config_and_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="val_fraction"):
        ClassifierConfig(val_fraction=0.6)
    with pytest.raises(ValueError, match="cnn_strides"):
        ClassifierConfig(cnn_strides=(2,))
    with pytest.raises(KeyError, match="tcp_quat"):
        StateCheck("tcp_quat")
    (tmp_path / "x.pt").write_bytes(b"nope")
    with pytest.raises(ValueError, match="reward classifier"):
        load_classifier(tmp_path / "x.pt")
    frames = generated()
    with pytest.raises(ValueError, match="image_keys"):
        train_classifier(frames, ClassifierConfig(image_keys=("images/wrist",)))
