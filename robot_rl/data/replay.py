"""Memory-efficient ring replay: every frame is stored once and n-step returns are computed at sample time.

Storage is a ring of ``capacity`` *records*. Record ``i`` holds one observation frame and, if it is a step
record, the step taken from that frame:

  frames[key]  [C, ...]     observation at record i: uint8 images, float32 state (stored once, never twice)
  action       float32 [C, A]
  reward       float32 [C]
  terminated   bool    [C]  the step reached a terminal state (no bootstrap)
  is_step      bool    [C]  False for an episode's final-observation record: never a start index
  extras[key]  [C]          per-step side channels (``intervention``, ``grasp_penalty``, ...)

The next observation of the step in record ``i`` is the frame of record ``(i + 1) % C``. An episode of T steps
takes T + 1 records: T step records and one final record holding the last next-observation. A truncated
episode is simply one whose last step is followed by its final record without ``terminated``.

Records are written strictly in order at the write index by one method, ``_insert``; that is the single place
an append-only on-disk log (crash-safe persistence) will hook into. A start index is *valid* when its whole
n-step window (up to n steps, stopping at the episode end) and the window's next frame were written after it,
i.e. the window never crosses the write index into overwritten or not-yet-written data. Steps of an episode
still in progress become valid once their full window is in the ring: the newest next_obs of an open episode
is held in memory (``_pending``) until the next ``add`` writes it as that step's obs, or the episode ends.

n-step windows never span a change of actor (the ``intervention`` extra, when stored): a policy step's
return stops at a human takeover and bootstraps from the takeover state's value under the policy. Otherwise
the last policy steps before a takeover would be credited with the corrections that follow, rewarding a
policy for stalling where a human steps in.

Symmetry / DrQ augmentation is meant to wrap ``sample`` (a ``Batch -> Batch`` transform); none applied here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import numpy.typing as npt
import torch

from robot_rl.data.batch import Batch
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import INFO_KEYS, check_observation

REPLAY_FORMAT_VERSION = 1
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

    def __post_init__(self) -> None:
        if self.n_step < 1:
            raise ValueError(f"ReplayConfig.n_step must be >= 1, got {self.n_step}")
        if self.capacity < self.n_step + 2:
            raise ValueError(f"ReplayConfig.capacity must be >= n_step + 2, got {self.capacity}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"ReplayConfig.gamma must be in [0, 1], got {self.gamma}")


def describe_space(space: gym.spaces.Dict) -> dict[str, dict[str, object]]:
    """``{key: {"shape": [...], "dtype": "uint8"}}``: a JSON-able description of a Dict of Boxes."""
    out: dict[str, dict[str, object]] = {}
    for key, sub in space.spaces.items():
        if not isinstance(sub, gym.spaces.Box):
            raise ValueError(f"observation space[{key!r}]: only Box sub-spaces are supported, got {sub}")
        out[key] = {"shape": list(sub.shape), "dtype": np.dtype(sub.dtype).name}
    return out


def space_from_description(desc: Mapping[str, Mapping[str, object]]) -> gym.spaces.Dict:
    """Inverse of ``describe_space`` (bounds are not kept: uint8 -> [0, 255], floats -> unbounded)."""
    spaces: dict[str, gym.spaces.Space] = {}
    for key, d in desc.items():
        dtype = np.dtype(str(d["dtype"]))
        shape = tuple(int(s) for s in d["shape"])  # type: ignore[attr-defined]
        low, high = (0, 255) if dtype == np.uint8 else (-np.inf, np.inf)
        spaces[key] = gym.spaces.Box(low, high, shape, dtype)
    return gym.spaces.Dict(spaces)


def check_episode(episode: Episode, space: gym.spaces.Dict, action_dim: int, source: str = "episode") -> None:
    """Raise ``ValueError`` naming ``source`` and the key when ``episode`` breaks ``space``/``action_dim``."""
    missing, extra = (
        set(space.spaces) - set(episode.observations),
        set(episode.observations) - set(space.spaces),
    )
    if missing or extra:
        raise ValueError(
            f"{source}: observation keys differ (missing {sorted(missing)}, extra {sorted(extra)})"
        )
    t = len(episode)
    for key, sub in space.spaces.items():
        value = episode.observations[key]
        if value.shape != (t + 1, *sub.shape) or value.dtype != sub.dtype:
            raise ValueError(
                f"{source}: observations[{key!r}] expected {sub.dtype}{[t + 1, *sub.shape]}, "
                f"got {value.dtype}{list(value.shape)}"
            )
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"{source}: observations[{key!r}] contains NaN or Inf")
    if episode.actions.shape != (t, action_dim) or not np.all(np.isfinite(episode.actions)):
        raise ValueError(
            f"{source}: actions must be finite [{t}, {action_dim}], got {list(episode.actions.shape)}"
        )
    if not np.all(np.isfinite(episode.rewards)):
        raise ValueError(f"{source}: rewards contain NaN or Inf")


def _resolve_extras(extras_keys: Mapping[str, npt.DTypeLike] | Sequence[str]) -> dict[str, np.dtype]:
    if isinstance(extras_keys, Mapping):
        return {k: np.dtype(v) for k, v in extras_keys.items()}
    return {k: np.dtype(np.bool_ if k in INFO_KEYS else np.float32) for k in extras_keys}


class ReplayBuffer:
    """Ring replay of single-frame records; ``sample`` returns n-step ``Batch``es (see the module docstring).

    extras_keys: side channels stored per step, as ``{name: dtype}`` or names (contract info keys such as
    ``intervention`` -> bool, anything else -> float32). ``add`` and ``add_episode`` must supply every one.
    """

    def __init__(
        self,
        observation_space: gym.spaces.Dict,
        action_dim: int,
        config: ReplayConfig | None = None,
        extras_keys: Mapping[str, npt.DTypeLike] | Sequence[str] = (),
        seed: int = 0,
    ) -> None:
        self.config = config or ReplayConfig()
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
        self._extras = {k: np.zeros(cap, dt) for k, dt in self.extras_dtypes.items()}
        self._valid = np.zeros(cap, np.bool_)
        self._valid_idx: np.ndarray | None = None
        self._ptr = 0  # next record to write
        self._written = 0  # records holding data (<= capacity)
        self._total = 0  # records ever written
        self._pending: dict[str, np.ndarray] | None = None  # next_obs of an open episode's last step
        self._rng = np.random.default_rng(seed)

    # ----------------------------------------------------------------------------------------- inspection
    @property
    def capacity(self) -> int:
        return self.config.capacity

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        """The storage arrays by name (``frames/<key>``, ``action``, ``extras/<key>``, ...), each [C, ...]."""
        out = {f"frames/{k}": v for k, v in self._frames.items()}
        out.update(
            action=self._action, reward=self._reward, terminated=self._terminated, is_step=self._is_step
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
    def episode_open(self) -> bool:
        """True while a per-step episode has started and not ended."""
        return self._pending is not None

    def __len__(self) -> int:
        """Number of sampleable transitions (valid start records)."""
        return len(self._valid_indices())

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
    ) -> None:
        """Insert one step as an actor produces it.

        While an episode is open (no ``terminated``/``truncated`` yet), ``obs`` must equal the previous
        ``next_obs``; call ``end_episode`` to abandon an episode.
        """
        check_observation(obs, self.observation_space, "ReplayBuffer.add obs")
        check_observation(next_obs, self.observation_space, "ReplayBuffer.add next_obs")
        act = np.asarray(action, dtype=np.float32)
        if act.shape != (self.action_dim,) or not np.all(np.isfinite(act)):
            raise ValueError(
                f"ReplayBuffer.add action: expected finite [{self.action_dim}], got {act.tolist()}"
            )
        if not np.isfinite(reward):
            raise ValueError(f"ReplayBuffer.add reward: must be finite, got {reward}")
        ex = self._check_step_extras(extras)
        if self._pending is not None and not all(np.array_equal(obs[k], v) for k, v in self._pending.items()):
            raise ValueError(
                "ReplayBuffer.add: obs differs from the previous next_obs of the open episode; end that one "
                "with terminated/truncated=True or call end_episode() before starting a new one"
            )
        done = bool(terminated) or bool(truncated)
        keys = self._frames
        frames = {k: np.stack([obs[k], next_obs[k]]) if done else np.asarray(obs[k])[None] for k in keys}
        ex_rows = {k: np.asarray([v]) for k, v in ex.items()}
        self._insert_steps(frames, act[None], np.asarray([reward]), bool(terminated), ex_rows, closed=done)
        self._pending = None if done else {k: np.array(next_obs[k], copy=True) for k in keys}

    def end_episode(self) -> bool:
        """Close an open per-step episode as truncated (its last next_obs is bootstrapped); False if none."""
        if self._pending is None:
            return False
        frames = {k: v[None] for k, v in self._pending.items()}
        no_extras = {k: np.zeros(0, dt) for k, dt in self.extras_dtypes.items()}
        self._insert_steps(frames, np.zeros((0, self.action_dim)), np.zeros(0), False, no_extras, closed=True)
        self._pending = None
        return True

    def add_episode(self, episode: Episode) -> None:
        """Insert a whole episode (demos, uploads). Neither terminated nor truncated = cut: bootstrapped."""
        if self._pending is not None:
            raise ValueError("ReplayBuffer.add_episode: a per-step episode is open; call end_episode() first")
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
    ) -> None:
        """T steps -> records: frames [T + closed, ...], actions [T, A], rewards / extras [T].

        ``closed``: the last frame is the episode's final observation (a no-step record); ``terminated``: the
        last step reached a terminal state.
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
        )

    def _check_step_extras(self, extras: Mapping[str, object] | None) -> dict[str, object]:
        extras = dict(extras or {})
        missing, unknown = set(self.extras_dtypes) - set(extras), set(extras) - set(self.extras_dtypes)
        if missing or unknown:
            raise ValueError(
                f"ReplayBuffer.add extras: missing {sorted(missing)}, unknown {sorted(unknown)} "
                f"(declared extras_keys: {sorted(self.extras_dtypes)})"
            )
        for k, v in extras.items():
            arr = np.asarray(v)
            if arr.ndim != 0 or (arr.dtype.kind == "f" and not np.isfinite(arr)):
                raise ValueError(f"ReplayBuffer.add extras[{k!r}]: expected a finite scalar, got {v!r}")
        return extras

    def _insert(
        self,
        frames: Mapping[str, np.ndarray],
        action: np.ndarray,
        reward: np.ndarray,
        terminated: np.ndarray,
        is_step: np.ndarray,
        extras: Mapping[str, np.ndarray],
    ) -> None:
        """Write K consecutive records at the write index (the only writer). Shapes: frames [K, ...],
        action [K, A], reward / terminated / is_step / extras [K]."""
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
        old_ptr = self._ptr
        self._ptr = (self._ptr + k) % cap
        self._written = min(self._written + k, cap)
        self._total += k
        n = self.config.n_step
        self._refresh_valid((old_ptr - n + np.arange(min(k + n, cap))) % cap)

    # ------------------------------------------------------------------------------------------- sampling
    def _windows(self, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """n-step windows from ``starts`` [B] -> n_eff int, return float64, terminal bool, ok bool (each [B]).

        The window stops after n steps, at a terminal step, before the episode's final record (truncation),
        or before a step taken by the other actor (policy vs human, the ``intervention`` extra).
        ``ok`` is False when the window plus its next frame would cross the write index (stale or unwritten).
        """
        cap, n, gamma = self.capacity, self.config.n_step, self.config.gamma
        n_eff = np.zeros(len(starts), np.int64)
        ret = np.zeros(len(starts), np.float64)
        terminal = np.zeros(len(starts), np.bool_)
        alive = self._is_step[starts].copy()
        actor = self._extras.get(INTERVENTION)
        for k in range(n):
            s = (starts + k) % cap
            ret += np.where(alive, gamma**k * self._reward[s], 0.0)
            n_eff += alive
            terminal |= alive & self._terminated[s]
            alive &= ~self._terminated[s] & self._is_step[(s + 1) % cap]
            if actor is not None:  # never across a takeover or hand-back: see the module notes
                alive &= actor[(s + 1) % cap] == actor[starts]
        dist = (self._ptr - starts) % cap  # offset of the write index from the start
        return n_eff, ret, terminal, ~((dist >= 1) & (dist <= n_eff))

    def _refresh_valid(self, starts: np.ndarray) -> None:
        _, _, _, ok = self._windows(starts)
        self._valid[starts] = self._is_step[starts] & ok
        self._valid_idx = None

    def _valid_indices(self) -> np.ndarray:
        if self._valid_idx is None:
            self._valid_idx = np.flatnonzero(self._valid)
        return self._valid_idx

    def sample(self, batch_size: int, device: torch.device | str | None = None) -> Batch:
        """Uniformly sample ``batch_size`` n-step transitions (with replacement) from the seeded RNG."""
        pool = self._valid_indices()
        if len(pool) == 0:
            raise ValueError("ReplayBuffer.sample: the buffer holds no sampleable transition yet")
        starts = pool[self._rng.integers(0, len(pool), size=batch_size)]
        return self.gather(starts, device)

    def gather(self, starts: np.ndarray, device: torch.device | str | None = None) -> Batch:
        """The ``Batch`` for the given valid start records ``starts`` [B] (vectorised, no per-sample loop)."""
        n_eff, ret, terminal, _ = self._windows(starts)
        nxt = (starts + n_eff) % self.capacity
        discount = np.where(terminal, 0.0, self.config.gamma**n_eff).astype(np.float32)
        batch = Batch(
            obs={k: torch.from_numpy(v[starts]) for k, v in self._frames.items()},
            action=torch.from_numpy(self._action[starts]),
            reward=torch.from_numpy(ret.astype(np.float32)),
            discount=torch.from_numpy(discount),
            next_obs={k: torch.from_numpy(v[nxt]) for k, v in self._frames.items()},
            extras={k: torch.from_numpy(v[starts]) for k, v in self._extras.items()},
        )
        return batch if device is None else batch.to(device)

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
            "rng_state": self._rng.bit_generator.state,
        }

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write an ``.npz`` checkpoint (records, write index, open episode, RNG state) atomically."""
        path = Path(path)
        arrays = {k: v[: self._written] for k, v in self.arrays.items()}
        if self._pending is not None:
            arrays.update({f"pending/{k}": v for k, v in self._pending.items()})
        arrays["meta"] = np.array(json.dumps(self._meta()))
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            np.savez(f, **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def load(self, path: str | os.PathLike[str], restore_rng: bool = True) -> None:
        """Restore a ``save`` checkpoint into this buffer (same space, action dim, extras and capacity).

        n_step and gamma may differ: returns are computed at sample time. With ``restore_rng`` the RNG goes on
        exactly where the saved buffer's did, so both draw identical samples.
        """
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            expected = {
                "format_version": REPLAY_FORMAT_VERSION,
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
            for name, store in self.arrays.items():
                store[:] = 0
                store[:written] = z[name]
            pending = {k[len("pending/") :]: z[k] for k in z.files if k.startswith("pending/")}
        self._pending = pending or None
        self._ptr, self._written, self._total = int(meta["ptr"]), written, int(meta["total"])
        if restore_rng:
            self._rng.bit_generator.state = meta["rng_state"]
        self._valid[:] = False
        self._refresh_valid(np.arange(self.capacity))
