"""Records and weights on the wire: observation arrays as (zlib-)compressed bytes, weights as a torch file of
tensors only (loaded with ``weights_only=True``: the actor never unpickles code from the network)."""

from __future__ import annotations

import io
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robot_rl.agents.policy import ActingPolicy
from robot_rl.distributed.protocol import pb
from robot_rl.envs.contract import check_observation


class RecordError(ValueError):
    """A record from an actor is malformed or breaks the learner's spec (the push is refused)."""


def encode_tensor(key: str, value: np.ndarray, level: int) -> Any:
    arr = np.ascontiguousarray(value)
    if arr.dtype.byteorder == ">":
        arr = arr.astype(arr.dtype.newbyteorder("<"))
    raw = arr.tobytes()
    compress = level > 0 and arr.dtype == np.uint8 and arr.ndim >= 2  # images; small float vectors stay raw
    return pb.Tensor(
        key=key,
        dtype=arr.dtype.name,
        shape=list(arr.shape),
        codec=pb.ZLIB if compress else pb.RAW,
        data=zlib.compress(raw, level) if compress else raw,
    )


def decode_tensor(t: Any) -> np.ndarray:
    try:
        dtype = np.dtype(t.dtype)
    except TypeError as e:
        raise RecordError(f"obs[{t.key!r}]: unknown dtype {t.dtype!r}") from e
    shape = tuple(int(s) for s in t.shape)
    expected = int(np.prod(shape)) * dtype.itemsize
    if t.codec == pb.ZLIB:
        d = zlib.decompressobj()
        try:
            raw = d.decompress(t.data, expected)  # bounded: a hostile stream cannot blow up memory
        except zlib.error as e:
            raise RecordError(f"obs[{t.key!r}]: corrupt zlib data ({e})") from e
        if d.unconsumed_tail:
            raise RecordError(f"obs[{t.key!r}]: decompresses to more than {expected} bytes")
    elif t.codec == pb.RAW:
        raw = t.data
    else:
        raise RecordError(f"obs[{t.key!r}]: unknown codec {t.codec}")
    if len(raw) != expected:
        raise RecordError(
            f"obs[{t.key!r}]: {len(raw)} bytes for {t.dtype}{list(shape)} ({expected} expected)"
        )
    return np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=False).reshape(shape)


def encode_record(
    seq: int,
    episode: int,
    index: int,
    obs: Mapping[str, np.ndarray],
    *,
    is_step: bool,
    action: np.ndarray | None = None,
    reward: float = 0.0,
    terminated: bool = False,
    truncated: bool = False,
    cut: bool = False,
    extras: Mapping[str, float] | None = None,
    policy_version: int = 0,
    actor_time: float | None = None,
    level: int = 1,
) -> bytes:
    """One serialized ``pb.Record`` (see ``link.proto``)."""
    rec = pb.Record(
        seq=seq,
        episode=episode,
        index=index,
        obs=[encode_tensor(k, v, level) for k, v in obs.items()],
        is_step=is_step,
        action=[] if action is None else np.asarray(action, np.float32).tolist(),
        reward=float(reward),
        terminated=bool(terminated),
        truncated=bool(truncated),
        cut_by_drop_policy=bool(cut),
        extras={k: float(v) for k, v in (extras or {}).items()},
        policy_version=policy_version,
        actor_time=time.time() if actor_time is None else actor_time,
    )
    return rec.SerializeToString()


@dataclass
class RecordData:
    """A decoded, validated record. ``obs``: ``{key: array}`` as the env emitted it; ``action``: float32
    [A] (None for an end record)."""

    seq: int
    episode: int
    index: int
    obs: dict[str, np.ndarray]
    is_step: bool
    action: np.ndarray | None
    reward: float
    terminated: bool
    truncated: bool
    cut: bool
    policy_version: int
    actor_time: float
    extras: dict[str, float] = field(default_factory=dict)


def decode_record(raw: bytes, space: gym.spaces.Dict, action_dim: int) -> RecordData:
    """Parse and validate one record against the learner's observation space and action dim."""
    try:
        rec = pb.Record.FromString(raw)
    except Exception as e:  # protobuf raises DecodeError (a subclass of Exception)
        raise RecordError(f"unparseable record ({type(e).__name__}: {e})") from e
    obs = {t.key: decode_tensor(t) for t in rec.obs}
    try:
        check_observation(obs, space, f"record seq {rec.seq} obs")
    except ValueError as e:
        raise RecordError(str(e)) from e
    action = None
    if rec.is_step:
        action = np.asarray(rec.action, np.float32)
        if action.shape != (action_dim,) or not np.all(np.isfinite(action)):
            raise RecordError(
                f"record seq {rec.seq}: action must be finite [{action_dim}], got {list(rec.action)}"
            )
        if not np.isfinite(rec.reward):
            raise RecordError(f"record seq {rec.seq}: reward is not finite")
    extras = dict(rec.extras)
    if not all(np.isfinite(v) for v in extras.values()):
        raise RecordError(f"record seq {rec.seq}: extras contain NaN or Inf: {extras}")
    return RecordData(
        seq=rec.seq, episode=rec.episode, index=rec.index, obs=obs, is_step=rec.is_step, action=action,
        reward=float(rec.reward), terminated=rec.terminated, truncated=rec.truncated,
        cut=rec.cut_by_drop_policy, policy_version=rec.policy_version, actor_time=rec.actor_time,
        extras=extras,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------------ weights
SCHEDULE = "schedule"
"""Entry of a weights payload beside the policy's modules: what else the actor acts on (the guide's h)."""


def _frozen_prefixes(agent: ActingPolicy) -> list[str]:
    frozen = {id(m) for m in agent.encoder.frozen_modules()}
    return [
        f"{name}."
        for name, module in agent.encoder.named_modules(remove_duplicate=False)
        if id(module) in frozen
    ]


def actor_payload(agent: ActingPolicy) -> dict[str, Any]:
    """``agent.actor_state_dict()`` without frozen backbone weights (the actor loads those locally)."""
    state = agent.actor_state_dict()
    prefixes = _frozen_prefixes(agent)
    if prefixes:
        state["encoder"] = {k: v for k, v in state["encoder"].items() if not k.startswith(tuple(prefixes))}
    return state


def dump_weights(agent: ActingPolicy, guide_h: int | None = None) -> bytes:
    """The acting policy's weights, and the jump-start guide's current h when the run has a guide (actors act
    on both together)."""
    payload = {k: {n: t.detach().cpu() for n, t in v.items()} for k, v in actor_payload(agent).items()}
    if guide_h is not None:
        payload[SCHEDULE] = {"guide_h": torch.tensor(int(guide_h))}
    buf = io.BytesIO()
    torch.save(payload, buf)
    return buf.getvalue()


def load_weights(agent: ActingPolicy, data: bytes) -> int | None:
    """Load ``dump_weights`` bytes into ``agent`` (frozen backbone weights are kept from ``agent``); returns the
    guide's h sent with them (None: the run has no guide)."""
    payload = torch.load(io.BytesIO(data), map_location=agent.device, weights_only=True)
    schedule = payload.pop(SCHEDULE, {})
    prefixes = _frozen_prefixes(agent)
    if prefixes:
        own = agent.encoder.state_dict()
        payload["encoder"] = {
            **{k: v for k, v in own.items() if k.startswith(tuple(prefixes))},
            **payload["encoder"],
        }
    agent.load_actor_state_dict(payload)
    return int(schedule["guide_h"]) if "guide_h" in schedule else None
