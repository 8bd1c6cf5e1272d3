"""Replay of earlier runs as prior data (RaE): whole episodes from a run folder's replay log (distributed
runs) or its ``checkpoints/replay.npz`` (single-process runs)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.data.spaces import describe_space
from robot_rl.distributed.assembler import EpisodeAssembler
from robot_rl.distributed.codec import decode_record
from robot_rl.distributed.replay_log import ReplayLog


def load_prior_episodes(
    run: str | Path, space: gym.spaces.Dict, action_dim: int, skip_corrupt: bool = False
) -> list[Episode]:
    """Every complete episode stored in ``run``; raises ``ValueError`` when its spaces differ from ours."""
    run = Path(run)
    log_dir = run / "replay_log"
    if (log_dir / "meta.json").exists():
        replay_log = ReplayLog(
            log_dir, meta={"observation_space": describe_space(space), "action_dim": action_dim}
        )
        assembler, episodes = EpisodeAssembler(), []
        for actor_id, session, raws in replay_log.batches(skip_corrupt):
            for raw in raws:
                _, done = assembler.add(f"{actor_id}/{session}", decode_record(raw, space, action_dim))
                if done is not None:
                    episodes.append(done.episode)
        return episodes
    npz = run / "checkpoints" / "replay.npz"
    if npz.exists():
        return episodes_from_replay_npz(npz, space, action_dim)
    raise FileNotFoundError(f"prior replay {run}: neither replay_log/ nor checkpoints/replay.npz found")


def episodes_from_replay_npz(path: Path, space: gym.spaces.Dict, action_dim: int) -> list[Episode]:
    """The episodes of a ``ReplayBuffer.save`` file, oldest first (``ReplayBuffer.episodes``)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
    if meta["observation_space"] != describe_space(space) or meta["action_dim"] != action_dim:
        raise ValueError(f"{path}: observation space / action dim differ from this run's")
    config = ReplayConfig(capacity=int(meta["capacity"]), n_step=int(meta["n_step"]), gamma=float(meta["gamma"]))
    replay = ReplayBuffer(space, action_dim, config, extras_keys=meta["extras"])
    replay.load(path)
    return replay.episodes()
