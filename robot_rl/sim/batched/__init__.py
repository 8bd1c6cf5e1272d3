"""Batched simulation: ``num_envs`` worlds of one task behind gymnasium's vector-env API, as torch tensors.

    from robot_rl.sim.batched import BatchedEnvConfig, make_batched_env
    env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=64))
    obs, infos = env.reset(seed=0)                      # obs["state"]: (64, STATE_DIM) float32
    obs, rewards, terminated, truncated, infos = env.step(env.actions)

The interface (shapes, auto-reset, reset masks, the action tensor) is described in ``robot_rl.sim.batched.base``.
"""

from __future__ import annotations

from typing import Any

from robot_rl.sim.batched.base import BatchedArmEnv, SingleWorldEnv
from robot_rl.sim.batched.config import BACKENDS, BatchedEnvConfig
from robot_rl.sim.registry import make_env
from robot_rl.sim.tasks.base import TaskConfig


def make_batched_env(
    task: str,
    batched: BatchedEnvConfig | None = None,
    config: TaskConfig | None = None,
    **env_overrides: Any,
) -> BatchedArmEnv:
    """``batched.num_envs`` worlds of a registered task (its ``config``, with ``env_overrides`` applied as in
    ``make_env``), on ``batched.backend``."""
    batched = batched if batched is not None else BatchedEnvConfig()
    from robot_rl.sim.batched.threads import ThreadedArmEnv  # the only backend in BACKENDS

    worlds = [make_env(task, config, **env_overrides) for _ in range(batched.num_envs)]
    return ThreadedArmEnv(worlds, batched)


__all__ = ["BACKENDS", "BatchedArmEnv", "BatchedEnvConfig", "SingleWorldEnv", "make_batched_env"]
