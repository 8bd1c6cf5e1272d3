"""The action-history observation: what it holds, and that every path that adds it (the wrapper, demos
recorded without it) gives the same numbers."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.episode import Episode
from robot_rl.data.transition import episode_with_action_history
from robot_rl.envs.action_history import ActionHistoryObservation
from robot_rl.envs.contract import ACTION_HISTORY, executed_action
from robot_rl.training.env_factory import EnvConfig


class Intervened(gym.Env):
    """A dict-observation env where a human takes over on odd steps with the action (0.25, -0.25)."""

    observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (1,), np.float32)})
    action_space = gym.spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, *, seed: int | None = None, options: Any = None):
        self.t = 0
        return {"state": np.zeros(1, np.float32)}, {}

    def step(self, action):
        self.t += 1
        human = self.t % 2 == 1
        info = {"intervention": human, "intervention_action": np.array([0.25, -0.25], np.float32) if human else None}
        return {"state": np.zeros(1, np.float32)}, 0.0, False, self.t >= 5, info


def test_newest_first_clipped_the_humans_action_while_intervening_and_zero_after_a_reset() -> None:
    env = ActionHistoryObservation(Intervened(), 3)
    assert env.observation_space[ACTION_HISTORY] == gym.spaces.Box(-1, 1, (6,), np.float32)
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[ACTION_HISTORY], np.zeros(6))
    env.step(np.array([0.9, 0.9]))  # the human's (step 1)
    obs, *_ = env.step(np.array([3.0, -0.5]))  # the policy's, clipped into the box
    np.testing.assert_array_equal(obs[ACTION_HISTORY], [1.0, -0.5, 0.25, -0.25, 0, 0])
    obs, *_ = env.step(np.array([0.1, 0.1]))
    np.testing.assert_array_equal(obs[ACTION_HISTORY], [0.25, -0.25, 1.0, -0.5, 0.25, -0.25])
    obs, _ = env.reset()
    np.testing.assert_array_equal(obs[ACTION_HISTORY], np.zeros(6))


def test_demos_recorded_without_it_get_what_the_wrapper_would_have_shown() -> None:
    env = ActionHistoryObservation(Intervened(), 2)
    rng = np.random.default_rng(0)
    obs, _ = env.reset()
    frames, executed = [obs], []
    done = False
    while not done:
        sent = rng.uniform(-1.5, 1.5, 2).astype(np.float32)
        obs, _, terminated, truncated, info = env.step(sent)
        executed.append(executed_action(sent, info))  # what an episode stores (step_env), outside the box too
        frames.append(obs)
        done = terminated or truncated
    episode = Episode({"state": np.stack([f["state"] for f in frames])}, np.stack(executed),
                      np.zeros(len(executed), np.float32), False, True)
    rebuilt = episode_with_action_history(episode, 2, env.action_space, "demo 0")
    np.testing.assert_array_equal(rebuilt.observations[ACTION_HISTORY], np.stack([f[ACTION_HISTORY] for f in frames]))
    with pytest.raises(ValueError, match=r"demo 0: its 'previous_actions' holds \(4,\) values; .* 3 steps"):
        episode_with_action_history(rebuilt, 3, env.action_space, "demo 0")


@pytest.mark.parametrize("bad", [-1, 17, 1.5, True])
def test_a_bad_history_length_is_refused_naming_it(bad) -> None:
    with pytest.raises(ValueError, match=rf"EnvConfig.action_history: .* got {bad!r}"):
        EnvConfig(action_history=bad)
