"""Each task's scripted expert succeeds on >= 95% of 100 seeded episodes (the demo source)."""

from __future__ import annotations

import pytest

from robot_rl.sim import TASKS, make_env, make_expert


@pytest.mark.parametrize("task", sorted(TASKS))
def test_expert_success_rate(task: str) -> None:
    env = make_env(task)
    successes = 0
    for seed in range(100):
        env.reset(seed=seed)
        expert = make_expert(env, seed=seed)
        info = {"is_success": False}
        for _ in range(env.cfg.max_episode_steps):
            _, _, terminated, truncated, info = env.step(expert.act(env.scene))
            if terminated or truncated:
                break
        successes += bool(info["is_success"])
    assert successes >= 95, f"{task}: expert succeeded in {successes}/100 episodes"
