"""The commands in flight as an observation: ``previous_actions``, the last K actions the arm was sent.

On an arm whose commands take effect some control steps late (a real driver's latency, ``action_latency_steps``
in simulation), the state alone does not say what is still on its way; a policy that sees its last K actions
can. The key holds float32 [K * A], newest first (``a_{t-1}, ..., a_{t-K}``), each clipped to the action box as
the env clips it; the human's action where one intervened (``info["intervention_action"]``); zeros before an
episode's first step. Every place a run's env runs adds it the same way:

- ``ActionHistoryObservation``: a gymnasium wrapper (simulation, envs from elsewhere, the ROS 2 arm env);
- ``robot_rl.sim.batched.BatchedArmEnv(action_history=K)``: its torch twin over N worlds;
- ``HistoryPolicy`` (``robot_rl.ros.actor``) keeps one for a policy that steps an env it does not wrap;
- ``robot_rl.data.transition.episode_with_action_history``: demos recorded without the key get it from their
  own actions.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import ACTION_HISTORY, executed_action

MAX_ACTION_HISTORY = 16
"""The longest history a run may ask for (1.6 s at 10 Hz: beyond any driver latency worth learning around)."""


def check_action_history(k: int, where: str) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_ACTION_HISTORY:
        raise ValueError(f"{where}: the action history is a whole number of steps in [0, {MAX_ACTION_HISTORY}], "
                         f"got {k!r}")


def history_space(k: int, action_space: gym.spaces.Box) -> gym.spaces.Box:
    """The ``previous_actions`` space: ``k`` copies of the action box, newest first."""
    low = np.tile(action_space.low.astype(np.float32).reshape(-1), k)
    high = np.tile(action_space.high.astype(np.float32).reshape(-1), k)
    return gym.spaces.Box(low, high, low.shape, np.float32)


class ActionHistory:
    """The last ``k`` actions (newest first) within the action box ``[low, high]``."""

    def __init__(self, k: int, low: np.ndarray, high: np.ndarray) -> None:
        self.low, self.high = low.astype(np.float32).reshape(-1), high.astype(np.float32).reshape(-1)
        self.actions = np.zeros((k, self.low.size), np.float32)

    def reset(self) -> None:
        self.actions[:] = 0.0

    def push(self, action: np.ndarray) -> None:
        self.actions[1:] = self.actions[:-1]
        self.actions[0] = np.clip(np.asarray(action, np.float32).reshape(-1), self.low, self.high)

    def vector(self) -> np.ndarray:
        return self.actions.reshape(-1).copy()


class ActionHistoryObservation(gym.Wrapper):
    """Adds ``previous_actions`` (the last ``k`` actions executed, see the module) to a dict-observation env."""

    def __init__(self, env: gym.Env, k: int) -> None:
        super().__init__(env)
        check_action_history(k, "ActionHistoryObservation")
        space, box = env.observation_space, env.action_space
        if not isinstance(space, gym.spaces.Dict) or ACTION_HISTORY in space.spaces:
            raise ValueError(f"an action history needs dict observations without a {ACTION_HISTORY!r} key, got {space}")
        if not isinstance(box, gym.spaces.Box):
            raise ValueError(f"an action history needs a Box action space, got {box}")
        self.history = ActionHistory(k, box.low, box.high)
        self.observation_space = gym.spaces.Dict({**space.spaces, ACTION_HISTORY: history_space(k, box)})

    def reset(self, **kwargs: Any) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self.history.reset()
        return {**obs, ACTION_HISTORY: self.history.vector()}, info

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.history.push(executed_action(action, info))
        return {**obs, ACTION_HISTORY: self.history.vector()}, reward, terminated, truncated, info
