"""The transition schema: what one environment step leaves in a replay, in the demo buffer and on the
actor/learner link, and the one function that turns an env step into it.

``EXTRAS`` declares the per-step side channels every replay stores (their dtypes); a new one is added here
and nowhere else. ``step_env`` is the step of every loop that collects experience (``robot-rl train``, the
gRPC actor, the ROS 2 policy actor): during an intervention the executed action is the human's, read from
``info["intervention_action"]``, and that is what is learned from.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.envs.action_history import ActionHistory
from robot_rl.envs.contract import ACTION_HISTORY, executed_action

EXTRAS: Mapping[str, type[np.generic]] = {"intervention": np.bool_, "grasp_penalty": np.float32}
"""Per-transition side channels: whether a human (or the scripted corrector) chose the action, and the
gripper-use penalty the discrete gripper head learns from (0 where a task has none)."""


@dataclass
class Transition:
    obs: Mapping[str, np.ndarray]
    action: np.ndarray
    reward: float
    next_obs: Mapping[str, np.ndarray]
    terminated: bool
    truncated: bool
    extras: dict[str, object] = field(default_factory=dict)

    @property
    def intervention(self) -> bool:
        return bool(self.extras.get("intervention", False))

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def typed_extras(values: Mapping[str, Any]) -> dict[str, object]:
    """``EXTRAS`` from an env's ``info`` or a link record's doubles: each cast to its type, a missing one 0."""
    return {key: kind(values.get(key, 0)).item() for key, kind in EXTRAS.items()}


def episode_extras(episode: Episode) -> Episode:
    """``episode`` with exactly the ``EXTRAS`` as per-step infos (a demo from any recorder fits every replay)."""
    n = len(episode)
    infos = {key: np.asarray(episode.infos.get(key, np.zeros(n)), kind) for key, kind in EXTRAS.items()}
    return dataclasses.replace(episode, infos=infos)


@dataclass(frozen=True)
class EnvStep:
    transition: Transition
    info: dict[str, Any]

    @property
    def done(self) -> bool:
        return self.transition.done


def step_env(env: gym.Env, obs: Mapping[str, np.ndarray], action: np.ndarray) -> EnvStep:
    """Step ``env`` with the policy's ``action`` and return the transition to learn from (the executed action:
    the human's during an intervention) with the step's ``info``."""
    next_obs, reward, terminated, truncated, info = env.step(action)
    transition = Transition(obs, executed_action(action, info), float(reward), next_obs, bool(terminated),
                            bool(truncated), typed_extras(info))
    return EnvStep(transition, info)


def episode_with_action_history(episode: Episode, k: int, box: gym.spaces.Box, where: str) -> Episode:
    """``episode`` with the ``previous_actions`` its own (executed) actions give each frame; one that has the
    key already must hold ``k`` actions' worth."""
    if k == 0:
        return episode
    have = episode.observations.get(ACTION_HISTORY)
    if have is not None:
        want = k * episode.actions.shape[1]
        if have.shape[1:] != (want,):
            raise ValueError(f"{where}: its {ACTION_HISTORY!r} holds {have.shape[1:]} values; this run's action "
                             f"history of {k} steps needs ({want},)")
        return episode
    history = ActionHistory(k, box.low, box.high)
    frames = [history.vector()]
    for action in episode.actions:
        history.push(action)
        frames.append(history.vector())
    return dataclasses.replace(episode, observations={**episode.observations, ACTION_HISTORY: np.stack(frames)})
