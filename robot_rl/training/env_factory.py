"""Build the training/eval env: a robot_rl task, any gymnasium env on the learner's dict convention, or a
user's ``module:function`` env factory (a real arm's contract env, tests)."""

from __future__ import annotations

import importlib
import json

import gymnasium as gym
import numpy as np

from robot_rl.envs.wrappers import DictObservation


def is_robot_rl_task(name: str) -> bool:
    try:
        from robot_rl.sim import TASKS
    except ImportError:  # the sim extra is not installed: only gymnasium ids can work
        return False
    return name in TASKS


def _known_tasks() -> str:
    try:
        from robot_rl.sim import TASKS
    except ImportError:
        return "none available: install the sim extra, pip install 'robot_rl[sim]'"
    return ", ".join(sorted(TASKS))


def make_training_env(
    task: str,
    obs: str = "state",
    image_size: int = 64,
    cameras: tuple[str, ...] = ("front", "wrist"),
    render_mode: str | None = None,
    dense_reward: bool = False,
    terminate_on_success: bool = True,
    env_factory: str | None = None,
    env_kwargs: str = "{}",
) -> gym.Env:
    """``task`` is a robot_rl task name or a gymnasium id; the result emits flat dict observations.
    ``terminate_on_success`` False: a robot_rl task runs on after success (a gymnasium env keeps its own rules).
    ``env_factory`` (``module:function``, called with the JSON object ``env_kwargs``) replaces the task."""
    if env_factory is not None:
        return _from_factory(env_factory, env_kwargs, render_mode)
    if is_robot_rl_task(task):
        from robot_rl.sim import make_env

        return make_env(
            task,
            obs_mode=obs,
            image_size=image_size,
            cameras=cameras,
            render_mode=render_mode,
            dense_reward=dense_reward,
            terminate_on_success=terminate_on_success,
        )
    if obs != "state" or dense_reward:
        raise ValueError(f"obs={obs!r} / dense_reward apply to robot_rl tasks only; {task!r} brings its own")
    try:
        env = gym.make(task, render_mode=render_mode)
    except gym.error.Error as err:
        raise ValueError(
            f"task {task!r} is neither a robot_rl task ({_known_tasks()}) nor a registered gymnasium id "
            f"({err})"
        ) from err
    if not isinstance(env.action_space, gym.spaces.Box):
        raise ValueError(f"task {task!r}: SAC needs a continuous Box action space, got {env.action_space}")
    low, high = env.action_space.low, env.action_space.high
    if not (np.all(low == -1.0) and np.all(high == 1.0)):
        env = gym.wrappers.RescaleAction(env, -1.0, 1.0)
    return DictObservation(env)


def _from_factory(env_factory: str, env_kwargs: str, render_mode: str | None) -> gym.Env:
    module_name, _, func_name = env_factory.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"env_factory {env_factory!r} cannot be imported: {e}") from e
    kwargs = json.loads(env_kwargs)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return factory(**kwargs)


def make_env_from_config(config, render_mode: str | None = None, training: bool = False,
                         env_factory: str | None = None, env_kwargs: str = "{}") -> gym.Env:
    """The env a ``TrainConfig`` describes (training, evaluation and ``robot-rl eval`` build it the same way).

    ``training`` with a reward classifier: a simulated task does not end on its own success, as a real arm does
    not; only the classifier ends episodes. Else a success the classifier has not yet seen would end the episode
    unrewarded (the classifier fires a frame or two after the true success when its threshold favours precision).
    """
    return make_training_env(
        config.task,
        config.obs,
        config.image_size,
        config.cameras,
        render_mode=render_mode,
        dense_reward=config.dense_reward,
        terminate_on_success=not (training and config.reward_classifier is not None),
        env_factory=env_factory,
        env_kwargs=env_kwargs,
    )
