"""Config round trips, run folders, confidence intervals, observation wrappers."""

from __future__ import annotations

import threading

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.envs.wrappers import DictObservation
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.evaluate import wilson_interval
from robot_rl.training.run_dir import RunDir
from robot_rl.utils.config_io import from_jsonable, to_jsonable


def test_train_config_round_trip() -> None:
    from robot_rl.agents.config import SACConfig

    cfg = TrainConfig(env=EnvConfig(task="reach"), agent=SACConfig(num_critics=2, hidden_dims=(64, 64)))
    assert from_jsonable(TrainConfig, to_jsonable(cfg)) == cfg


def test_unknown_config_key_is_named() -> None:
    data = to_jsonable(TrainConfig())
    data["agent"]["num_critic"] = 3
    with pytest.raises(ValueError, match=r"config\.agent.*num_critic"):
        from_jsonable(TrainConfig, data)


def test_run_folder_is_claimed_by_one_run_only(tmp_path) -> None:
    """Two runs started on the same folder (two benchmark runs in the same second): the second is refused and
    the first run's config.json stays whole and its own; no temporary file is left behind."""
    first, second = TrainConfig(env=EnvConfig(task="reach"), seed=1), TrainConfig(env=EnvConfig(task="reach"), seed=2)
    RunDir(tmp_path / "run").create(first)
    with pytest.raises(FileExistsError, match="already holds a run; use --resume"):
        RunDir(tmp_path / "run").create(second)
    assert RunDir(tmp_path / "run").read_config()["seed"] == 1
    assert not list((tmp_path / "run").glob("*.tmp"))

    # At the same moment: exactly one of several claims wins, and the config on disk is the winner's.
    barrier, outcome = threading.Barrier(8), {}

    def claim(seed: int) -> None:
        barrier.wait()
        try:
            RunDir(tmp_path / "race").create(TrainConfig(env=EnvConfig(task="reach"), seed=seed))
            outcome[seed] = "won"
        except FileExistsError:
            outcome[seed] = "refused"

    threads = [threading.Thread(target=claim, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [seed for seed, result in outcome.items() if result == "won"]
    assert len(outcome) == 8 and len(winners) == 1, outcome
    assert RunDir(tmp_path / "race").read_config()["seed"] == winners[0]


def test_wilson_interval() -> None:
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and 0.1 < hi < 0.2
    lo, hi = wilson_interval(20, 20)
    assert hi == 1.0 and 0.8 < lo < 0.9
    lo, hi = wilson_interval(9, 10)
    assert lo < 0.9 < hi


def test_dict_observation_wraps_box_and_nested_dict() -> None:
    env = DictObservation(gym.make("Pendulum-v1"))
    obs, _ = env.reset(seed=0)
    assert set(obs) == {"state"} and obs["state"].dtype == np.float32 and obs["state"].shape == (3,)

    class Nested(gym.Env):
        observation_space = gym.spaces.Dict(
            {
                "robot": gym.spaces.Dict({"q": gym.spaces.Box(-1, 1, (2, 2))}),
                "images": gym.spaces.Dict({"cam": gym.spaces.Box(0, 255, (8, 8, 3), np.uint8)}),
            }
        )
        action_space = gym.spaces.Box(-1, 1, (1,))

        def reset(self, *, seed=None, options=None):
            return self.observation_space.sample(), {}

    wrapped = DictObservation(Nested())
    obs, _ = wrapped.reset()
    assert set(obs) == {"robot/q", "images/cam"}
    assert obs["robot/q"].shape == (4,) and obs["images/cam"].dtype == np.uint8


def test_a_demo_shortfall_says_why_and_what_to_change() -> None:
    from robot_rl.training.record import RecordStats, demo_summary

    short = RecordStats(recorded=100, successes=0, kept=0)
    line = demo_summary(short, 10, 0.1, "my:controller")
    assert "ONLY 0 of the 10 asked for" in line and "lower --demo-noise, or narrow the box" in line
    assert "narrow the box" not in demo_summary(short, 10, 0.1)  # the expert's own tasks have built boxes
    assert "ONLY" not in demo_summary(RecordStats(recorded=10, successes=10, kept=10), 10, 0.1, "my:controller")
