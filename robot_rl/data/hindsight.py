"""Hindsight goal relabelling (HER, "future" strategy) for goal-conditioned envs, applied when the replay samples.

A goal-conditioned env (gymnasium-robotics' ``GoalEnv``: dict observations with ``achieved_goal`` and
``desired_goal``, and a vectorised ``compute_reward(achieved_goal, desired_goal, info)``) pays a sparse reward
only near its goal, which random exploration rarely reaches. Relabelling turns each failed episode into a
successful one for the goals it did reach: a sampled transition gets, with probability ``fraction``, the
achieved goal of a later step of its own episode as its desired goal, and its n-step rewards are recomputed
for that goal by the env's own ``compute_reward``.

Nothing is stored twice: the replay keeps each episode once and relabels the sampled copies. The future record
is chosen uniformly among those its episode has in the ring after the sampled step (an open episode: among
the ones written so far) through an ``EpisodeIndex``: each record's episode and position, and each episode's
records in order, so a draw costs O(1) whatever the episode length and concurrent actors' episodes never mix.
Termination is kept as recorded (as Stable-Baselines3's HER does); goal envs of this kind rarely terminate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from robot_rl.envs.success import compute_reward_of, is_goal_env

if TYPE_CHECKING:
    from robot_rl.data.replay import ReplayConfig

ACHIEVED, DESIRED = "achieved_goal", "desired_goal"


class EpisodeIndex:
    """Which episode each ring record belongs to and where in it, kept as the replay writes.

    An episode's records are listed in write order (step records, then its final-observation record). A record
    that the ring still holds has all later records of its episode in the ring too (they were written after
    it), so positions after a live record always name live records of the same episode; an episode's list is
    dropped once the ring overwrites its newest record.
    """

    def __init__(self, capacity: int) -> None:
        self.episode = np.full(capacity, -1, np.int64)
        self.position = np.zeros(capacity, np.int64)
        self.records: dict[int, list[int]] = {}
        self._new_id = 0

    def write(self, idx: np.ndarray, continues: int | None) -> None:
        """Records ``idx`` (in write order) were just written: as the continuation of the episode holding
        record ``continues``, or as a new episode when None. Call before the records' old entries are lost."""
        for e, p in zip(self.episode[idx].tolist(), self.position[idx].tolist()):  # the overwritten records
            recs = self.records.get(e)
            if recs is not None and p == len(recs) - 1:
                del self.records[e]
        if continues is None:
            e, self._new_id = self._new_id, self._new_id + 1
            self.records[e] = []
        else:
            e = int(self.episode[continues])
        recs = self.records[e]
        self.episode[idx] = e
        self.position[idx] = np.arange(len(recs), len(recs) + len(idx))
        recs.extend(idx.tolist())

    def later_records(self, starts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """For each start step [B], one record drawn uniformly from the later ones of its episode (from its
        next observation to the final one, or to the newest written for an open episode)."""
        lists = [self.records[e] for e in self.episode[starts].tolist()]
        pos = self.position[starts]
        later = np.fromiter(map(len, lists), np.int64, len(lists)) - pos - 1
        pick = pos + 1 + (rng.random(len(starts)) * later).astype(np.int64)
        return np.fromiter((recs[j] for recs, j in zip(lists, pick.tolist())), np.int64, len(lists))

    def rebuild(self, chains: list[list[int]]) -> None:
        """Index the ring from its episodes' record chains (after loading a checkpoint)."""
        self.episode[:], self.position[:], self.records, self._new_id = -1, 0, {}, 0
        for chain in chains:
            self.write(np.asarray(chain, np.int64), None)


@dataclass(frozen=True)
class GoalRewards:
    """What relabelling needs from a goal-conditioned env: its reward function and how often to relabel."""

    compute_reward: Callable[[np.ndarray, np.ndarray, Any], np.ndarray]
    """``compute_reward(achieved_goal [B, G], desired_goal [B, G], infos) -> [B]``, the env's own."""
    fraction: float = 0.8
    """Share of sampled transitions that get a future achieved goal (HER's k = 4 future goals -> 0.8)."""

    def rewards(self, achieved: np.ndarray, desired: np.ndarray) -> np.ndarray:
        """The env's rewards for ``achieved`` under ``desired`` goals, one per row, as float64."""
        out = np.asarray(self.compute_reward(achieved, desired, [{} for _ in range(len(achieved))]), np.float64)
        if out.shape != (len(achieved),):
            raise ValueError(f"compute_reward returned shape {out.shape} for {len(achieved)} goals; hindsight "
                             "relabelling needs the vectorised form (one reward per row)")
        return out


def goal_rewards_for(config: ReplayConfig, env: gym.Env, where: str = "ReplayConfig.hindsight") -> GoalRewards | None:
    """The relabelling ``config.hindsight`` asks for in ``env``: ``auto`` relabels goal-conditioned envs only,
    ``on`` requires one, ``off`` never relabels."""
    if config.hindsight == "off":
        return None
    if not is_goal_env(env):
        if config.hindsight == "on":
            raise ValueError(
                f"{where}='on': {env.unwrapped.__class__.__name__} is not goal-conditioned (it needs dict "
                f"observations with {ACHIEVED!r} and {DESIRED!r} and a compute_reward method)")
        return None
    return GoalRewards(compute_reward_of(env), config.hindsight_fraction)
