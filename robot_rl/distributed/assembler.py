"""Records -> whole episodes, per actor. The learner inserts only complete episodes into its replay, so
several actors can stream into one ``ReplayBuffer`` (whose per-step ``add`` holds a single open episode)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.distributed.codec import RecordData
from robot_rl.envs.contract import INFO_KEYS

log = logging.getLogger("robot_rl.distributed")


@dataclass
class _Open:
    episode: int
    steps: list[RecordData] = field(default_factory=list)


@dataclass
class AssembledEpisode:
    """A finished episode plus what the records said about it."""

    actor_id: str
    actor_episode: int
    episode: Episode
    policy_versions: np.ndarray
    """uint64 [T]: the weights version that chose each action."""
    cut_by_drop_policy: bool


class EpisodeAssembler:
    """Collects step records per actor until the episode's end record arrives.

    A step record that does not continue the open episode (another episode number, or a skipped index) means
    the records in between are gone (a new actor session, a skipped corrupt chunk): the open part is dropped
    and counted in ``discarded_steps``, never stitched to unrelated steps."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self.discarded_steps = 0

    def open_steps(self, actor_id: str) -> int:
        current = self._open.get(actor_id)
        return len(current.steps) if current else 0

    def discard(self, actor_id: str, reason: str) -> int:
        current = self._open.pop(actor_id, None)
        n = len(current.steps) if current else 0
        if n:
            self.discarded_steps += n
            log.warning(
                "actor %s: dropping %d steps of its unfinished episode %d (%s)",
                actor_id,
                n,
                current.episode if current else -1,
                reason,
            )
        return n

    def add(self, actor_id: str, rec: RecordData) -> AssembledEpisode | None:
        current = self._open.get(actor_id)
        continues = current is not None and current.episode == rec.episode and len(current.steps) == rec.index
        if not continues:
            if current is not None:
                self.discard(actor_id, f"record {rec.seq} is episode {rec.episode} step {rec.index}")
            if rec.index != 0:  # the middle of an episode whose start is not here
                self.discarded_steps += int(rec.is_step)
                return None
            current = self._open[actor_id] = _Open(rec.episode)
        if rec.is_step:
            current.steps.append(rec)
            return None
        del self._open[actor_id]
        if not current.steps:
            return None
        return self._build(actor_id, current, rec)

    @staticmethod
    def _build(actor_id: str, current: _Open, end: RecordData) -> AssembledEpisode:
        steps = current.steps
        obs = {k: np.stack([s.obs[k] for s in steps] + [end.obs[k]]) for k in end.obs}
        keys = sorted({k for s in steps for k in s.extras})
        infos = {
            k: np.array([s.extras.get(k, 0.0) for s in steps], np.bool_ if k in INFO_KEYS else np.float32)
            for k in keys
        }
        episode = Episode(
            observations=obs,
            actions=np.stack([s.action for s in steps]).astype(np.float32),  # type: ignore[misc]
            rewards=np.array([s.reward for s in steps], np.float32),
            terminated=bool(steps[-1].terminated),
            truncated=not steps[-1].terminated,
            infos=infos,
        )
        versions = np.array([s.policy_version for s in steps], np.uint64)
        return AssembledEpisode(actor_id, current.episode, episode, versions, end.cut)
