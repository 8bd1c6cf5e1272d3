"""The batched environment interface: ``num_envs`` worlds of one task behind gymnasium's vector-env API.

Every backend returns the CPU env's observations, rewards and flags stacked along a first ``num_envs`` axis, as
torch tensors on the backend's device:

- ``obs``: a dict like the CPU env's (``state`` (N, STATE_DIM) float32, ``privileged`` (N, P) float32, ...);
- ``rewards`` (N,) float32, ``terminations`` / ``truncations`` (N,) bool;
- ``infos``: the contract's info keys (``is_success``, ``safety_clipped``, ``intervention``) as (N,) bool
  tensors and ``reward_terms`` as a dict of (N,) float32 tensors, each key with gymnasium's ``_key`` mask.

Auto-reset follows gymnasium's ``AutoresetMode.SAME_STEP``: a world that ends is reset within the step, the
returned observation is its new first one and its info is the reset's; ``infos["final_obs"]`` then holds the
true next observation of *every* world (the last observation where a world ended, the returned one elsewhere),
so a trainer stores ``(obs, action, reward, infos.get("final_obs", next_obs))`` without indexing, and
``infos["final_info"]`` holds the step's own info. ``reset(options={"reset_mask": mask})`` resets a subset and
leaves the other worlds untouched.

Actions are written into one persistent tensor, ``env.actions`` (N, 7): a policy that writes its output there
(``env.actions.copy_(policy(obs))``) and calls ``env.step(env.actions)`` hands it over without a copy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from robot_rl.envs.contract import ACTION_DIM, ContractSpec, check_action

Obs = dict[str, torch.Tensor]


class BatchedArmEnv(gym.vector.VectorEnv):
    """What every batched backend shares: spaces, the action tensor, and checking seeds, masks and actions."""

    def __init__(self, contract: ContractSpec, num_envs: int, device: torch.device, autoreset: bool) -> None:
        self.contract = contract
        self.num_envs = num_envs
        self.device = device
        self.autoreset = autoreset
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP if autoreset else AutoresetMode.DISABLED}
        self.single_observation_space = contract.observation_space()
        self.single_action_space = contract.action_space()
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self.actions = torch.zeros(num_envs, ACTION_DIM, dtype=torch.float32, device=device)

    # --- argument checks shared by the backends -----------------------------------------------------------
    def _seeds(self, seed: int | list[int | None] | None) -> list[int | None]:
        """gymnasium's convention: None (fresh entropy per world), ``s`` (world i gets s + i), or one per world."""
        if seed is None:
            return [None] * self.num_envs
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [int(seed) + i for i in range(self.num_envs)]
        seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset(seed=...): {len(seeds)} seeds given for {self.num_envs} worlds")
        return seeds

    def _reset_mask(self, options: dict[str, Any] | None) -> np.ndarray:
        if options is None or "reset_mask" not in options:
            return np.ones(self.num_envs, dtype=bool)
        raw = options["reset_mask"]
        mask = raw.detach().cpu().numpy() if isinstance(raw, torch.Tensor) else np.asarray(raw)
        if mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
            raise ValueError(
                f"reset(options={{'reset_mask': ...}}): expected a bool array of shape ({self.num_envs},), "
                f"got {mask.dtype}{list(mask.shape)}"
            )
        if not mask.any():
            raise ValueError("reset(options={'reset_mask': ...}): the mask selects no world")
        return mask

    def _take_actions(self, actions: torch.Tensor | np.ndarray) -> None:
        """Copy ``actions`` into ``self.actions`` (nothing to copy when they are that tensor); refuse NaN/Inf."""
        if actions is not self.actions:
            given = torch.as_tensor(actions)
            if given.shape != self.actions.shape:
                raise ValueError(
                    f"step(actions): expected shape ({self.num_envs}, {ACTION_DIM}), got {tuple(given.shape)}"
                )
            self.actions.copy_(given)
        bad = ~torch.isfinite(self.actions).all(dim=1)
        if bool(bad.any()):
            worlds = bad.nonzero().flatten().tolist()
            first = self.actions[worlds[0]].cpu().numpy()
            check_action(first, source=f"step(actions): world(s) {worlds[:8]}{' ...' if len(worlds) > 8 else ''}")

    def _out(self, value: Any, copy: bool) -> Any:
        """A fresh copy of a tensor, or of every tensor in a (nested) dict, when ``copy``; else ``value``."""
        if not copy:
            return value
        if isinstance(value, dict):
            return {k: self._out(v, True) for k, v in value.items()}
        return value.clone() if isinstance(value, torch.Tensor) else value


class SingleWorldEnv(gym.Env):
    """One world of a batched env as a plain gymnasium env, so the shared conformance check and any single-env
    tool can drive a batched backend's own step path. The batched env needs ``num_envs=1`` and ``autoreset``
    off (the caller resets, as with any gymnasium env)."""

    def __init__(self, batched: BatchedArmEnv) -> None:
        if batched.num_envs != 1 or batched.autoreset:
            raise ValueError(
                f"SingleWorldEnv needs a batched env with num_envs=1 and autoreset off, got num_envs="
                f"{batched.num_envs}, autoreset={batched.autoreset}"
            )
        self.batched = batched
        self.contract = batched.contract
        self.observation_space = batched.single_observation_space
        self.action_space = batched.single_action_space

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        obs, infos = self.batched.reset(seed=None if seed is None else [seed], options=options)
        return _first(obs), _first_info(infos)

    def step(self, action: np.ndarray):
        obs, rewards, terminations, truncations, infos = self.batched.step(np.asarray(action)[None])
        return _first(obs), float(rewards[0]), bool(terminations[0]), bool(truncations[0]), _first_info(infos)

    def close(self) -> None:
        self.batched.close()


def _first(obs: Obs) -> dict[str, np.ndarray]:
    return {k: v[0].cpu().numpy() for k, v in obs.items()}


def _first_info(infos: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in infos.items():
        if key.startswith("_") or key in ("final_obs", "final_info"):
            continue
        if isinstance(value, dict):
            out[key] = _first_info(value)
        else:
            out[key] = bool(value[0]) if value.dtype == torch.bool else float(value[0])
    return out
