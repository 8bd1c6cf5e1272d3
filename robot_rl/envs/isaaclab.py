"""Isaac Lab's vectorised task envs as the parallel trainer's worlds (``robot-rl train --backend isaaclab``).

Isaac Lab's ``ManagerBasedRLEnv`` and ``DirectRLEnv`` step N worlds on a GPU with torch tensors:
``reset(seed) -> (obs, extras)`` and ``step(action) -> (obs, reward, terminated, truncated, extras)``, where
``obs`` maps observation groups (``policy``, ``critic``, ...) to tensors [N, D] and finished worlds are
reset inside ``step``. mjlab implements the same API on MuJoCo Warp (``--backend mjlab``; its policy group is
called ``actor``). ``IsaacLabWorlds`` puts either behind the interface of ``robot_rl.sim.batched``'s envs, so
``ParallelTrainer`` drives it unchanged: the policy group becomes the ``state`` observation, actions in
[-1, 1] go to the task's action terms as they are (Isaac Lab tasks scale them there), and success is read
from a termination term when one is named.

These envs return the first observation of the next episode for a world that finished, not its last one.
A terminated transition does not bootstrap, so that costs nothing; a timed-out one bootstraps from its own
observation (the value of the state before the time limit, as Isaac Lab's PPO runner does) rather than from
an unrelated next episode.

Isaac Lab needs Python 3.12, Isaac Sim and its own torch build; it is never a dependency of robot_rl and is
imported only when this backend is chosen.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch

POLICY_GROUPS = ("policy", "actor")
"""Observation groups the policy reads by default: Isaac Lab's name, then mjlab's."""
INSTALL = {
    "isaaclab": "Isaac Lab (Python 3.12 with Isaac Sim: https://isaac-sim.github.io/IsaacLab, pip install isaaclab)",
    "mjlab": "mjlab (pip install mjlab; it pins its own mujoco and mujoco-warp, so give it its own venv)",
}


@dataclass(frozen=True)
class Backend:
    name: str


class IsaacLabWorlds:
    """``env`` (an Isaac Lab API vectorised env) as N worlds with the batched simulator's interface.

    ``obs_group``: the observation group the policy sees (None: the first of ``POLICY_GROUPS`` present).
    ``success_term``: a termination term that means the task was done (None: success unknown)."""

    def __init__(self, env: Any, backend: str, obs_group: str | None = None, success_term: str | None = None) -> None:
        self.env = env
        self.physics = Backend(backend)
        self.num_envs = int(env.num_envs)
        self.device = torch.device(env.device)
        self.success_term = success_term
        obs, _ = env.reset()
        groups = list(obs)
        self.obs_group = obs_group or next((g for g in POLICY_GROUPS if g in obs), None)
        if self.obs_group not in obs:
            raise ValueError(f"--obs-group {obs_group!r}: the env's observation groups are {groups}"
                             if obs_group else f"no observation group named {list(POLICY_GROUPS)}; the env has "
                             f"{groups}: name the policy's with --obs-group")
        state = self._state(obs)
        if success_term is not None and success_term not in self._termination_terms():
            raise ValueError(f"--success-term {success_term!r}: the env's termination terms are "
                             f"{self._termination_terms()}")
        action_dim = int(env.single_action_space.shape[-1])
        self.single_observation_space = gym.spaces.Dict(
            {"state": gym.spaces.Box(-np.inf, np.inf, (state.shape[1],), np.float32)})
        self.single_action_space = gym.spaces.Box(-1.0, 1.0, (action_dim,), np.float32)
        self.actions = torch.zeros(self.num_envs, action_dim, device=self.device)
        self._last = state

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        obs, extras = self.env.reset(seed=seed, options=options)
        self._last = self._state(obs)
        return {"state": self._last}, extras

    def step(self, actions: torch.Tensor):
        obs, reward, terminated, truncated, extras = self.env.step(actions)
        terminated, truncated = terminated.bool(), truncated.bool()
        ended = terminated | truncated
        state = self._state(obs)
        final = torch.where(ended.unsqueeze(-1), self._last, state)  # see the module docstring
        infos: dict[str, Any] = {"final_obs": {"state": final}, "extras": extras}
        if self.success_term is not None:  # the term that ended the episode, whether terminal or a time limit
            done = self.env.termination_manager.get_term(self.success_term).bool()
            infos["final_info"] = {"is_success": ended & done}
        self._last = state
        return {"state": state}, reward.float(), terminated, truncated, infos

    def close(self) -> None:
        self.env.close()

    def _state(self, obs: dict[str, Any]) -> torch.Tensor:
        group = obs[self.obs_group]
        if not isinstance(group, torch.Tensor) or group.dim() != 2:
            raise ValueError(f"observation group {self.obs_group!r} is not one tensor [num_envs, D]; set "
                             "concatenate_terms=True for it in the task's observation config")
        return group.float()

    def _termination_terms(self) -> list[str]:
        return list(self.env.termination_manager.active_terms)


def make_isaaclab_worlds(backend: str, task: str, num_envs: int, device: str, seed: int,
                         obs_group: str | None = None, success_term: str | None = None,
                         overrides: dict[str, Any] | None = None) -> IsaacLabWorlds:
    """``num_envs`` worlds of an Isaac Lab task id (``backend="isaaclab"``) or an mjlab task id (``"mjlab"``).
    ``overrides``: fields of the task's env config to set, by dotted name (``{"episode_length_s": 5.0}``)."""
    if backend not in INSTALL:
        raise ValueError(f"unknown Isaac Lab API backend {backend!r}; use one of {sorted(INSTALL)}")
    make = _isaaclab_env if backend == "isaaclab" else _mjlab_env
    env = make(task, num_envs, device, seed, overrides or {})
    return IsaacLabWorlds(env, backend, obs_group, success_term)


def _override(cfg: Any, overrides: dict[str, Any], task: str) -> None:
    for dotted, value in overrides.items():
        *path, name = dotted.split(".")
        target = cfg
        for part in path:
            target = getattr(target, part, None)
        if target is None or not hasattr(target, name):
            raise ValueError(f"--env-kwargs {dotted!r}: the env config of {task!r} has no such field")
        setattr(target, name, value)


def _require(module: str, backend: str):
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise ImportError(f"--backend {backend} needs {INSTALL[backend]}; importing {module} failed: {err}") from err


def _isaaclab_env(task: str, num_envs: int, device: str, seed: int, overrides: dict[str, Any]):
    app_launcher = _require("isaaclab.app", "isaaclab")
    app_launcher.AppLauncher(headless=True, device=device)  # Isaac Sim must run before its task modules import
    _require("isaaclab_tasks", "isaaclab")
    parse_env_cfg = _require("isaaclab_tasks.utils", "isaaclab").parse_env_cfg
    cfg = parse_env_cfg(task, device=device, num_envs=num_envs)
    cfg.seed = seed
    _override(cfg, overrides, task)
    return gym.make(task, cfg=cfg).unwrapped


def _mjlab_env(task: str, num_envs: int, device: str, seed: int, overrides: dict[str, Any]):
    _require("mjlab.tasks", "mjlab")  # registers the task ids
    registry = _require("mjlab.tasks.registry", "mjlab")
    if task not in registry.list_tasks():
        raise ValueError(f"--task {task!r} is not an mjlab task; mjlab has {registry.list_tasks()}")
    cfg = registry.load_env_cfg(task)
    cfg.scene.num_envs = num_envs
    cfg.seed = seed
    _override(cfg, overrides, task)
    return _require("mjlab.envs", "mjlab").ManagerBasedRlEnv(cfg, device=device)
