"""The learner's [-1, 1] mapped onto an env's action box, or onto the narrower box ``action_scale`` declares."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.demos import DemoFormatError, DemoMeta, DemoWriter, check_action_scale
from robot_rl.envs.wrappers import LearnerActionBox, action_scale_of, narrow_box_advice
from robot_rl.training.env_factory import EnvConfig, make_env_from_config, make_training_env


class Recorder(gym.Env):
    """Remembers the last action it was sent; its box is metre-like: [-1, 1] except a gripper in [0, 255]."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Box(np.array([-1, -1, 0], np.float32), np.array([1, 1, 255], np.float32))

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.sent = None
        return np.zeros(2, np.float32), {}

    def step(self, action):
        self.sent = np.asarray(action)
        return np.zeros(2, np.float32), 0.0, False, False, {}


def sent(env: gym.Env, action: list[float]) -> np.ndarray:
    env.reset(seed=0)
    env.step(np.asarray(action, np.float32))
    return env.unwrapped.sent


def test_the_whole_box_is_spanned_by_default_and_a_scale_narrows_it_around_the_centre() -> None:
    whole = LearnerActionBox(Recorder())
    assert whole.action_space == gym.spaces.Box(-1.0, 1.0, (3,), np.float32) and whole.scale is None
    np.testing.assert_allclose(sent(whole, [1, -0.5, -1]), [1, -0.5, 0])
    np.testing.assert_allclose(sent(whole, [0, 0, 1]), [0, 0, 255])
    narrow = LearnerActionBox(Recorder(), np.array([0.02, 0.0, 100.0]))
    assert narrow.scale == (0.02, 0.0, 100.0)
    np.testing.assert_allclose(sent(narrow, [1, 1, -1]), [0.02, 0, 27.5], rtol=1e-6)  # 0: fixed at its centre
    np.testing.assert_allclose(sent(narrow, [5, -3, 0.5]), [0.02, 0, 177.5], rtol=1e-6)  # [-1, 1] enforced
    np.testing.assert_allclose(sent(LearnerActionBox(Recorder(), np.array(0.5)), [1, -1, 1]), [0.5, -0.5, 128])


def test_a_scale_wider_than_the_box_is_refused_naming_the_dimension() -> None:
    with pytest.raises(ValueError, match=r"1.5 for action dimension 1 exceeds the env's half-range 1.0"):
        LearnerActionBox(Recorder(), np.array([0.5, 1.5, 1.0]))
    with pytest.raises(ValueError, match="bounded continuous Box"):
        LearnerActionBox(gym.make("CartPole-v1"))


@pytest.mark.parametrize("text", ["[0.1, -0.2]", "[]", "abc", "[[1]]", "NaN", '"0.1"'])
def test_a_bad_action_scale_is_refused_with_its_text(text: str) -> None:
    with pytest.raises(ValueError, match=r"EnvConfig\.action_scale"):
        EnvConfig(task="Pendulum-v1", action_scale=text)


def test_robot_rl_tasks_keep_their_own_action_limits() -> None:
    with pytest.raises(ValueError, match="'pick_cube' is a robot_rl task with its own action limits"):
        make_env_from_config(EnvConfig(task="pick_cube", action_scale="0.5"))
    with pytest.raises(ValueError, match="'reach' is a robot_rl task"):
        make_training_env("reach", action_scale="[0.1]")


def test_a_gymnasium_env_acts_through_the_declared_box() -> None:
    """Pendulum's torque box is [-2, 2]: the learner's 1 is 2 N m, or 0.5 N m through a scale of 0.5."""
    whole, narrow = make_training_env("Pendulum-v1"), make_env_from_config(EnvConfig("Pendulum-v1", action_scale="0.5"))
    assert action_scale_of(whole) is None and action_scale_of(narrow) == (0.5,)
    raw = gym.make("Pendulum-v1")
    for env, torque in ((whole, 2.0), (narrow, 0.5)):
        env.reset(seed=3)
        raw.reset(seed=3)
        got = env.step(np.ones(1, np.float32))[0]["state"]
        np.testing.assert_allclose(got, raw.step(np.array([torque], np.float32))[0], rtol=1e-6)
    with pytest.raises(ValueError, match=r"exceeds the env's half-range 2\.0"):
        make_env_from_config(EnvConfig("Pendulum-v1", action_scale="3"))
    with pytest.raises(ValueError, match="task 'Pendulum-v1': action_scale has 2 values for 1 action dimensions"):
        make_env_from_config(EnvConfig("Pendulum-v1", action_scale="[0.5, 0.5]"))


def test_demos_remember_their_scale_and_a_run_acting_through_another_refuses_them(tmp_path) -> None:
    env = make_env_from_config(EnvConfig("Pendulum-v1", action_scale="0.5"))
    DemoWriter(tmp_path / "d", DemoMeta.for_env("Pendulum-v1", env))
    check_action_scale(tmp_path / "d", (0.5,))
    with pytest.raises(DemoFormatError, match=r"recorded with action_scale \[0.5\], this run acts with the env's "
                                              r"whole action box"):
        check_action_scale(tmp_path / "d", None)
    DemoWriter(tmp_path / "w", DemoMeta.for_env("Pendulum-v1", make_training_env("Pendulum-v1")))
    with pytest.raises(DemoFormatError, match=r"whole action box, this run acts with action_scale \[0.2\]"):
        check_action_scale(tmp_path / "w", (0.2,))
    with pytest.raises(DemoFormatError, match="action scale differ"):
        DemoWriter(tmp_path / "d", DemoMeta.for_env("Pendulum-v1", make_training_env("Pendulum-v1")))


def test_demos_that_use_a_sliver_of_the_box_get_the_narrower_box_suggested() -> None:
    box = LearnerActionBox(Recorder())
    actions = np.zeros((50, 3), np.float32)
    actions[:, 0] = np.linspace(-0.02, 0.015, 50)  # 2 cm steps in a metre box
    actions[:, 2] = np.linspace(-1, 1, 50)  # the gripper swings over its whole range
    advice = narrow_box_advice(actions, box)
    assert advice is not None and "at most 2.0% of the action range in dimension(s) [0]" in advice
    assert "--action-scale '[0.04, 0.0, 127.5]'" in advice  # twice the largest step; the whole gripper range
    assert narrow_box_advice(np.clip(actions * 50, -1, 1), box) is None  # the demos span the box
    assert narrow_box_advice(actions, LearnerActionBox(Recorder(), np.array([0.04, 0.0, 127.5]))) is None
    assert narrow_box_advice(actions, None) is None  # a robot_rl task's box is built for its arm
