"""Batched simulation: ``num_envs`` worlds of one task behind gymnasium's vector-env API, as torch tensors.

    from robot_rl.sim.batched import BatchedEnvConfig, make_batched_env
    env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=64))
    obs, infos = env.reset(seed=0)                      # obs["state"]: (64, STATE_DIM) float32
    obs, rewards, terminated, truncated, infos = env.step(env.actions)

The interface (shapes, auto-reset, reset masks, the action tensor) is described in ``robot_rl.sim.batched.base``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from robot_rl.sim.batched.base import BatchedArmEnv, SingleWorldEnv
from robot_rl.sim.batched.config import BACKENDS, BatchedEnvConfig, WarpConfig
from robot_rl.sim.batched.physics import Physics
from robot_rl.sim.batched.starts import StartPool
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
    from robot_rl.sim.batched.threads import ThreadsPhysics, available_cores

    if batched.backend == "mujoco-threads":
        worlds = [template] + [make_env(task, config, **env_overrides) for _ in range(batched.num_envs - 1)]
        physics: Physics = ThreadsPhysics(worlds, batched.num_threads)
    else:
        from robot_rl.sim.batched.warp import WarpPhysics, import_warp, warp_device

        wp, _ = import_warp()
        device = warp_device(wp, batched.warp.device)
        dtype = torch.float32
        torch_device = torch.device(str(wp.device_to_torch(wp.get_device(device))))
        helpers = min(batched.num_threads or available_cores(), batched.warp.start_pool)
        envs = [template] + [make_env(task, config, **env_overrides) for _ in range(helpers - 1)]
        seed = batched.seed if batched.seed is not None else int(np.random.SeedSequence().generate_state(1)[0])
        pool = StartPool.build(envs, batched.warp.start_pool, seed, torch_device, dtype)
        for env in envs[1:]:
            env.close()
        physics = WarpPhysics(template, batched.num_envs, batched.warp, pool, device)
    return BatchedArmEnv(physics, autoreset=batched.autoreset, seed=batched.seed,
                         action_history=batched.action_history)


__all__ = ["BACKENDS", "BatchedArmEnv", "BatchedEnvConfig", "SingleWorldEnv", "WarpConfig", "make_batched_env"]
