"""Envs nobody here wrote: built as they expect, and their success read under any common info key, under a
named one, or not at all (then "unknown", never 0%); and counted at any step or at the final one."""

from __future__ import annotations

import logging
import re

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.envs.success import SUCCESS_KEYS
from robot_rl.training.env_factory import EnvConfig, make_env_from_config, make_training_env, success_criterion
from robot_rl.training.evaluate import evaluate

ENV_ID = "robot_rl_test/SuccessKey-v0"


class SuccessKeyEnv(gym.Env):
    """Five steps; reports success under ``key`` (None: never) at the steps in ``success_at``."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, key: str | None = "success", success_at: tuple[int, ...] = (2, 3, 4),
                 render_mode: str | None = None) -> None:
        self.key, self.success_at, self.t = key, set(success_at), 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.t += 1
        info = {} if self.key is None else {self.key: float(self.t in self.success_at)}
        return np.zeros(2, np.float32), 0.0, False, self.t >= 5, info


gym.register(ENV_ID, entry_point=SuccessKeyEnv)


def zero(_obs):
    return np.zeros(1, np.float32)


def config(**kwargs) -> EnvConfig:
    env_kwargs = kwargs.pop("env_kwargs", "{}")
    return EnvConfig(task=ENV_ID, env_kwargs=env_kwargs, **kwargs)


@pytest.mark.parametrize("key", SUCCESS_KEYS)
def test_each_common_key_is_read_as_success(key):
    env = make_env_from_config(config(env_kwargs=f'{{"key": "{key}"}}'))
    result = evaluate(zero, env, episodes=3)
    assert (result.successes, result.success_rate) == (3, 1.0)
    assert result.summary().startswith("success 100% (3/3 at any step")


def test_a_named_key_is_read_and_a_missing_named_key_is_an_error_naming_the_keys_present():
    env = make_env_from_config(config(env_kwargs='{"key": "task_done"}', success_key="task_done"))
    assert evaluate(zero, env, episodes=2).successes == 2
    env = make_env_from_config(config(env_kwargs='{"key": "success"}', success_key="task_done"))
    with pytest.raises(KeyError, match=r"--success-key 'task_done'.*it has: success"):
        evaluate(zero, env, episodes=1)


def test_an_env_that_reports_no_success_is_unknown_not_zero(caplog):
    env = make_env_from_config(config(env_kwargs='{"key": null}'))
    with caplog.at_level(logging.WARNING):
        result = evaluate(zero, env, episodes=3)
    assert result.successes is None and result.success_rate is None and result.ci95 is None
    assert "success unknown" in result.summary() and "0%" not in result.summary()
    assert "success_rate" not in result.metrics() and result.metrics()["length"] == 5.0
    warnings = [r for r in caplog.records if "success unknown" in r.getMessage()]
    assert len(warnings) == 1, "warned once, not per episode"


def test_any_step_and_final_step_criteria_differ_on_an_env_that_loses_its_success():
    kwargs = '{"key": "is_success", "success_at": [2]}'  # succeeds at step 2, not at the end (step 5)
    env = make_training_env(ENV_ID, env_kwargs=kwargs)
    assert evaluate(zero, env, episodes=4, criterion="any").successes == 4
    final = evaluate(zero, env, episodes=4, criterion="final")
    assert final.successes == 0 and "at the final step" in final.summary()


class GoalEnv(SuccessKeyEnv):
    """Goal-conditioned in gymnasium-robotics' sense (dict obs with the goals, ``compute_reward``)."""

    observation_space = gym.spaces.Dict({k: gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
                                         for k in ("observation", "achieved_goal", "desired_goal")})

    def reset(self, *, seed=None, options=None):
        _, info = super().reset(seed=seed)
        return {k: np.zeros(2, np.float32) for k in self.observation_space.spaces}, info

    def step(self, action):
        _, r, te, tr, info = super().step(action)
        return {k: np.zeros(2, np.float32) for k in self.observation_space.spaces}, r, te, tr, info

    def compute_reward(self, achieved_goal, desired_goal, info):
        return -(np.linalg.norm(achieved_goal - desired_goal, axis=-1) > 0.05).astype(np.float32)


gym.register("robot_rl_test/Goal-v0", entry_point=GoalEnv)


def test_the_default_criterion_is_final_for_goal_envs_and_any_elsewhere():
    goal = EnvConfig(task="robot_rl_test/Goal-v0")
    assert success_criterion(goal, make_env_from_config(goal)) == "final"
    plain = config()
    assert success_criterion(plain, make_env_from_config(plain)) == "any"
    reach = EnvConfig(task="reach")
    assert success_criterion(reach, make_env_from_config(reach)) == "any"
    forced = EnvConfig(task="robot_rl_test/Goal-v0", success_criterion="any")
    assert success_criterion(forced, make_env_from_config(forced)) == "any"


def test_an_unregistered_id_suggests_the_module_form():
    with pytest.raises(ValueError, match=re.escape("module:EnvId, e.g. gymnasium_robotics:FetchReach-v4")):
        make_training_env("FetchReach-v4")


class NoneRenderRefusingEnv(SuccessKeyEnv):
    """Refuses ``render_mode=None`` as panda-gym does (it wants one of its modes or the keyword left out)."""

    def __init__(self, render_mode: str = "rgb_array", **kwargs) -> None:
        if render_mode not in ("rgb_array", "human"):
            raise ValueError(f"render_mode {render_mode!r}")
        super().__init__(**kwargs)
        self.render_mode = render_mode


gym.register("robot_rl_test/NoneRenderRefusing-v0", entry_point=NoneRenderRefusingEnv)


def make_none_render_refusing(**kwargs) -> gym.Env:
    return NoneRenderRefusingEnv(**kwargs)


def test_an_env_is_built_without_a_render_mode_when_none_is_asked_for():
    by_id = make_env_from_config(EnvConfig(task="robot_rl_test/NoneRenderRefusing-v0", env_kwargs='{"key": "solved"}'))
    assert evaluate(zero, by_id, episodes=1).successes == 1
    by_factory = make_env_from_config(EnvConfig(env_factory=f"{__name__}:make_none_render_refusing"))
    assert evaluate(zero, by_factory, episodes=1).successes == 1
    assert make_training_env("robot_rl_test/NoneRenderRefusing-v0", render_mode="rgb_array").render_mode == "rgb_array"
