"""End to end: `robot-rl train` learns `reach` from state to >= 90% deterministic success inside CI's budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from robot_rl.agents.config import SACConfig
from robot_rl.data.replay import ReplayConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.evaluate import evaluate
from robot_rl.training.loop import Trainer


@pytest.mark.slow
def test_learns_reach_from_state(tmp_path: Path) -> None:
    # Small networks and a high UTD keep this to a few CPU minutes; the recipe is the default one otherwise.
    config = TrainConfig(
        task="reach", total_env_steps=5000, eval_every=1000, eval_episodes=30, scripted_demos=20,
        learning_starts=300, torch_threads=1, progress=False, run_dir=tmp_path / "run", seed=0,
        agent=SACConfig(hidden_dims=(128, 128), num_critics=2, utd_ratio=8, init_temperature=0.01),
        replay=ReplayConfig(n_step=3),
    )
    trainer = Trainer(config)
    untrained = evaluate(lambda o: trainer.agent.act(o, deterministic=True), trainer.eval_env, 10)
    assert untrained.success_rate < 0.5, "the task must not be solvable without learning"
    result = trainer.run()
    assert result is not None
    steps, success = trainer.run_dir.read_metrics("eval", "success_rate")
    assert result.success_rate >= 0.9, f"eval success per 1000 steps: {dict(zip(steps, success))}"
