"""The ``mujoco-threads`` backend: one CPU env (``ArmEnv``) per world, the worlds stepped by native threads.

Each world is the CPU env itself, so observations, action scaling, the safety gate, rewards, success and
domain randomisation are the CPU env's by construction (no second implementation to drift). The worlds are
split into one contiguous chunk per thread; MuJoCo releases the GIL inside ``mj_step``, so the physics of the
chunks runs in parallel while their short Python parts (gate, observation, reward) take turns. Each world owns
its model (per-world randomisation writes into it) and its random generator, so results do not depend on the
number of threads.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

from robot_rl.envs.contract import INFO_KEYS
from robot_rl.sim.batched.base import BatchedArmEnv, Obs
from robot_rl.sim.batched.config import BatchedEnvConfig
from robot_rl.sim.env import ArmEnv


class ThreadedArmEnv(BatchedArmEnv):
    def __init__(self, worlds: Sequence[ArmEnv], config: BatchedEnvConfig) -> None:
        first = worlds[0]
        if first.cfg.obs_mode != "state":
            raise ValueError(
                f"obs_mode={first.cfg.obs_mode!r}: the mujoco-threads backend does not render cameras; train "
                f"pixel policies on the CPU env (robot_rl.sim.make_env) or use obs_mode='state'"
            )
        super().__init__(first.contract, len(worlds), torch.device("cpu"), config.autoreset)
        self.worlds = list(worlds)
        self.task_name = first.task.name
        self.copy = config.copy
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        self.num_threads = min(config.num_threads or cores, self.num_envs)
        self._pool = ThreadPoolExecutor(self.num_threads, "robot_rl-world") if self.num_threads > 1 else None

        # Results are written row by row into numpy buffers; the tensors handed out share their memory.
        n, spaces = self.num_envs, self.single_observation_space.spaces
        self._obs = {k: np.zeros((n, *s.shape), s.dtype) for k, s in spaces.items()}
        self._last_obs = {k: np.zeros_like(v) for k, v in self._obs.items()}
        self._rewards = np.zeros(n, np.float32)
        self._terminations = np.zeros(n, bool)
        self._truncations = np.zeros(n, bool)
        term_names = list(first.task.reward_terms(first.scene))
        self._info = _info_buffers(n, term_names)
        self._step_info = _info_buffers(n, term_names)
        self._ended = np.zeros(n, bool)
        self._actions_np = self.actions.numpy()  # the same memory as self.actions
        self._all = torch.ones(n, dtype=torch.bool)

    # --- gymnasium vector-env API ---------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        seeds = self._seeds(seed)
        mask = self._reset_mask(options)
        world_options = {k: v for k, v in (options or {}).items() if k != "reset_mask"} or None

        def reset_world(i: int) -> None:
            obs, info = self.worlds[i].reset(seed=seeds[i], options=world_options)
            _write_obs(self._obs, i, obs)
            _write_info(self._info, i, info)

        self._run(reset_world, np.flatnonzero(mask))
        self._ended[mask] = False
        return self._out(_tensors(self._obs), self.copy), self._infos(self._info)

    def step(self, actions: torch.Tensor | np.ndarray):
        self._take_actions(actions)
        if self._ended.any():
            raise RuntimeError(
                f"step(): world(s) {np.flatnonzero(self._ended)[:8].tolist()} ended at the previous step and "
                f"autoreset is off; reset them first with reset(options={{'reset_mask': mask}})"
            )
        self._run(self._step_world, np.arange(self.num_envs))
        ended = self._terminations | self._truncations
        infos = self._infos(self._info)
        if self.autoreset and ended.any():
            last = {k: np.where(_rows(ended, v), self._last_obs[k], v) for k, v in self._obs.items()}
            infos["final_obs"] = _tensors(last)
            infos["_final_obs"] = torch.from_numpy(ended.copy())
            infos["final_info"] = self._infos(self._step_info)
            infos["_final_info"] = infos["_final_obs"]
        if not self.autoreset:
            self._ended = ended.copy()
        out = self._out
        return (
            out(_tensors(self._obs), self.copy),
            out(torch.from_numpy(self._rewards), self.copy),
            out(torch.from_numpy(self._terminations), self.copy),
            out(torch.from_numpy(self._truncations), self.copy),
            infos,
        )

    def close(self, **kwargs: Any) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for world in self.worlds:
            world.close()
        self.closed = True

    # --- internals -----------------------------------------------------------------------------------
    def _step_world(self, i: int) -> None:
        world = self.worlds[i]
        obs, reward, terminated, truncated, info = world.step(self._actions_np[i])
        self._rewards[i] = reward
        self._terminations[i] = terminated
        self._truncations[i] = truncated
        _write_info(self._info, i, info)
        if self.autoreset and (terminated or truncated):
            _write_obs(self._last_obs, i, obs)
            _write_info(self._step_info, i, info)
            obs, reset_info = world.reset()
            _write_info(self._info, i, reset_info)
        _write_obs(self._obs, i, obs)

    def _run(self, work: Callable[[int], None], worlds: np.ndarray) -> None:
        """``work(i)`` for every world index in ``worlds``, one contiguous share per thread."""
        if self._pool is None or len(worlds) == 1:
            for i in worlds:
                work(int(i))
            return
        shares = [s for s in np.array_split(worlds, self.num_threads) if len(s)]
        for done in [self._pool.submit(_each, work, share) for share in shares]:
            done.result()  # re-raises a world's error here, after every share has finished or failed

    def _infos(self, buffers: dict[str, Any]) -> dict[str, Any]:
        infos: dict[str, Any] = {}
        for key, value in buffers.items():
            if isinstance(value, dict):
                infos[key] = self._infos(value)
            else:
                infos[key] = torch.from_numpy(value.copy())
            infos[f"_{key}"] = self._all
        return infos


def _each(work: Callable[[int], None], worlds: np.ndarray) -> None:
    for i in worlds:
        work(int(i))


def _info_buffers(n: int, reward_terms: list[str]) -> dict[str, Any]:
    buffers: dict[str, Any] = {key: np.zeros(n, bool) for key in INFO_KEYS}
    buffers["reward_terms"] = {name: np.zeros(n, np.float32) for name in reward_terms}
    return buffers


def _write_obs(buffers: dict[str, np.ndarray], i: int, obs: dict[str, np.ndarray]) -> None:
    for key, value in obs.items():
        buffers[key][i] = value


def _write_info(buffers: dict[str, Any], i: int, info: dict[str, Any]) -> None:
    for key in INFO_KEYS:
        buffers[key][i] = info[key]
    for name, value in info.get("reward_terms", {}).items():
        buffers["reward_terms"][name][i] = value


def _rows(mask: np.ndarray, like: np.ndarray) -> np.ndarray:
    return mask.reshape(-1, *([1] * (like.ndim - 1)))


def _tensors(arrays: dict[str, np.ndarray]) -> Obs:
    return {k: torch.from_numpy(v) for k, v in arrays.items()}
