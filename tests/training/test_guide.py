"""Jump-start RL: the guide takes exactly the first h steps of each training episode, h follows its schedule
(down the curriculum when the combined policy is at its best; drawn per episode at random), the schedule
survives a resume, and the run's own evaluation is of the learned policy alone."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from robot_rl.agents.config import SACConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.guide import GuideConfig, JumpStart
from robot_rl.training.loop import Trainer


class CountingGuide:
    """A guide that says which call of the episode it is (action[0] = calls so far / 100)."""

    def __init__(self) -> None:
        self.calls, self.resets = 0, 0

    def __call__(self, obs):
        self.calls += 1
        return np.full(7, self.calls / 100, np.float32)

    def reset(self) -> None:
        self.calls, self.resets = 0, self.resets + 1


def test_the_curriculum_drops_h_when_the_combined_policy_is_at_its_best():
    jump = JumpStart(CountingGuide(), GuideConfig(policy="x", stages=4, tolerance=0.05), horizon=10)
    assert jump.step_size == 3 and jump.start_episode() == 10
    assert [jump.acts(t) for t in (0, 9, 10)] == [True, True, False]
    assert jump.after_evaluation(0.5) and jump.h == 7  # the first evaluation sets the bar
    assert not jump.after_evaluation(0.4) and jump.h == 7  # below the best: stay
    assert jump.after_evaluation(0.45) and jump.h == 4  # within the tolerance of the best: next stage
    assert jump.best == 0.5  # the bar never drops
    assert jump.after_evaluation(0.9) and jump.h == 1
    assert jump.after_evaluation(0.9) and jump.h == 0
    assert not jump.after_evaluation(1.0) and jump.h == 0  # the learner acts alone from here
    assert jump.start_episode() == 0
    short = JumpStart(CountingGuide(), GuideConfig(policy="x", stages=10), horizon=100)
    assert short.after_evaluation(0.5, combined_length=37.6) and short.h == 37  # not 90: episodes end by ~38
    assert short.after_evaluation(0.6, combined_length=36.0) and short.h == 27  # then a stage at a time


def test_without_evaluations_the_curriculum_judges_training_episodes_at_the_current_h():
    jump = JumpStart(None, GuideConfig(policy="x", stages=4), horizon=10, episodes_per_judgement=3)
    assert not jump.after_episode(10, 1.0, 8) and not jump.after_episode(10, 0.0, 10)
    assert not jump.after_episode(7, 1.0, 9)  # started at another h: not counted
    state = jump.state_dict()  # two outcomes waiting survive a checkpoint
    resumed = JumpStart(None, GuideConfig(policy="x", stages=4), horizon=10, episodes_per_judgement=3)
    resumed.load_state_dict(state)
    assert resumed.after_episode(10, 1.0, 9) and resumed.h == 7  # success 2/3 sets the bar; a stage down
    assert resumed.best == pytest.approx(2 / 3) and resumed.outcomes == []
    for success in (0.0, 0.0, 1.0):  # 1/3: below the bar, stay
        resumed.after_episode(7, success, 10)
    assert resumed.h == 7
    random = JumpStart(None, GuideConfig(policy="x", schedule="random"), horizon=10, episodes_per_judgement=1)
    assert not random.after_episode(10, 1.0, 5) and random.h == 10


def test_the_combined_policy_hands_over_after_h_steps_and_resets_its_guide():
    jump = JumpStart(CountingGuide(), GuideConfig(policy="x"), horizon=10)
    jump.h = 3
    guide = CountingGuide()
    policy, reset = jump.combined(guide, lambda obs: np.full(7, -1.0, np.float32))
    assert [policy({})[0] for _ in range(5)] == [0.01, 0.02, 0.03, -1.0, -1.0]
    reset()
    assert policy({})[0] == 0.01 and guide.resets == 1


def test_random_h_is_uniform_over_the_horizon():
    jump = JumpStart(CountingGuide(), GuideConfig(policy="x", schedule="random"), horizon=4, seed=1)
    draws = np.array([jump.start_episode() for _ in range(5000)])
    assert set(draws) == {0, 1, 2, 3, 4} and np.all(np.abs(np.bincount(draws) - 1000) < 120)
    assert not jump.after_evaluation(1.0)  # evaluation does not move a random schedule


def guided(run: Path, steps: int, resume: Path | None = None, **guide: object) -> TrainConfig:
    return TrainConfig(env=EnvConfig(task="reach"), total_env_steps=steps, learning_starts=40, batch_size=32,
                       eval_every=40, eval_episodes=2, scripted_demos=1, seed=1, torch_threads=1,
                       progress=False, run_dir=run, resume=resume,
                       guide=GuideConfig(policy="expert", **guide),  # type: ignore[arg-type]
                       agent=SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=1, compile="off"))


def test_the_guide_acts_for_the_first_h_steps_of_training_episodes(tmp_path: Path, monkeypatch):
    trainer = Trainer(guided(tmp_path / "run", 120, horizon=6, stages=2))
    assert trainer.jump_start is not None and trainer.jump_start.h == 6
    actors: list[str] = []
    guide = trainer.jump_start.guide

    class Recorded:
        def __call__(self, obs):
            actors.append("guide")
            return guide(obs)

        def reset(self):  # called as each training episode starts
            actors.append("|")
            guide.reset()

    monkeypatch.setattr(trainer.jump_start, "guide", Recorded())
    act = trainer.agent.act
    monkeypatch.setattr(trainer.agent, "act", lambda obs, deterministic: actors.append(
        "eval" if deterministic else "policy") or act(obs, deterministic))
    trainer.run()
    episodes = [e.split() for e in " ".join(a for a in actors if a != "eval").split("|")[1:]]
    guided_steps = [e.count("guide") for e in episodes if e]
    for e, k in zip(episodes, guided_steps):
        assert e == ["guide"] * k + ["policy"] * (len(e) - k)  # the guide first, then the policy, no mixing
        assert k in (min(len(e), 6), min(len(e), 3))  # h was 6, then 3
    assert guided_steps[0] == 6 and guided_steps[-1] == 3
    _, h = trainer.run_dir.read_metrics("guide", "h")
    _, combined = trainer.run_dir.read_metrics("guide", "combined_success")
    # logged at each evaluation (every 40 steps): the first sets the bar and h drops; below it, h stays
    assert h.tolist() == [6.0, 3.0, 3.0] and combined.tolist() == [0.5, 0.0, 0.0]


def test_a_resumed_run_continues_the_schedule(tmp_path: Path):
    first = Trainer(guided(tmp_path / "run", 80, stages=4))
    first.run()
    assert first.jump_start is not None
    h = first.jump_start.h
    assert h < 40
    resumed = Trainer(guided(tmp_path / "other", 120, resume=tmp_path / "run", stages=4))
    assert resumed.jump_start is not None and resumed.jump_start.h == h


def test_noise_needs_a_guide():
    with pytest.raises(ValueError, match="without a guide"):
        TrainConfig(guide=GuideConfig(noise=0.5))


def test_actor_processes_run_the_guide_on_the_learners_h(tmp_path: Path):
    """``--actors 1``: the guide acts in the actor process (reach's expert for the whole episode at first, so
    the first episodes succeed where an untrained policy does not), the learner moves h on its evaluations and
    sends it with the weights, and the actor's later episodes start at that h."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "robot_rl.cli", "train", "--actors", "1", "--task", "reach", "--total-env-steps",
           "300", "--eval-every", "150", "--eval-episodes", "2", "--scripted-demos", "1", "--learning-starts", "200",
           "--batch-size", "16", "--agent.hidden-dims", "32", "32", "--agent.num-critics", "2", "--agent.utd-ratio",
           "1", "--torch-threads", "1", "--no-progress", "--guide.policy", "expert", "--guide.stages", "4",
           "--run-dir", str(run)]
    proc = subprocess.run(cmd, env={**os.environ, "PYTHONUNBUFFERED": "1"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = list(csv.DictReader((run / "metrics.csv").read_text().splitlines()))
    h = [(int(r["step"]), float(r["value"])) for r in rows if r["kind"] == "guide" and r["key"] == "h"]
    assert len(h) >= 2 and h[1][1] < h[0][1]  # logged at each evaluation; the first moved h down
    early = [float(r["value"]) for r in rows
             if r["kind"] == "episode" and r["key"] == "success" and int(r["step"]) <= h[0][0]]
    assert early and np.mean(early) >= 0.8  # the expert guided them from the first step
    summary = json.loads((run / "actor-0.log").read_text().split("actor summary: ")[1].splitlines()[0])
    assert summary["guide_h"] in {int(v) for _, v in h[1:]}  # the actor's last episode started at a later h
