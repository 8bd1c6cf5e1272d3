"""Smoke runs: record-success-fail (scripted, unattended) -> train-classifier -> train --reward-classifier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("robot_rl.sim")  # sets MUJOCO_GL before mujoco loads

from robot_rl.cli import main
from robot_rl.rewards.dataset import load_frames
from robot_rl.training.env_factory import EnvConfig

TINY_TRAIN = ["--agent.hidden-dims", "32", "32", "--agent.num-critics", "2", "--agent.utd-ratio", "1",
              "--batch-size", "32", "--learning-starts", "50", "--eval-episodes", "1", "--torch-threads", "1",
              "--no-progress"]


def test_record_train_and_use_a_classifier(tmp_path: Path, capsys) -> None:
    data = tmp_path / "sf"
    assert main(["record-success-fail", "--task", "pick_cube", "--episodes", "4", "--noise", "0", "--out",
                 str(data)]) == 0
    frames = load_frames([data])
    assert len(frames) == 4 * 80 and 0 < frames.labels.sum() < len(frames)  # held up after success: positives
    assert frames.observations["images/front"].shape[1:] == (64, 64, 3)
    assert "success" in capsys.readouterr().out

    clf = tmp_path / "clf" / "success.pt"
    assert main(["train-classifier", "--data", str(data), "--out", str(clf), "--classifier.steps", "10",
                 "--classifier.batch-size", "16", "--classifier.cnn-channels", "8", "8", "8", "8"]) == 0
    report = json.loads(clf.with_suffix(".json").read_text())
    assert {"threshold", "test_accuracy", "test_confusion", "frames"} <= set(report)
    assert "held-out accuracy" in capsys.readouterr().out

    run = tmp_path / "run"
    # a state policy, rewarded by the image classifier (cameras rendered for it from the sim scene) AND a check
    assert main(["train", "--task", "pick_cube", "--total-env-steps", "90", "--eval-every", "90",
                 "--scripted-demos", "1", "--reward-classifier", str(clf), "--classifier-state-checks",
                 "tcp_pos:2:0.06:inf", "--run-dir", str(run), *TINY_TRAIN]) == 0
    assert (run / "checkpoints" / "latest.pt").exists()
    assert json.loads((run / "config.json").read_text())["env"]["classifier_state_checks"] == ["tcp_pos:2:0.06:inf"]

    # that policy drives a recording (hard negatives): same frames as the expert's, plus the state env's keys
    rollouts = tmp_path / "sf_policy"
    assert main(["record-success-fail", "--task", "pick_cube", "--episodes", "1", "--policy", str(run),
                 "--out", str(rollouts)]) == 0
    mixed = load_frames([data, rollouts])
    assert len(mixed) == 5 * 80 and set(mixed.observations) == {"images/front", "images/wrist", "state"}
    assert "privileged" in load_frames([rollouts]).observations

    # with a learner and an actor process: the actor computes the classifier's reward (the handshake refuses an
    # actor whose classifier digest differs from the learner's, so finishing means the actor was given it)
    run2 = tmp_path / "run_actors"
    assert main(["train", "--actors", "1", "--task", "pick_cube", "--total-env-steps", "120", "--eval-every", "120",
                 "--scripted-demos", "1", "--reward-classifier", str(clf), "--run-dir", str(run2), *TINY_TRAIN]) == 0
    assert (run2 / "checkpoints" / "latest.pt").exists()


def test_bad_arguments_fail_with_a_message(tmp_path: Path, capsys) -> None:
    assert main(["record-success-fail", "--task", "Pendulum-v1", "--out", str(tmp_path / "x")]) == 2
    assert "not a robot_rl task" in capsys.readouterr().err
    assert main(["train-classifier", "--data", str(tmp_path / "missing")]) == 2
    capsys.readouterr()
    clf = tmp_path / "clf.pt"
    clf.write_bytes(b"")  # TrainConfig checks the check texts before anything loads the file
    for argv, message in ((["--reward-classifier", str(clf), "--classifier-state-checks", "tcp_pos:2:low:1"],
                           "'tcp_pos:2:low:1': index must be an int, low/high numbers"),
                          (["--classifier-state-checks", "tcp_pos:2:0.06:inf"], "need a --reward-classifier")):
        assert main(["train", *argv]) == 2  # refused while parsing, before anything runs
        assert message in capsys.readouterr().err


def test_only_the_classifier_ends_training_episodes(tmp_path: Path) -> None:
    """Under a classifier the sim task runs on after its own success (as a real arm does); evaluation does not."""
    from robot_rl.training.env_factory import make_env_from_config

    clf = tmp_path / "clf.pt"
    clf.write_bytes(b"")
    with_clf, plain = EnvConfig(task="pick_cube", reward_classifier=clf), EnvConfig(task="pick_cube")
    ends = {(name, training): make_env_from_config(cfg, training=training).unwrapped.cfg.terminate_on_success
            for name, cfg in (("classifier", with_clf), ("plain", plain)) for training in (True, False)}
    assert ends == {("classifier", True): False, ("classifier", False): True, ("plain", True): True,
                    ("plain", False): True}
