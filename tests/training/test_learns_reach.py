"""End to end: `robot-rl train` learns `reach` from state to >= 90% deterministic success inside CI's budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from robot_rl.training.config import TrainConfig
from robot_rl.training.evaluate import evaluate
from robot_rl.training.loop import Trainer


@pytest.mark.slow
def test_learns_reach_from_state(tmp_path: Path) -> None:
    # The main job exactly (`robot-rl train`): only the evaluation count, the thread count and where it writes.
    config = TrainConfig(eval_episodes=30, torch_threads=1, progress=False, run_dir=tmp_path / "run")
    assert (config.env.task, config.total_env_steps, config.preset) == ("reach", 5000, "quickstart")
    trainer = Trainer(config)
    untrained = evaluate(lambda o: trainer.agent.act(o, deterministic=True), trainer.eval_env, 10)
    assert untrained.success_rate < 0.5, "the task must not be solvable without learning"
    result = trainer.run()
    assert result is not None
    steps, success = trainer.run_dir.read_metrics("eval", "success_rate")
    assert result.success_rate >= 0.9, f"eval success per 1000 steps: {dict(zip(steps, success))}"
