"""Smoke runs: ``robot-rl train --teleop scripted`` (HIL and RLIF) and ``record-demos --teleop scripted``."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("robot_rl.sim")  # sets MUJOCO_GL before mujoco loads

from robot_rl.cli import main
from robot_rl.data.demos import load_demos
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.hil import teleop_device
from robot_rl.training.loop import Trainer, load_run_config

TINY = ["--agent.hidden-dims", "32", "32", "--agent.num-critics", "2", "--agent.utd-ratio", "1", "--batch-size", "32",
        "--learning-starts", "50", "--eval-episodes", "1", "--torch-threads", "1", "--no-progress"]


def episode_metric(run: Path, key: str) -> list[float]:
    with (run / "metrics.csv").open() as f:
        return [float(r["value"]) for r in csv.DictReader(f) if r["kind"] == "episode" and r["key"] == key]


def test_train_with_scripted_corrector(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    args = ["train", "--task", "pick_cube", "--total-env-steps", "170", "--eval-every", "170", "--scripted-demos",
            "1", "--teleop", "scripted", "--corrector.takeover-steps", "3", "--run-dir", str(run), *TINY]
    assert main(args) == 0
    assert "--teleop scripted with --agent.num-critics 2" in capsys.readouterr().out  # advised to use 10
    rates = episode_metric(run, "intervention_rate")
    assert len(rates) >= 2 and all(0.0 < r <= 1.0 for r in rates)  # a random-init policy gets corrected
    assert episode_metric(run, "takeovers")[0] >= 1
    cfg = load_run_config(run)
    assert cfg.teleop == "scripted" and cfg.corrector.takeover_steps == 3


def test_trainer_routes_interventions_to_the_demo_buffer_and_rlif_rewards(tmp_path: Path) -> None:
    base = dict(env=EnvConfig(task="pick_cube"), total_env_steps=100, learning_starts=1000, eval_every=1000,
                eval_episodes=1, scripted_demos=0, teleop="scripted", progress=False, torch_threads=1)
    hil = Trainer(TrainConfig(**base, run_dir=tmp_path / "hil"))
    hil.run()
    online_flags = hil.replay.arrays["extras/intervention"][hil.replay.arrays["is_step"]]
    demo_steps = hil.demo_replay.arrays["is_step"]
    assert online_flags.sum() > 0 and demo_steps.sum() == online_flags.sum()  # every intervention step, once
    assert hil.demo_replay.arrays["extras/intervention"][demo_steps].all()

    rlif = Trainer(TrainConfig(**base, intervention_mode="rlif", interventions_to_demos=False, run_dir=tmp_path / "r"))
    rlif.run()
    n = rlif.replay.num_records  # records in write order; an episode's final-observation record has no step
    is_step = rlif.replay.arrays["is_step"][:n]
    rewards = rlif.replay.arrays["reward"][:n]
    flags = rlif.replay.arrays["extras/intervention"][:n] & is_step
    assert set(np.unique(rewards)) <= {0.0, -1.0} and len(rlif.demo_replay) == 0
    assert not rlif.replay.arrays["terminated"][:n].any()  # RLIF: success is a truncation, takeovers end nothing
    # -1 exactly on the policy step right before each takeover inside an episode
    before_takeover = is_step[:-1] & ~flags[:-1] & flags[1:]
    np.testing.assert_array_equal(np.flatnonzero(rewards == -1.0), np.flatnonzero(before_takeover))
    assert before_takeover.sum() >= 1


def test_scripted_demos_are_recorded_without_the_corrector(tmp_path: Path) -> None:
    """The corrector watches training, not demo recording (it would take over from a noisy expert)."""
    cfg = TrainConfig(env=EnvConfig(task="pick_cube"), scripted_demos=2, demo_noise=0.85, teleop="scripted",
                      progress=False, torch_threads=1, run_dir=tmp_path / "run")
    trainer = Trainer(cfg)
    device = teleop_device(trainer.env)
    assert device is not None and (device.episodes, device.takeovers) == (0, 0)
    demo_steps = trainer.demo_replay.arrays["is_step"]
    assert demo_steps.sum() > 0 and not trainer.demo_replay.arrays["extras/intervention"][demo_steps].any()


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="intervention_mode"):
        Trainer(TrainConfig(intervention_mode="rlif"))
    with pytest.raises(ValueError, match="'keyboard' cannot drive 2 actor processes"):
        TrainConfig(teleop="keyboard", actors=2)
    with pytest.raises(ValueError, match="reward_classifier"):
        EnvConfig(reward_classifier=Path("/nonexistent.pt"))


def test_record_demos_with_scripted_device(tmp_path: Path, capsys) -> None:
    out = tmp_path / "demos"
    assert main(["record-demos", "--task", "reach", "--episodes", "2", "--teleop", "scripted", "--out", str(out)]) == 0
    episodes = load_demos(out)
    assert len(episodes) == 2 and all(e.success and e.infos["intervention"].all() for e in episodes)
    text = capsys.readouterr().out
    assert "episode 1/2: success" in text and "kept" in text and "recorded 2, succeeded 2, kept 2" in text
    # the noisy corrector fails some; dropped unless --keep-failed
    out2 = tmp_path / "noisy"
    main(["record-demos", "--task", "pick_cube", "--episodes", "2", "--teleop", "scripted", "--noise", "1.5",
          "--keep-failed", "--out", str(out2)])
    assert len(load_demos(out2)) == 2
