"""``RosArmEnv``'s wait for the robot state after a tick (in process, no bridge: states are put by hand, as
the subscription callback puts them): a pause of the state stream costs freshness, not a command cycle, and
a stream that has stopped still ends in a stale step."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.context import Context  # noqa: E402
from rclpy.node import Node  # noqa: E402
from ros_harness import ros_domain  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

from robot_rl.envs import names  # noqa: E402
from robot_rl.ros.env import RosArmEnv, RosEnvConfig  # noqa: E402


def state_msg() -> JointState:
    return JointState(name=list(names.STATE_NAMES), position=[0.0] * len(names.STATE_NAMES))


@pytest.fixture
def env():
    with ros_domain("env_timing") as domain:
        context = Context()
        rclpy.init(context=context, domain_id=domain)
        node = Node("env_timing", context=context)
        yield RosArmEnv(RosEnvConfig(reward=False, step_timeout_s=0.3), node)
        node.destroy_node()
        rclpy.try_shutdown(context=context)


def test_a_late_state_stream_costs_freshness_not_the_cycle(env) -> None:
    wait_s = env.config.fresh_state_wait * env.period_s
    env._state.put(state_msg())
    env._observation()  # the previous step's observation
    env._state.put(state_msg())  # a newer state, from before the tick
    tick = time.monotonic()
    start = time.monotonic()
    assert env._wait_state(tick)
    waited = time.monotonic() - start
    assert wait_s * 0.9 <= waited < wait_s + 0.05, waited  # no state after the tick: waited its share only
    assert env.stats.late_observations == 1


def test_a_state_after_the_tick_is_taken_as_it_arrives(env) -> None:
    env._state.put(state_msg())
    env._observation()
    tick = time.monotonic()
    threading.Timer(0.01, env._state.put, args=(state_msg(),)).start()
    start = time.monotonic()
    assert env._wait_state(tick)
    assert time.monotonic() - start < 0.5 * env.config.fresh_state_wait * env.period_s
    assert env.stats.late_observations == 0


def test_no_state_newer_than_the_last_observation_is_stale(env) -> None:
    env._state.put(state_msg())
    env._observation()  # nothing newer arrives: the stream stopped
    start = time.monotonic()
    assert not env._wait_state(time.monotonic())
    waited = time.monotonic() - start
    assert waited >= env.config.step_timeout_s * 0.9, waited
    assert env.stats.late_observations == 0


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, np.nan])
def test_fresh_state_wait_outside_its_range_is_refused(bad: float) -> None:
    with pytest.raises(ValueError, match=r"RosEnvConfig.fresh_state_wait must be in \(0, 1\]"):
        RosEnvConfig(fresh_state_wait=bad)
