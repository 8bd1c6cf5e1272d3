"""Records -> episodes, per actor. ``ReplayBuffer`` stores each episode contiguously (its per-step ``add``
holds a single open episode), so with several actors streaming into one replay the learner inserts an open
episode in parts: ``ready_part`` hands out its complete transitions so far as a cut episode (bootstrapped from
the next step's observation), and the finished ``AssembledEpisode`` says how many leading steps went out so."""

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
    handed_out: int = 0
    """Leading steps already handed out by ``ready_part``."""


@dataclass
class EpisodePart:
    """Complete transitions of an open episode: a cut ``Episode`` (neither terminated nor truncated) whose
    final observation is the next step's."""

    actor_id: str
    episode: Episode
    next_intervention: bool
    """Whether the step after the part was an intervention (RLIF labels the step before a takeover)."""


@dataclass
class AssembledEpisode:
    """A finished episode plus what the records said about it."""

    actor_id: str
    actor_episode: int
    episode: Episode
    policy_versions: np.ndarray
    """uint64 [T]: the weights version that chose each action."""
    cut_by_drop_policy: bool
    handed_out: int = 0
    """Leading steps already handed out as ``EpisodePart``s (the rest is new)."""


class EpisodeAssembler:
    """Collects step records per actor until the episode's end record arrives.

    A step record that does not continue the open episode (another episode number, or a skipped index) means
    the records in between are gone (a new actor session, a skipped corrupt chunk): the open part is dropped
    and counted in ``discarded_steps``, never stitched to unrelated steps."""

    def __init__(self) -> None:
        self._open: dict[str, _Open] = {}
        self.discarded_steps = 0

    def open_steps(self, actor_id: str) -> int:
        """Steps received in the open episode and not handed out as a part."""
        current = self._open.get(actor_id)
        return len(current.steps) - current.handed_out if current else 0

    def discard(self, actor_id: str, reason: str) -> int:
        current = self._open.pop(actor_id, None)
        n = len(current.steps) - current.handed_out if current else 0
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

    def ready_part(self, actor_id: str, min_steps: int) -> EpisodePart | None:
        """The open episode's complete transitions not yet handed out, once there are ``min_steps`` of them
        (a step's transition is complete when the next step's record, holding its next observation, is in)."""
        current = self._open.get(actor_id)
        if current is None or min_steps < 1:
            return None
        nxt = len(current.steps) - 1
        if nxt - current.handed_out < min_steps:
            return None
        steps, after = current.steps[current.handed_out : nxt], current.steps[nxt]
        current.handed_out = nxt
        episode = _episode(steps, after.obs, terminated=False, truncated=False)
        return EpisodePart(actor_id, episode, bool(after.extras.get("intervention", 0.0)))

    @staticmethod
    def _build(actor_id: str, current: _Open, end: RecordData) -> AssembledEpisode:
        steps = current.steps
        terminated = bool(steps[-1].terminated)
        episode = _episode(steps, end.obs, terminated=terminated, truncated=not terminated)
        versions = np.array([s.policy_version for s in steps], np.uint64)
        return AssembledEpisode(actor_id, current.episode, episode, versions, end.cut, current.handed_out)


def _episode(steps: list[RecordData], final_obs: dict[str, np.ndarray], terminated: bool, truncated: bool) -> Episode:
    obs = {k: np.stack([s.obs[k] for s in steps] + [final_obs[k]]) for k in final_obs}
    keys = sorted({k for s in steps for k in s.extras})
    infos = {
        k: np.array([s.extras.get(k, 0.0) for s in steps], np.bool_ if k in INFO_KEYS else np.float32)
        for k in keys
    }
    return Episode(
        observations=obs,
        actions=np.stack([s.action for s in steps]).astype(np.float32),  # type: ignore[misc]
        rewards=np.array([s.reward for s in steps], np.float32),
        terminated=terminated,
        truncated=truncated,
        infos=infos,
    )
