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
    template = make_env(task, config, **env_overrides)
    if template.cfg.obs_mode != "state":
        template.close()
        raise ValueError(
            f"obs_mode={template.cfg.obs_mode!r}: the batched backends do not render cameras; train pixel "
            f"policies on the CPU env (robot_rl.sim.make_env) or use obs_mode='state'"
        )
    if not template.task.has_batched_terms():
        template.close()
        raise ValueError(f"{template.task._no_batched_terms()}; use robot_rl.sim.make_env")
    from robot_rl.sim.batched.threads import ThreadsPhysics

    worlds = [template] + [make_env(task, config, **env_overrides) for _ in range(batched.num_envs - 1)]
    return BatchedArmEnv(ThreadsPhysics(worlds, batched.num_threads), autoreset=batched.autoreset)


__all__ = ["BACKENDS", "BatchedArmEnv", "BatchedEnvConfig", "SingleWorldEnv", "make_batched_env"]
