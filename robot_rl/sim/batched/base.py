"""``BatchedArmEnv``: N worlds of one task behind gymnasium's vector-env API, on any physics backend.

Every backend returns the CPU env's observations, rewards and flags stacked along a first ``num_envs`` axis, as
torch tensors on the backend's device:

- ``obs``: a dict like the CPU env's (``state`` (N, STATE_DIM) float32, ``privileged`` (N, P) float32, with
  ``action_history`` K > 0 ``previous_actions`` (N, K * 7) as ``robot_rl.envs.action_history`` describes it);
- ``rewards`` (N,) float32, ``terminations`` / ``truncations`` (N,) bool;
- ``infos``: the contract's info keys (``is_success``, ``safety_clipped``, ``intervention``) as (N,) bool
  tensors and ``reward_terms`` (the step's) as a dict of (N,) float32 tensors, each key with gymnasium's
  ``_key`` mask.

Auto-reset follows gymnasium's ``AutoresetMode.SAME_STEP``: a world that ends is reset within the step, the
returned observation is its new first one and its ``is_success`` / ``safety_clipped`` are the reset's;
``infos["final_obs"]`` then holds the true next observation of *every* world (the last observation where a
world ended, the returned one elsewhere), so a trainer stores ``(obs, action, reward, infos.get("final_obs",
next_obs))`` without indexing, and ``infos["final_info"]`` holds the step's own info.
``reset(options={"reset_mask": mask})`` resets a subset and leaves the other worlds untouched.

Every call returns fresh tensors that the env never writes into again (a trainer may keep them). Actions are
written into one persistent tensor, ``env.actions`` (N, 7): a policy that writes its output there
(``env.actions.copy_(policy(obs))``) and calls ``env.step(env.actions)`` hands it over without a copy.

The per-step maths is the CPU env's (``robot_rl.sim.env.ArmEnv``), once for all worlds: the action range clip,
action latency, the safety gate's torch twin (``robot_rl.safety.gate_torch``), the gripper latch, the task's
batched terms, observation noise, the wrist sensor's tare. The physics backend (``physics.Physics``) steps the
worlds and starts their episodes.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium.vector import AutoresetMode
from gymnasium.vector.utils import batch_space

from robot_rl.envs.action_history import history_space
from robot_rl.envs.contract import (
    ACTION_DIM,
    ACTION_HISTORY,
    GRIPPER_CLOSE_THRESHOLD,
    GRIPPER_OPEN_THRESHOLD,
    STATE_LAYOUT,
    check_action,
)
from robot_rl.safety.gate_torch import BatchedGate
from robot_rl.sim.arm import FINGER_MAX_OPENING_M
from robot_rl.sim.batched.physics import EpisodeStarts, Physics
from robot_rl.sim.batched.starts import Start, StartPool, randomises_model
from robot_rl.sim.env import ArmEnv
from robot_rl.sim.readings import WorldReadings

Obs = dict[str, torch.Tensor]


class BatchedArmEnv(gym.vector.VectorEnv):
    """N worlds of ``physics.template``'s task; ``autoreset`` as in ``BatchedEnvConfig``."""

    def __init__(self, physics: Physics, autoreset: bool = True, seed: int | None = None,
                 action_history: int = 0) -> None:
        template = physics.template
        self.physics = physics
        self.task = template.task
        self.task_name = template.task.name
        self.cfg = cfg = template.cfg
        self.contract = template.contract
        self.num_envs = n = physics.num_worlds
        self.device, self.dtype = device, dtype = physics.device, physics.dtype
        self.autoreset = autoreset
        self.metadata = {"autoreset_mode": AutoresetMode.SAME_STEP if autoreset else AutoresetMode.DISABLED}
        self.single_action_space = self.contract.action_space()
        self.single_observation_space = self.contract.observation_space()
        if action_history:
            self.single_observation_space[ACTION_HISTORY] = history_space(action_history, self.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, n)
        self.action_space = batch_space(self.single_action_space, n)
        self.actions = torch.zeros(n, ACTION_DIM, dtype=torch.float32, device=device)
        self.gate = BatchedGate(cfg.safety, device, dtype)
        self.reward_weights = dict(template.task.config.reward_weights)
        self.generator = torch.Generator(device=device)
        self.generator.seed() if seed is None else self.generator.manual_seed(seed)
        # The env-side state of every world (the CPU env keeps these per instance).
        self.target_pos = torch.zeros(n, 3, dtype=dtype, device=device)
        self.target_mat = torch.eye(3, dtype=dtype, device=device).repeat(n, 1, 1)
        self.gripper_open = torch.ones(n, dtype=torch.bool, device=device)
        self.wrench_bias = torch.zeros(n, 6, dtype=dtype, device=device)
        self.steps = torch.zeros(n, dtype=torch.long, device=device)
        self.latency_range = cfg.randomization.latency_range
        self.latency = torch.zeros(self.latency_range[1], n, ACTION_DIM, dtype=dtype, device=device)
        """The last actions of every world, oldest first (as many as the longest delay)."""
        self.delay = torch.full((n,), self.latency_range[1], dtype=torch.long, device=device)
        """Each world's action delay in control steps, drawn per episode from ``latency_range``."""
        self.history = torch.zeros(n, action_history, ACTION_DIM, dtype=torch.float32, device=device)
        """Every world's last ``action_history`` actions, newest first (zeros before its episode's first step)."""
        self._obs: Obs | None = None
        self._infos: dict[str, Any] | None = None
        self._ended = torch.zeros(n, dtype=torch.bool, device=device)
        self._all = torch.ones(n, dtype=torch.bool, device=device)
        self._world_index = torch.arange(n, device=device)

    # --- gymnasium vector-env API ---------------------------------------------------------------------
    def reset(self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None):
        seeds = self._seeds(seed)
        if seed is not None:  # the env's own draws (observation noise, a backend's start states) follow the seed
            given = [s for s in seeds if s is not None]
            self.generator.manual_seed(int(np.random.SeedSequence(given).generate_state(1)[0]) if given else 0)
        mask = self._reset_mask(options)
        if options is not None and set(options) - {"reset_mask"}:
            raise ValueError(f"reset(options=...): only 'reset_mask' is taken, got {sorted(options)}")
        worlds = np.flatnonzero(mask)
        readings = self._start(worlds, [seeds[i] for i in worlds])
        rows = torch.as_tensor(worlds, device=self.device)
        if self._obs is None or len(worlds) == self.num_envs:
            self._obs, self._infos = self._observe(readings), self._reset_infos(readings)
        else:  # new tensors: those handed out before stay as they were
            fresh = self._observe(_rows_of(readings, rows), rows)
            self._obs = {k: v.clone() for k, v in self._obs.items()}
            for key, value in fresh.items():
                self._obs[key][rows] = value
            self._infos = self._reset_infos(readings, base=self._infos, rows=rows)
        return dict(self._obs), self._infos

    def step(self, actions: torch.Tensor | np.ndarray):
        self._take_actions(actions)
        if bool(self._ended.any()):
            raise RuntimeError(
                f"step(): world(s) {self._ended.nonzero().flatten()[:8].tolist()} ended at the previous step and "
                f"autoreset is off; reset them first with reset(options={{'reset_mask': mask}})"
            )
        raw = self.actions.to(self.dtype)
        a = raw.clamp(-1.0, 1.0)
        clipped = (a != raw).any(dim=1)
        if self.history.shape[1]:
            self.history = torch.cat([a[:, None].to(torch.float32), self.history[:, :-1]], dim=1)
        if len(self.latency):
            history = torch.cat([self.latency, a[None]])  # row len(self.latency) - d: the action d steps ago
            a, self.latency = history[len(self.latency) - self.delay, self._world_index], history[1:]
        before = self.physics.readings()
        self.target_pos, self.target_mat, gated = self.gate.pose_step(
            (self.target_pos, self.target_mat), a, (before.tcp_pos, before.tcp_mat)
        )
        grip = a[:, 6]
        self.gripper_open = torch.where(grip <= GRIPPER_CLOSE_THRESHOLD, False,
                                        torch.where(grip >= GRIPPER_OPEN_THRESHOLD, True, self.gripper_open))
        self.physics.control(self.target_pos, self.target_mat, self.gripper_open.to(self.dtype) * FINGER_MAX_OPENING_M)
        self.physics.step(self.cfg.substeps)
        self.steps += 1
        after = self.physics.readings()
        success = self.task.batched_success(after)
        terms = self.task.batched_reward_terms(after)
        reward = success.to(self.dtype)
        if self.cfg.dense_reward:
            for name, weight in self.reward_weights.items():
                reward = reward + weight * terms[name]
        terminated = success & self.cfg.terminate_on_success
        truncated = ~terminated & (self.steps >= self.cfg.max_episode_steps)
        obs = self._observe(after)
        infos = self._step_infos(success, clipped | gated, terms)
        ended = terminated | truncated
        if self.autoreset and bool(ended.any()):
            infos["final_obs"] = {k: v.clone() for k, v in obs.items()}
            infos["_final_obs"] = ended.clone()
            infos["final_info"] = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in infos.items()
                                   if k not in ("final_obs", "_final_obs")}
            infos["_final_info"] = infos["_final_obs"]
            worlds = ended.nonzero().flatten()
            readings = self._start(worlds.cpu().numpy(), [None] * len(worlds))
            fresh = self._observe(_rows_of(readings, worlds), worlds)
            for key, value in fresh.items():
                obs[key][worlds] = value
            infos["is_success"] = infos["is_success"].clone()
            infos["is_success"][worlds] = self.task.batched_success(_rows_of(readings, worlds))
            infos["safety_clipped"] = infos["safety_clipped"] & ~ended
        if not self.autoreset:
            self._ended = ended.clone()
        self._obs, self._infos = obs, infos
        return dict(obs), reward.to(torch.float32), terminated, truncated, infos

    def start_from(self, worlds: list[int], envs: list[ArmEnv]) -> Obs:
        """Put ``worlds`` into the exact current states of the CPU envs ``envs`` (physics, sensors, impedance
        target, gripper latch, tare, randomised model parameters), as episodes starting now; return the
        observation of every world. For parity checks against the CPU env, and to replay a situation."""
        pool = StartPool.of([Start.of(env, randomises_model(env)) for env in envs], self.device, self.dtype)
        picks = torch.arange(len(envs), device=self.device)
        rows = np.asarray(worlds)
        self._set_episode_state(rows, self.physics.load(rows, pool, picks))
        self._obs = self._observe(self.physics.readings())
        return dict(self._obs)

    def close(self, **kwargs: Any) -> None:
        self.physics.close()
        self.closed = True

    # --- internals -----------------------------------------------------------------------------------
    def _start(self, worlds: np.ndarray, seeds: list[int | None]) -> WorldReadings:
        """Start the episodes of ``worlds`` (indices): the backend's physics, then the env-side state."""
        self._set_episode_state(worlds, self.physics.start_episodes(worlds, seeds, self.generator))
        return self.physics.readings()

    def _set_episode_state(self, worlds: np.ndarray, starts: EpisodeStarts) -> None:
        rows = torch.as_tensor(worlds, device=self.device)
        self.target_pos[rows] = starts.target_pos
        self.target_mat[rows] = starts.target_mat
        self.gripper_open[rows] = starts.gripper_open
        self.wrench_bias[rows] = starts.wrench_bias
        self.steps[rows] = 0
        self.latency[:, rows] = 0.0
        self.history[rows] = 0.0
        low, high = self.latency_range
        if low < high:  # a fixed delay draws nothing
            self.delay[rows] = torch.randint(low, high + 1, (len(rows),), generator=self.generator,
                                             device=self.device)
        self._ended[rows] = False

    def _observe(self, worlds: WorldReadings, rows: torch.Tensor | None = None) -> Obs:
        """The contract observation of ``worlds``: every world's, or the world indices ``rows`` of ``_rows_of``."""
        bias = self.wrench_bias if rows is None else self.wrench_bias[rows]
        wrench = worlds.raw_wrench() - bias
        parts = {
            "tcp_pos": worlds.tcp_pos,
            "tcp_rot6d": torch.cat([worlds.tcp_mat[:, :, 0], worlds.tcp_mat[:, :, 1]], dim=-1),
            "tcp_linvel": worlds.sensor("tcp_linvel"),
            "tcp_angvel": worlds.sensor("tcp_angvel"),
            "gripper_opening": worlds.gripper_opening[:, None],
            "wrench_force": wrench[:, :3],
            "wrench_torque": wrench[:, 3:],
        }
        obs = {"state": self._noisy(torch.cat([parts[f.name] for f in STATE_LAYOUT.fields], dim=-1))}
        if self.task.privileged_layout:
            obs["privileged"] = self._noisy(self.task.batched_privileged(worlds))
        if self.history.shape[1]:
            obs[ACTION_HISTORY] = (self.history if rows is None else self.history[rows]).flatten(1).clone()
        return obs

    def _noisy(self, x: torch.Tensor) -> torch.Tensor:
        std = self.cfg.randomization.obs_noise_std
        if std > 0:
            x = x + std * torch.randn(x.shape, generator=self.generator, dtype=x.dtype, device=x.device)
        return x.to(torch.float32)

    def _step_infos(self, success: torch.Tensor, clipped: torch.Tensor,
                    terms: dict[str, torch.Tensor]) -> dict[str, Any]:
        infos: dict[str, Any] = {
            "intervention": torch.zeros_like(success), "safety_clipped": clipped, "is_success": success,
            "reward_terms": {k: v.to(torch.float32) for k, v in terms.items()},
        }
        for key in list(infos):
            infos[f"_{key}"] = self._all
        infos["reward_terms"].update({f"_{k}": self._all for k in terms})
        return infos

    def _reset_infos(self, worlds: WorldReadings, base: dict[str, Any] | None = None,
                     rows: torch.Tensor | None = None) -> dict[str, Any]:
        success = self.task.batched_success(worlds)
        if base is None or rows is None:
            zeros = torch.zeros_like(success)
            terms = {k: v.to(torch.float32) for k, v in self.task.batched_reward_terms(worlds).items()}
            return self._step_infos(success, zeros, terms)
        infos = {k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in base.items()}
        infos["is_success"][rows] = success[rows]
        infos["safety_clipped"][rows] = False
        return infos

    # --- argument checks --------------------------------------------------------------------------------
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


def _rows_of(worlds: WorldReadings, rows: torch.Tensor) -> WorldReadings:
    """The readings of the world indices ``rows`` only."""
    return WorldReadings(worlds.layout, worlds.sensordata[rows], worlds.qpos[rows], worlds.mocap_pos[rows])


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
