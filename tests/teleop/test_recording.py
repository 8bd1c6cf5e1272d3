"""Demos by hand: the human's actions are recorded; operator buttons end episodes; failed ones dropped."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("robot_rl.sim")  # sets MUJOCO_GL before mujoco loads

from robot_rl.data.demos import load_demos
from robot_rl.sim import make_env
from robot_rl.teleop.base import Buttons, MockTeleop, TeleopCommand
from robot_rl.training.record import record_teleop_demos

UP = np.array([0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0], np.float32)


def test_record_teleop_demos_with_buttons(tmp_path: Path) -> None:
    commands = [TeleopCommand(active=True, action=UP)] * 3 + [TeleopCommand(buttons=Buttons(success=True))]
    commands += [TeleopCommand(active=True, action=UP), TeleopCommand(buttons=Buttons(reset=True))]
    env = make_env("reach")
    seen: list[int] = []
    _, stats = record_teleop_demos(env, "reach", MockTeleop(commands), 2, tmp_path / "d",
                                      on_step=lambda t, obs: seen.append(t))
    assert (stats.recorded, stats.kept, stats.successes) == (2, 1, 1)
    (episode,) = load_demos(tmp_path / "d")
    assert len(episode) == 4 and episode.success and episode.terminated
    np.testing.assert_array_equal(episode.infos["intervention"], [True, True, True, False])
    np.testing.assert_array_equal(episode.actions[:3], [UP] * 3)
    assert not episode.actions[3].any()  # idle human: the arm holds still
    assert seen == [0, 1, 2, 3, 0, 1]
