"""Hindsight goal relabelling (HER, "future" strategy) for goal-conditioned envs, applied when the replay samples.

A goal-conditioned env (gymnasium-robotics' ``GoalEnv``: dict observations with ``achieved_goal`` and
``desired_goal``, and a vectorised ``compute_reward(achieved_goal, desired_goal, info)``) pays a sparse reward
only near its goal, which random exploration rarely reaches. Relabelling turns each failed episode into a
successful one for the goals it did reach: a sampled transition gets, with probability ``fraction``, the
achieved goal of a later step of its own episode as its desired goal, and its n-step rewards are recomputed
for that goal by the env's own ``compute_reward``.

Nothing is stored twice: the replay keeps each episode once and relabels the sampled copies. The future record
is chosen uniformly among those its episode has in the ring after the sampled step (an open episode: among
the ones written so far), following the replay's ``next`` links, so episodes of concurrent actors never mix.
Termination is kept as recorded (as Stable-Baselines3's HER does); goal envs of this kind rarely terminate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from robot_rl.envs.success import is_goal_env

if TYPE_CHECKING:
    from robot_rl.data.replay import ReplayConfig

ACHIEVED, DESIRED = "achieved_goal", "desired_goal"


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
    return GoalRewards(env.unwrapped.compute_reward, config.hindsight_fraction)
