"""Memory-efficient ring replay: every frame is stored once and n-step returns are computed at sample time.

Storage is a ring of ``capacity`` *records*. Record ``i`` holds one observation frame and, if it is a step
record, the step taken from that frame:

  frames[key]  [C, ...]     observation at record i: uint8 images, float32 state (stored once, never twice)
  action       float32 [C, A]
  reward       float32 [C]
  terminated   bool    [C]  the step reached a terminal state (no bootstrap)
  is_step      bool    [C]  False for an episode's final-observation record: never a start index
  next         int64   [C]  the record holding the next observation of the step in record i; -1 while that
                            frame is not written yet (the newest step of an open episode) and for final records
  extras[key]  [C]          per-step side channels (``intervention``, ``grasp_penalty``, ...)

An episode of T steps takes T + 1 records: T step records and one final record holding the last
next-observation. A truncated episode is one whose last step is followed by its final record without
``terminated``. A whole episode (``add_episode``) is written contiguously. Step-by-step insertion (``add``)
goes through a named *stream*, one per concurrent actor: each stream holds one open episode, the streams'
records interleave in the ring, and ``next`` links each step to its successor. So a learner serving several
actors inserts every step the moment it arrives, as one process does, without cutting anyone's episode.

Records are written strictly in order at the write index by one method, ``_insert``. ``next`` always points
forward in write order, so while a record is in the ring so is everything its n-step window reaches. A start
index is *valid* when its whole n-step window (up to n steps, stopping at the episode end) and the window's
next frame are written. Steps of an open episode become valid once their full window is in the ring: the
newest next_obs of each stream is held in memory (``pending``) until the stream's next ``add`` writes it as
that step's obs, or the episode ends.

n-step windows never span a change of actor (the ``intervention`` extra, when stored): a policy step's
return stops at a human takeover and bootstraps from the takeover state's value under the policy. Otherwise
the last policy steps before a takeover would be credited with the corrections that follow, rewarding a
policy for stalling where a human steps in.

Goal-conditioned envs: with ``GoalRewards`` (``robot_rl.data.hindsight``) ``sample`` relabels a share of the
sampled transitions with a goal their episode achieved later and recomputes their n-step rewards. Symmetry /
DrQ augmentation wraps the sampled ``Batch`` (a ``Batch -> Batch`` transform of the agent); none applied here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch

from robot_rl.data.batch import Batch
from robot_rl.data.episode import Episode
from robot_rl.data.hindsight import ACHIEVED, DESIRED, EpisodeIndex, GoalRewards
from robot_rl.data.spaces import check_episode, describe_space
from robot_rl.envs.contract import INFO_KEYS, check_observation
from robot_rl.utils.atomic import atomic_write

REPLAY_FORMAT_VERSION = 2
"""2: explicit ``next`` links and named streams. Files of another version are refused by number."""
DEFAULT_STREAM = ""
INTERVENTION = "intervention"
"""The extra that says who acted (True: a human / corrector); n-step windows stop where it changes."""


@dataclass(frozen=True)
class ReplayConfig:
    """Replay buffer settings."""

    capacity: int = 200_000
    """Frame records in the ring; an episode of T steps uses T + 1 of them (memory ~ 1 frame per step)."""
    n_step: int = 1
    """Steps summed in the return before bootstrapping (1 = plain TD)."""
    gamma: float = 0.99
    """Per-step discount of the n-step return."""
    hindsight: Literal["auto", "on", "off"] = "auto"
    """Hindsight goal relabelling at sample time (``robot_rl.data.hindsight``): ``auto`` for goal-conditioned
    envs (achieved/desired goal observations and ``compute_reward``), ``on`` requires one, ``off`` never."""
    hindsight_fraction: float = 0.8
    """Share of sampled transitions relabelled with a future achieved goal of their episode."""

    def __post_init__(self) -> None:
        if self.n_step < 1:
            raise ValueError(f"ReplayConfig.n_step must be >= 1, got {self.n_step}")
        if self.capacity < self.n_step + 2:
            raise ValueError(f"ReplayConfig.capacity must be >= n_step + 2, got {self.capacity}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"ReplayConfig.gamma must be in [0, 1], got {self.gamma}")
        if self.hindsight not in ("auto", "on", "off"):
            raise ValueError(f"ReplayConfig.hindsight must be auto, on or off, got {self.hindsight!r}")
        if not 0.0 <= self.hindsight_fraction <= 1.0:
            raise ValueError(f"ReplayConfig.hindsight_fraction must be in [0, 1], got {self.hindsight_fraction}")


def _resolve_extras(extras_keys: Mapping[str, npt.DTypeLike] | Sequence[str]) -> dict[str, np.dtype]:
    if isinstance(extras_keys, Mapping):
        return {k: np.dtype(v) for k, v in extras_keys.items()}
    return {k: np.dtype(np.bool_ if k in INFO_KEYS else np.float32) for k in extras_keys}


@dataclass
class _OpenStream:
    """A stream's open episode: the newest step's next_obs (not written yet) and where its steps are."""

    pending: dict[str, np.ndarray]
    last: int
    """Ring index of the newest step record; its ``next`` is linked when the stream writes again."""
    last_serial: int
    """Write serial of that record (records ever written before it): tells whether the ring overwrote it."""
    tail: list[int] = field(default_factory=list)
    """The episode's newest <= n step records: the windows that may grow when the stream writes again."""


