"""``DeviceReplay``: the replay of N parallel worlds, kept on the device the worlds and the learner run on.

One ring per world, all advancing together (a vector env steps every world at once): step ``t`` of world ``w``
is at slot ``t % per_world``. Each slot holds the step's observation, action, reward, whether it ended the
episode (``ended``: terminated or truncated) and whether it reached a terminal state (``terminated``), and
the step's true next observation (the final one where the episode ended), so a batched env's auto-reset
loses nothing. n-step returns are computed at sample time with ``ReplayBuffer``'s rules: a window sums up
to n rewards, stops after the step that ends the episode, bootstraps from the next observation of its last
step, and has discount 0 when that step was terminal, ``gamma**steps`` otherwise. A start is sampled once its
full window is written: the newest n - 1 steps of every world wait one to n - 1 vector steps.

Storing each step's next observation beside its observation costs one extra state vector per step; for
state observations (tens of floats) that is far cheaper than a second index structure, and it keeps sampling
a handful of gathers.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch

from robot_rl.data.batch import Batch
from robot_rl.data.replay import ReplayConfig
from robot_rl.data.spaces import describe_space
from robot_rl.utils.atomic import atomic_write

DEVICE_REPLAY_FORMAT = 1


class DeviceReplay:
    def __init__(self, space: gym.spaces.Dict, action_dim: int, num_worlds: int, config: ReplayConfig,
                 extras: Mapping[str, torch.dtype], device: torch.device | str, seed: int = 0) -> None:
        if config.hindsight == "on":
            raise ValueError("DeviceReplay: hindsight relabelling needs the host ReplayBuffer (--replay.hindsight)")
        self.per_world = config.capacity // num_worlds
        if self.per_world < config.n_step + 1:
            raise ValueError(
                f"DeviceReplay: --replay.capacity {config.capacity} over {num_worlds} worlds leaves "
                f"{self.per_world} steps per world; it needs >= n_step + 1 = {config.n_step + 1} "
                f"(raise the capacity to at least {(config.n_step + 1) * num_worlds})"
            )
        self.config = config
        self.num_worlds = num_worlds
        self.action_dim = action_dim
        self.space_description = describe_space(space)
        self.device = torch.device(device)
        shape = (self.per_world, num_worlds)

        def zeros(*trailing: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
            return torch.zeros(*shape, *trailing, dtype=dtype, device=self.device)

        self.obs = {k: zeros(*s.shape) for k, s in space.spaces.items()}
        self.next_obs = {k: zeros(*s.shape) for k, s in space.spaces.items()}
        self.action = zeros(action_dim)
        self.reward = zeros()
        self.terminated = zeros(dtype=torch.bool)
        self.ended = zeros(dtype=torch.bool)
        self.extras = {k: zeros(dtype=dtype) for k, dtype in extras.items()}
        self.written = 0
        """Vector steps ever added (every world has this many steps, the newest ``per_world`` kept)."""
        self.generator = torch.Generator(device=self.device)
        self.generator.manual_seed(seed)
        for key, s in space.spaces.items():
            if not np.issubdtype(s.dtype, np.floating):
                raise ValueError(f"DeviceReplay stores float observations; {key!r} is {s.dtype} (images: use "
                                 "the host ReplayBuffer)")

    def __len__(self) -> int:
        """Sampleable transitions (starts whose n-step window is written)."""
        return max(0, min(self.written, self.per_world) - (self.config.n_step - 1)) * self.num_worlds

    def add(self, obs: Mapping[str, torch.Tensor], action: torch.Tensor, reward: torch.Tensor,
            next_obs: Mapping[str, torch.Tensor], terminated: torch.Tensor, ended: torch.Tensor,
            extras: Mapping[str, torch.Tensor] | None = None) -> None:
        """One vector step of every world: tensors with a first dimension of ``num_worlds``; ``next_obs`` the
        true next observations (a batched env's ``infos["final_obs"]``)."""
        slot = self.written % self.per_world
        for key in self.obs:
            self.obs[key][slot] = obs[key]
            self.next_obs[key][slot] = next_obs[key]
        self.action[slot] = action
        self.reward[slot] = reward
        self.terminated[slot] = terminated
        self.ended[slot] = ended
        for key, store in self.extras.items():
            store[slot] = (extras or {}).get(key, 0)
        self.written += 1

    def end_episodes(self) -> None:
        """Mark every world's newest step as the end of its episode (not terminal: its window bootstraps from
        the stored next observation), so no n-step window runs on into whatever the worlds do next."""
        if self.written > 0:
            self.ended[(self.written - 1) % self.per_world] = True

    def sample(self, batch_size: int, device: torch.device | str | None = None) -> Batch:
        """``batch_size`` uniformly drawn n-step transitions (with replacement)."""
        valid = len(self) // self.num_worlds
        if valid <= 0:
            raise ValueError("DeviceReplay.sample: the buffer holds no sampleable transition yet")
        oldest = max(0, self.written - self.per_world)
        t = oldest + torch.randint(valid, (batch_size,), generator=self.generator, device=self.device)
        w = torch.randint(self.num_worlds, (batch_size,), generator=self.generator, device=self.device)
        batch = self.gather(t, w)
        return batch if device is None else batch.to(device)

    def gather(self, steps: torch.Tensor, worlds: torch.Tensor) -> Batch:
        """The n-step transitions starting at vector step ``steps`` [B] (absolute, written and in the ring,
        with their window written) of ``worlds`` [B]."""
        n, gamma = self.config.n_step, self.config.gamma
        ret = torch.zeros(len(steps), dtype=torch.float32, device=self.device)
        alive = torch.ones(len(steps), dtype=torch.bool, device=self.device)
        terminal = torch.zeros_like(alive)
        count = torch.zeros(len(steps), dtype=torch.long, device=self.device)
        last = steps % self.per_world
        for k in range(n):
            slot = (steps + k) % self.per_world
            ret += torch.where(alive, gamma**k * self.reward[slot, worlds], 0.0)
            terminal |= alive & self.terminated[slot, worlds]
            count += alive.long()
            last = torch.where(alive, slot, last)
            alive &= ~self.ended[slot, worlds]
        first = steps % self.per_world
        discount = torch.where(terminal, 0.0, gamma ** count.float())
        return Batch(
            obs={k: v[first, worlds] for k, v in self.obs.items()},
            action=self.action[first, worlds],
            reward=ret,
            discount=discount,
            next_obs={k: v[last, worlds] for k, v in self.next_obs.items()},
            extras={k: v[first, worlds] for k, v in self.extras.items()},
        )

    # --- persistence ------------------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "format": DEVICE_REPLAY_FORMAT, "per_world": self.per_world, "num_worlds": self.num_worlds,
            "space": self.space_description, "written": self.written, "obs": self.obs,
            "next_obs": self.next_obs, "action": self.action, "reward": self.reward,
            "terminated": self.terminated, "ended": self.ended, "extras": self.extras,
            "generator": self.generator.get_state(),
        }

    def save(self, path: Path) -> Path:
        state = {k: _to_cpu(v) for k, v in self.state_dict().items()}
        return atomic_write(path, lambda f: torch.save(state, f))

    def load(self, path: Path) -> None:
        state = torch.load(path, map_location=self.device, weights_only=False)
        if state.get("format") != DEVICE_REPLAY_FORMAT:
            raise ValueError(f"{path}: device replay format {state.get('format')} is not the format "
                             f"{DEVICE_REPLAY_FORMAT} this robot_rl reads")
        mine = (self.per_world, self.num_worlds, self.space_description)
        theirs = (state["per_world"], state["num_worlds"], state["space"])
        if mine != theirs:
            raise ValueError(f"{path}: a replay of {theirs[1]} worlds x {theirs[0]} steps does not fit this run's "
                             f"{mine[1]} worlds x {mine[0]} steps (or its observation space differs)")
        for name in ("obs", "next_obs", "extras"):
            for key, value in state[name].items():
                getattr(self, name)[key].copy_(value)
        for name in ("action", "reward", "terminated", "ended"):
            getattr(self, name).copy_(state[name])
        self.written = int(state["written"])
        self.generator.set_state(state["generator"].cpu())


def _to_cpu(value):
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value.cpu() if isinstance(value, torch.Tensor) else value
