"""Recordings and datasets through the command line: training and evaluation record rosbag2 episodes that
import back as demos; demos export to a bag and to a LeRobot dataset and come back unchanged, and a policy
trained from the imported demos is the one trained from the originals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rosbags")
pytest.importorskip("pyarrow")
from test_cli import TINY

from robot_rl.cli import main
from robot_rl.data.demos import load_demos
from robot_rl.training.loop import load_agent


def test_train_records_its_episodes_and_eval_records_its_own(tmp_path: Path, capsys) -> None:
    run = tmp_path / "run"
    assert main(["train", "--task", "reach", "--total-env-steps", "130", "--eval-every", "1000",
                 "--scripted-demos", "1", "--record-episodes", "--run-dir", str(run), *TINY]) == 0
    (bag,) = (run / "recordings").iterdir()
    assert bag.name == "train-000" and (bag / "metadata.yaml").exists()
    assert main(["import-demos", str(bag), "--out", str(tmp_path / "train-demos")]) == 0
    episodes = load_demos(tmp_path / "train-demos", task="reach")
    assert sum(len(e) for e in episodes) == 130  # every step, the unfinished last episode too
    assert episodes[-1].truncated
    assert {"intervention", "grasp_penalty", "is_success", "safety_clipped"} <= set(episodes[0].infos)

    assert main(["eval", str(run), "--episodes", "2", "--record", str(tmp_path / "eval")]) == 0
    assert "recording: " in capsys.readouterr().out
    assert main(["import-demos", str(tmp_path / "eval"), "--out", str(tmp_path / "eval-demos")]) == 0
    evaluated = load_demos(tmp_path / "eval-demos")
    assert len(evaluated) == 2 and all(e.truncated or e.terminated for e in evaluated)


@pytest.mark.parametrize("fmt", ["rosbag", "lerobot"])
def test_demos_exported_and_imported_train_the_same_policy(tmp_path: Path, fmt: str) -> None:
    demos = tmp_path / "demos"
    assert main(["record-demos", "--task", "reach", "--episodes", "3", "--noise", "0.2", "--out", str(demos)]) == 0
    assert main(["export-demos", str(demos), "--format", fmt, "--out", str(tmp_path / "exported")]) == 0
    assert main(["import-demos", str(tmp_path / "exported"), "--out", str(tmp_path / "back")]) == 0
    for a, b in zip(load_demos(demos), load_demos(tmp_path / "back"), strict=True):
        np.testing.assert_array_equal(a.observations["state"], b.observations["state"])
        np.testing.assert_array_equal(a.actions, b.actions)
        np.testing.assert_array_equal(a.rewards, b.rewards)

    policies = []
    for name, source in (("a", demos), ("b", tmp_path / "back")):
        run = tmp_path / f"run-{name}"
        assert main(["train", "--task", "reach", "--total-env-steps", "80", "--eval-every", "1000",
                     "--demos", str(source), "--run-dir", str(run), "--seed", "3",
                     *TINY]) == 0
        policies.append(load_agent(run)[0].actor.state_dict())
    for key, value in policies[0].items():
        assert torch.equal(value, policies[1][key]), key


def test_import_refuses_what_it_cannot_read(tmp_path: Path, capsys) -> None:
    (tmp_path / "empty").mkdir()
    assert main(["import-demos", str(tmp_path / "empty"), "--out", str(tmp_path / "x")]) == 2
    assert "neither a rosbag2 recording" in capsys.readouterr().err
    assert main(["import-demos", str(tmp_path / "missing"), "--out", str(tmp_path / "x")]) == 2
    assert "no such recording or dataset" in capsys.readouterr().err