class ReplayBuffer:
    """Ring replay of single-frame records; ``sample`` returns n-step ``Batch``es (see the module docstring).

    extras_keys: side channels stored per step, as ``{name: dtype}`` or names (contract info keys such as
    ``intervention`` -> bool, anything else -> float32). ``add`` and ``add_episode`` must supply every one.
    goals: relabel sampled transitions with hindsight goals (``robot_rl.data.hindsight.goal_rewards_for``).
    """

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        action_dim: int,
        config: ReplayConfig | None = None,
        extras_keys: Mapping[str, npt.DTypeLike] | Sequence[str] = (),
        seed: int = 0,
        goals: GoalRewards | None = None,
    ) -> None:
        self.config = config or ReplayConfig()
        if goals is not None and not {ACHIEVED, DESIRED} <= set(observation_space.spaces):
            raise ValueError(f"ReplayBuffer goals: observations need {ACHIEVED!r} and {DESIRED!r} keys to relabel, "
                             f"got {sorted(observation_space.spaces)}")
        self.goals = goals
        self._episode_index = EpisodeIndex(self.config.capacity) if goals is not None else None
        self.observation_space = observation_space
        self.space_description = describe_space(observation_space)
        self.action_dim = int(action_dim)
        self.extras_dtypes = _resolve_extras(extras_keys)
        cap = self.config.capacity
        self._frames = {
            k: np.zeros((cap, *sub.shape), dtype=sub.dtype) for k, sub in observation_space.spaces.items()
        }
        self._action = np.zeros((cap, self.action_dim), np.float32)
        self._reward = np.zeros(cap, np.float32)
        self._terminated = np.zeros(cap, np.bool_)
        self._is_step = np.zeros(cap, np.bool_)
        self._next = np.full(cap, -1, np.int64)
        self._extras = {k: np.zeros(cap, dt) for k, dt in self.extras_dtypes.items()}
        self._valid = np.zeros(cap, np.bool_)
        self._valid_idx: np.ndarray | None = None
        self._ptr = 0  # next record to write
        self._written = 0  # records holding data (<= capacity)
        self._total = 0  # records ever written
        self._streams: dict[str, _OpenStream] = {}  # open per-step episodes by stream name
        self._rng = np.random.default_rng(seed)

    # ----------------------------------------------------------------------------------------- inspection
    @property
    def capacity(self) -> int:
        return self.config.capacity

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The storage arrays by name (``frames/<key>``, ``action``, ``next``, ``extras/<key>``, ...), each
        [C, ...]."""
        out = {f"frames/{k}": v for k, v in self._frames.items()}
        out.update(
            action=self._action,
            reward=self._reward,
            terminated=self._terminated,
            is_step=self._is_step,
            next=self._next,
        )
        out.update({f"extras/{k}": v for k, v in self._extras.items()})
        return out

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in self.arrays.values())

    @property
    def num_records(self) -> int:
        """Records currently holding data (frames in memory), <= capacity."""
        return self._written

    @property
    def open_streams(self) -> list[str]:
        """Streams with a per-step episode that has started and not ended."""
        return list(self._streams)

    @property
    def episode_open(self) -> bool:
        """True while any per-step episode has started and not ended."""
        return bool(self._streams)

    def __len__(self) -> int:
        """Number of sampleable transitions (valid start records)."""
        return len(self._valid_indices())

    def stream(self, name: str) -> ReplayStream:
        """A step-by-step view (``add`` / ``end_episode``) that inserts into stream ``name`` of this buffer."""
        return ReplayStream(self, name)

    # ------------------------------------------------------------------------------------------ insertion
    def add(
        self,
        obs: Mapping[str, np.ndarray],
        action: np.ndarray,
        reward: float,
        next_obs: Mapping[str, np.ndarray],
        terminated: bool,
        truncated: bool,
        extras: Mapping[str, object] | None = None,
        stream: str = DEFAULT_STREAM,
    ) -> None:
        """Insert one step as an actor produces it, into ``stream`` (one per concurrent actor).

        While the stream's episode is open (no ``terminated``/``truncated`` yet), ``obs`` must equal its
        previous ``next_obs``; call ``end_episode(stream)`` to abandon an episode.
        """
        where = f"ReplayBuffer.add (stream {stream!r})"
        check_observation(obs, self.observation_space, f"{where} obs")
        check_observation(next_obs, self.observation_space, f"{where} next_obs")
        act = np.asarray(action, dtype=np.float32)
        if act.shape != (self.action_dim,) or not np.all(np.isfinite(act)):
            raise ValueError(f"{where} action: expected finite [{self.action_dim}], got {act.tolist()}")
        if not np.isfinite(reward):
            raise ValueError(f"{where} reward: must be finite, got {reward}")
        ex = self._check_step_extras(extras, where)
        open_ = self._streams.get(stream)
        if open_ is not None and not all(np.array_equal(obs[k], v) for k, v in open_.pending.items()):
            raise ValueError(
                f"{where}: obs differs from the previous next_obs of the open episode; end that one "
                "with terminated/truncated=True or call end_episode() before starting a new one"
            )
        done = bool(terminated) or bool(truncated)
        keys = self._frames
        frames = {k: np.stack([obs[k], next_obs[k]]) if done else np.asarray(obs[k])[None] for k in keys}
        ex_rows = {k: np.asarray([v]) for k, v in ex.items()}
        self._insert_steps(frames, act[None], np.asarray([reward]), bool(terminated), ex_rows, done, stream)
        if not done:
            self._streams[stream].pending = {k: np.array(next_obs[k], copy=True) for k in keys}

    def end_episode(self, stream: str = DEFAULT_STREAM) -> bool:
        """Close ``stream``'s open per-step episode as truncated (its last next_obs is bootstrapped); False if
        none is open."""
        open_ = self._streams.get(stream)
        if open_ is None:
            return False
        frames = {k: v[None] for k, v in open_.pending.items()}
        no_extras = {k: np.zeros(0, dt) for k, dt in self.extras_dtypes.items()}
        empty = np.zeros((0, self.action_dim))
        self._insert_steps(frames, empty, np.zeros(0), False, no_extras, closed=True, stream=stream)
        return True

    def add_episode(self, episode: Episode) -> None:
        """Insert a whole episode (demos, uploads). Neither terminated nor truncated = cut: bootstrapped."""
        check_episode(episode, self.observation_space, self.action_dim, "ReplayBuffer.add_episode")
        if len(episode) == 0:
            return
        extras = {}
        for k, dt in self.extras_dtypes.items():
            if k not in episode.infos:
                raise ValueError(f"ReplayBuffer.add_episode: episode.infos lacks extras key {k!r}")
            extras[k] = np.asarray(episode.infos[k]).astype(dt)
            if dt.kind == "f" and not np.all(np.isfinite(extras[k])):
                raise ValueError(f"ReplayBuffer.add_episode: infos[{k!r}] contains NaN or Inf")
        obs = dict(episode.observations)
        self._insert_steps(obs, episode.actions, episode.rewards, episode.terminated, extras, closed=True)

    def _insert_steps(
        self,
        frames: Mapping[str, np.ndarray],
        actions: np.ndarray,
        rewards: np.ndarray,
        terminated: bool,
        extras: Mapping[str, np.ndarray],
        closed: bool,
        stream: str | None = None,
    ) -> None:
        """T steps -> records: frames [T + closed, ...], actions [T, A], rewards / extras [T].

        ``closed``: the last frame is the episode's final observation (a no-step record); ``terminated``: the
        last step reached a terminal state. ``stream``: the records continue that stream's open episode (and
        leave it open unless ``closed``); None for a whole episode.
        """
        t, k = len(actions), len(actions) + int(closed)
        pad = lambda x, dt: np.concatenate([np.asarray(x, dt), np.zeros((k - t, *np.shape(x)[1:]), dt)])  # noqa: E731
        term = np.zeros(k, np.bool_)
        term[t - 1 : t] = terminated
        self._insert(
            frames,
            pad(actions, np.float32),
            pad(rewards, np.float32),
            term,
            np.arange(k) < t,
            {key: pad(v, self.extras_dtypes[key]) for key, v in extras.items()},
            stream,
        )

    def _check_step_extras(self, extras: Mapping[str, object] | None, where: str) -> dict[str, object]:
        extras = dict(extras or {})
        missing, unknown = set(self.extras_dtypes) - set(extras), set(extras) - set(self.extras_dtypes)
        if missing or unknown:
            raise ValueError(
                f"{where} extras: missing {sorted(missing)}, unknown {sorted(unknown)} "
                f"(declared extras_keys: {sorted(self.extras_dtypes)})"
            )
        for k, v in extras.items():
            arr = np.asarray(v)
            if arr.ndim != 0 or (arr.dtype.kind == "f" and not np.isfinite(arr)):
                raise ValueError(f"{where} extras[{k!r}]: expected a finite scalar, got {v!r}")
        return extras

    def _insert(
        self,
        frames: Mapping[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        is_step: np.ndarray,
        extras: Mapping[str, np.ndarray],
        stream: str | None,
    ) -> None:
        """Write K consecutive records at the write index (the only writer), linked to each other and, for a
        stream, to its open episode's newest step. Shapes: frames [K, ...], action [K, A], reward / terminated /
        is_step / extras [K]."""
        cap, k = self.capacity, len(is_step)
        skip = max(0, k - cap)  # more records than the ring holds: only the last `cap` survive
        idx = (self._ptr + np.arange(skip, k)) % cap
        for key, store in self._frames.items():
            store[idx] = frames[key][skip:]
        self._action[idx] = action[skip:]
        self._reward[idx] = reward[skip:]
        self._terminated[idx] = terminated[skip:]
        self._is_step[idx] = is_step[skip:]
        for key, store in self._extras.items():
            store[idx] = extras[key][skip:]
        self._next[idx[:-1]] = idx[1:]
        self._next[idx[-1]] = -1
        self._ptr = (self._ptr + k) % cap
        self._written = min(self._written + k, cap)
        self._total += k

        refresh = [idx]
        open_ = self._streams.pop(stream, None) if stream is not None else None
        continues = open_ is not None and skip == 0 and self._total - open_.last_serial <= cap
        if continues:  # the stream's newest step survives: link it
            self._next[open_.last] = idx[0]
            refresh.insert(0, np.asarray(open_.tail, np.int64))
            tail = open_.tail
        else:  # a new episode, or one whose earlier records the ring has overwritten
            tail = []
        if self._episode_index is not None:
            self._episode_index.write(idx, open_.last if continues else None)
        if stream is not None and is_step[-1]:  # the stream's episode stays open
            n = self.config.n_step
            steps = [int(i) for i in idx]
            self._streams[stream] = _OpenStream({}, steps[-1], self._total - 1, (tail + steps)[-n:])
        self._refresh_valid(np.concatenate(refresh))

    # ------------------------------------------------------------------------------------------- sampling
    def _windows(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                     np.ndarray]:
        """n-step windows from ``starts`` [B] -> n_eff int, return float64, terminal bool, ok bool, bootstrap
        record int (each [B]) and the window's step records [n, B] (-1 past its end).

        The window follows ``next`` for up to n steps, stopping at a terminal step, before the episode's final
        record (truncation), or before a step taken by the other actor (policy vs human, the ``intervention``
        extra). ``ok`` is False unless ``starts`` is a step whose window and next frame are all written.
        """
        n, gamma = self.config.n_step, self.config.gamma
        n_eff = np.zeros(len(starts), np.int64)
        ret = np.zeros(len(starts), np.float64)
        terminal = np.zeros(len(starts), np.bool_)
        alive = self._is_step[starts].copy()
        complete = alive.copy()
        s, last = starts.copy(), starts.copy()
        path = np.full((n, len(starts)), -1, np.int64)
        actor = self._extras.get(INTERVENTION)
        for k in range(n):
            path[k] = np.where(alive, s, -1)
            ret += np.where(alive, gamma**k * self._reward[s], 0.0)
            n_eff += alive
            terminal |= alive & self._terminated[s]
            last = np.where(alive, s, last)
            nxt = self._next[s]
            written = nxt >= 0
            complete &= ~alive | written
            nxt = np.where(written, nxt, s)
            alive &= ~self._terminated[s] & written & self._is_step[nxt]
            if actor is not None:  # never across a takeover or hand-back: see the module notes
                alive &= actor[nxt] == actor[starts]
            s = np.where(alive, nxt, s)
        return n_eff, ret, terminal, complete, self._next[last], path

    def _refresh_valid(self, starts: np.ndarray) -> None:
        self._valid[starts] = self._windows(starts)[3]
        self._valid_idx = None

    def _valid_indices(self) -> np.ndarray:
        if self._valid_idx is None:
            self._valid_idx = np.flatnonzero(self._valid)
        return self._valid_idx

    def sample(self, batch_size: int, device: torch.device | str | None = None) -> Batch:
        """Uniformly sample ``batch_size`` n-step transitions (with replacement) from the seeded RNG, a share of
        them relabelled with hindsight goals when the buffer has ``goals``."""
        pool = self._valid_indices()
        if len(pool) == 0:
            raise ValueError("ReplayBuffer.sample: the buffer holds no sampleable transition yet")
        starts = pool[self._rng.integers(0, len(pool), size=batch_size)]
        relabel = None
        if self.goals is not None:
            relabel = np.flatnonzero(self._rng.random(batch_size) < self.goals.fraction)
        return self.gather(starts, device, relabel)

    def gather(self, starts: np.ndarray, device: torch.device | str | None = None,
               relabel: np.ndarray | None = None) -> Batch:
        """The ``Batch`` for the given valid start records ``starts`` [B] (vectorised, no per-sample loop);
        the rows ``relabel`` (indices into ``starts``) get a future achieved goal of their episode as their
        desired goal, and rewards recomputed for it (needs ``goals``)."""
        n_eff, ret, terminal, _, nxt, path = self._windows(starts)
        obs = {k: v[starts] for k, v in self._frames.items()}
        next_obs = {k: v[nxt] for k, v in self._frames.items()}
        if relabel is not None and len(relabel):
            if self.goals is None:
                raise ValueError("ReplayBuffer.gather: relabel needs a buffer made with goals")
            goal = self._frames[ACHIEVED][self._episode_index.later_records(starts[relabel], self._rng)]
            obs[DESIRED][relabel] = goal
            next_obs[DESIRED][relabel] = goal
            ret[relabel] = self._relabelled_returns(path[:, relabel], goal)
        discount = np.where(terminal, 0.0, self.config.gamma**n_eff).astype(np.float32)
        batch = Batch(
            obs={k: torch.from_numpy(v) for k, v in obs.items()},
            action=torch.from_numpy(self._action[starts]),
            reward=torch.from_numpy(ret.astype(np.float32)),
            discount=torch.from_numpy(discount),
            next_obs={k: torch.from_numpy(v) for k, v in next_obs.items()},
            extras={k: torch.from_numpy(v[starts]) for k, v in self._extras.items()},
        )
        return batch if device is None else batch.to(device)

    def _relabelled_returns(self, path: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """n-step returns of the windows ``path`` [n, B] (step records, -1 past the end) under goals [B, G]."""
        assert self.goals is not None
        ret = np.zeros(path.shape[1], np.float64)
        for k, steps in enumerate(path):
            live = np.flatnonzero(steps >= 0)
            if len(live) == 0:
                break
            achieved = self._frames[ACHIEVED][self._next[steps[live]]]
            ret[live] += self.config.gamma**k * self.goals.rewards(achieved, goal[live])
        return ret

    def _chains(self) -> list[list[int]]:
        """Each episode's records in the ring, in write order: the chain of ``next`` links from a step record no
        record links to (an episode whose start the ring overwrote starts at its oldest surviving step) through
        its final-observation record, if written."""
        cap = self.capacity
        order = np.arange(self._written) if self._written < cap else (self._ptr + np.arange(cap)) % cap
        linked = np.zeros(cap, np.bool_)
        links = self._next[order]
        linked[links[links >= 0]] = True
        chains = []
        for head in order[self._is_step[order] & ~linked[order]]:
            chain = [int(head)]
            while self._is_step[chain[-1]] and self._next[chain[-1]] >= 0:
                chain.append(int(self._next[chain[-1]]))
            chains.append(chain)
        return chains

    def episodes(self) -> list[Episode]:
        """The ring's contents as episodes in write order (``_chains``). An open episode ends at its stream's
        pending observation, as cut (neither terminated nor truncated)."""
        # a chain that stops at a step ends at that stream's pending frame (streams whose newest record the
        # ring overwrote hold nothing of theirs any more)
        cap = self.capacity
        pending = {o.last: o.pending for o in self._streams.values() if self._total - o.last_serial <= cap}
        out: list[Episode] = []
        for chain in self._chains():
            closed = not self._is_step[chain[-1]]
            idx = np.asarray(chain[:-1] if closed else chain)
            final = {k: v[chain[-1]] for k, v in self._frames.items()} if closed else pending[chain[-1]]
            terminated = bool(self._terminated[idx[-1]])
            out.append(
                Episode(
                    observations={k: np.concatenate([v[idx], final[k][None]]) for k, v in self._frames.items()},
                    actions=self._action[idx].copy(),
                    rewards=self._reward[idx].copy(),
                    terminated=closed and terminated,
                    truncated=closed and not terminated,
                    infos={k: v[idx].copy() for k, v in self._extras.items()},
                )
            )
        return out

    # ------------------------------------------------------------------------------------- checkpointing
    def _meta(self) -> dict[str, object]:
        return {
            "format_version": REPLAY_FORMAT_VERSION,
            "capacity": self.capacity,
            "n_step": self.config.n_step,
            "gamma": self.config.gamma,
            "action_dim": self.action_dim,
            "observation_space": self.space_description,
            "extras": {k: v.name for k, v in self.extras_dtypes.items()},
            "ptr": self._ptr,
            "written": self._written,
            "total": self._total,
            "streams": [
                {"name": name, "last": o.last, "last_serial": o.last_serial, "tail": o.tail}
                for name, o in self._streams.items()
            ],
            "rng_state": self._rng.bit_generator.state,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an ``.npz`` checkpoint (records, write index, open episodes, RNG state) atomically."""
        path = Path(path)
        arrays = {k: v[: self._written] for k, v in self.arrays.items()}
        for i, open_ in enumerate(self._streams.values()):
            arrays.update({f"pending/{i}/{k}": v for k, v in open_.pending.items()})
        arrays["meta"] = np.array(json.dumps(self._meta()))
        return atomic_write(path, lambda f: np.savez(f, **arrays))

    def load(self, path: str | os.PathLike[str], restore_rng: bool = True) -> None:
        """Restore a ``save`` checkpoint into this buffer (same space, action dim, extras and capacity).

        n_step and gamma may differ: returns are computed at sample time. With ``restore_rng`` the RNG goes on
        exactly where the saved buffer's did, so both draw identical samples.
        """
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            version = meta.get("format_version")
            if version != REPLAY_FORMAT_VERSION:
                raise ValueError(f"{path}: replay format_version={version!r}; this robot_rl reads format "
                                 f"{REPLAY_FORMAT_VERSION} (a run saved by another version: continue it with that one)")
            expected = {
                "capacity": self.capacity,
                "action_dim": self.action_dim,
                "observation_space": self.space_description,
                "extras": {k: v.name for k, v in self.extras_dtypes.items()},
            }
            for key, want in expected.items():
                if meta.get(key) != want:
                    raise ValueError(
                        f"{path}: checkpoint {key}={meta.get(key)!r} does not match buffer's {want!r}"
                    )
            written = int(meta["written"])
            self._ptr, self._written, self._total = int(meta["ptr"]), written, int(meta["total"])
            for name, store in self.arrays.items():
                store[:] = -1 if name == "next" else 0
                if name not in z.files:
                    raise ValueError(f"{path}: checkpoint lacks the {name!r} array")
                store[:written] = z[name]
            pending = {k: z[k] for k in z.files if k.startswith("pending/")}
        self._streams = {
            s["name"]: _OpenStream(
                {k.split("/", 2)[2]: v for k, v in pending.items() if k.split("/", 2)[1] == str(i)},
                int(s["last"]),
                int(s["last_serial"]),
                [int(j) for j in s["tail"]],
            )
            for i, s in enumerate(meta["streams"])
        }
        if restore_rng:
            self._rng.bit_generator.state = meta["rng_state"]
        self._valid[:] = False
        self._refresh_valid(np.arange(self.capacity))
        if self._episode_index is not None:
            self._episode_index.rebuild(self._chains())


class ReplayStream:
    """Step-by-step insertion into one stream of a shared ``ReplayBuffer`` (a ``StepBuffer``): one per
    concurrent actor, so their open episodes stay apart while every step is sampleable as soon as it is in."""

    def __init__(self, replay: ReplayBuffer, name: str) -> None:
        self.replay, self.name = replay, name

    def add(self, *step: Any, **kwargs: Any) -> None:
        """``ReplayBuffer.add(obs, action, reward, next_obs, terminated, truncated, extras)`` into this stream."""
        self.replay.add(*step, **kwargs, stream=self.name)

    def end_episode(self) -> bool:
        return self.replay.end_episode(self.name)
