"""Records -> transitions and episodes, per actor.

A step record carries its own observation; the step's next observation is the observation of the record after
it (the next step's, or the episode's end record). So each record completes the transition of the step before
it, and ``add`` hands that transition out at once: the learner inserts every step into replay as soon as it is
complete, as ``robot-rl train`` does, one replay stream per actor. The finished episode is also handed out
whole when its end record arrives (metrics, prior data from an earlier run's log)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.data.transition import Transition
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
    the records in between are gone (a new actor session, a skipped corrupt chunk). The open episode is cut
    there, never stitched to unrelated steps: its transitions already handed out stay (``on_cut(actor_id)``
    is called so that their consumer closes the episode, bootstrapped), and its newest step, whose next
    observation never came, is dropped and counted in ``discarded_steps``."""

    def __init__(self, on_cut: Callable[[str], None] | None = None) -> None:
        self._open: dict[str, _Open] = {}
        self.on_cut = on_cut
        self.discarded_steps = 0

    def open_steps(self, actor_id: str) -> int:
        """Steps received whose transition is not complete yet: the open episode's newest step (0 or 1)."""
        current = self._open.get(actor_id)
        return int(bool(current and current.steps))

    def discard(self, actor_id: str, reason: str) -> int:
        """Cut ``actor_id``'s open episode; return the number of steps dropped (its incomplete newest one)."""
        current = self._open.pop(actor_id, None)
        if current is None or not current.steps:
            return 0
        kept = len(current.steps) - 1
        self.discarded_steps += 1
        log.warning(
            "actor %s: episode %d cut after %d complete steps (%s); its newest step, whose next observation "
            "never arrived, is dropped",
            actor_id,
            current.episode,
            kept,
            reason,
        )
        if kept and self.on_cut is not None:
            self.on_cut(actor_id)
        return 1

    def add(self, actor_id: str, rec: RecordData) -> tuple[Transition | None, AssembledEpisode | None]:
        """Take one record: (the transition it completes, if any; the episode it ends, if any)."""
        current = self._open.get(actor_id)
        continues = current is not None and current.episode == rec.episode and len(current.steps) == rec.index
        if not continues:
            if current is not None:
                self.discard(actor_id, f"record {rec.seq} is episode {rec.episode} step {rec.index}")
            if rec.index != 0:  # the middle of an episode whose start is not here
                self.discarded_steps += int(rec.is_step)
                return None, None
            current = self._open[actor_id] = _Open(rec.episode)
        previous = current.steps[-1] if current.steps else None
        if rec.is_step:
            current.steps.append(rec)
            return (_transition(previous, rec.obs, done=False) if previous else None), None
        del self._open[actor_id]
        if previous is None:
            return None, None
        return _transition(previous, rec.obs, done=True), self._build(actor_id, current, rec)

    @staticmethod
    def _build(actor_id: str, current: _Open, end: RecordData) -> AssembledEpisode:
        steps = current.steps
        terminated = bool(steps[-1].terminated)
        episode = _episode(steps, end.obs, terminated=terminated, truncated=not terminated)
        versions = np.array([s.policy_version for s in steps], np.uint64)
        return AssembledEpisode(actor_id, current.episode, episode, versions, end.cut)


def _transition(step: RecordData, next_obs: dict[str, np.ndarray], done: bool) -> Transition:
    """``step`` with its next observation; ``done``: the episode's last step (terminated, or else truncated)."""
    assert step.action is not None
    terminated = done and bool(step.terminated)
    return Transition(step.obs, step.action, step.reward, next_obs, terminated, done and not terminated,
                      dict(step.extras))


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
