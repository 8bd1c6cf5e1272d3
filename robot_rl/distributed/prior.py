"""Replay of earlier runs as prior data (RaE): whole episodes from a run folder's replay log (distributed
runs) or its ``checkpoints/replay.npz`` (single-process runs)."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.data.replay import describe_space
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
                done = assembler.add(f"{actor_id}/{session}", decode_record(raw, space, action_dim))
                if done is not None:
                    episodes.append(done.episode)
        return episodes
    npz = run / "checkpoints" / "replay.npz"
    if npz.exists():
        return episodes_from_replay_npz(npz, space, action_dim)
    raise FileNotFoundError(f"prior replay {run}: neither replay_log/ nor checkpoints/replay.npz found")


def episodes_from_replay_npz(path: Path, space: gym.spaces.Dict, action_dim: int) -> list[Episode]:
    """Split a ``ReplayBuffer.save`` file back into episodes, oldest first (an episode whose start was
    overwritten in the ring starts at its oldest surviving step)."""
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        if meta["observation_space"] != describe_space(space) or meta["action_dim"] != action_dim:
            raise ValueError(f"{path}: observation space / action dim differ from this run's")
        written, ptr, cap = int(meta["written"]), int(meta["ptr"]), int(meta["capacity"])
        order = np.arange(written) if written < cap else (ptr + np.arange(cap)) % cap
        frames = {k: z[f"frames/{k}"] for k in space.spaces}
        pending = {k[len("pending/") :]: z[k] for k in z.files if k.startswith("pending/")}
        is_step, action, reward, terminated = z["is_step"], z["action"], z["reward"], z["terminated"]
        extras = {k[len("extras/") :]: z[k] for k in z.files if k.startswith("extras/")}
    episodes: list[Episode] = []

    def build(steps: list[int], final: dict[str, np.ndarray]) -> None:
        if steps:
            idx = np.asarray(steps)
            episodes.append(
                Episode(
                    observations={k: np.concatenate([v[idx], final[k][None]]) for k, v in frames.items()},
                    actions=action[idx],
                    rewards=reward[idx],
                    terminated=bool(terminated[idx[-1]]),
                    truncated=not bool(terminated[idx[-1]]),
                    infos={k: v[idx] for k, v in extras.items()},
                )
            )

    steps: list[int] = []
    for i in order:
        if is_step[i]:
            steps.append(int(i))
        else:
            build(steps, {k: v[i] for k, v in frames.items()})
            steps = []
    if steps and pending:
        build(steps, pending)
    return episodes
