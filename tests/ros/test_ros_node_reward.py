"""reward_classifier node over real DDS: the classifier's cameras and a state check in, rl/reward out, equal to
``classifier_reward`` on the same inputs; stale inputs give no reward at all. Bad parameters are refused."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import ros_session
from ros_harness import wait_for
from sensor_msgs.msg import Image, JointState

from robot_rl.envs import names
from robot_rl.envs.contract import STATE_DIM, STATE_LAYOUT
from robot_rl.rewards import StateCheck, classifier_reward, load_classifier
from robot_rl.rewards.classifier import save_classifier
from robot_rl.rewards.state_check import parse_state_check
from robot_rl.rewards.testing import TINY_CONFIG, synthetic_frames, synthetic_image
from robot_rl.rewards.train import train_classifier
from robot_rl.ros.messages import image_msg, named_vector
from robot_rl.ros.qos import SENSOR
from robot_rl.ros.reward import RewardNodeConfig

NS = "/arm"


def state_vector(z: float) -> np.ndarray:
    state = np.zeros(STATE_DIM, np.float32)
    state[STATE_LAYOUT.slice("tcp_pos")] = [0.5, 0.0, z]
    return state


def test_reward_node_publishes_the_classifier_reward_and_goes_quiet_on_stale_input(tmp_path: Path) -> None:
    model, report = train_classifier(synthetic_frames(), TINY_CONFIG)
    path = tmp_path / "clf.pt"
    save_classifier(path, model, report.threshold, report.as_dict())
    loaded = load_classifier(path)
    check = "tcp_pos:2:0.05:inf"
    rng = np.random.default_rng(7)
    cases = [(synthetic_image(True, rng), 0.1), (synthetic_image(False, rng), 0.1),  # success, failure,
             (synthetic_image(True, rng), 0.0)]  # success image but not lifted (the state check fails)
    lifted = [StateCheck("tcp_pos", 2, 0.05)]
    expected = [classifier_reward(loaded, {"images/front": rgb, "state": state_vector(z)}, state_checks=lifted)
                for rgb, z in cases]
    assert [e.success for e in expected] == [True, False, False]
    with ros_session("reward", tmp_path, namespace=NS) as (procs, probe):
        procs.start("reward_classifier", namespace=NS, classifier=str(path), state_checks=[check], max_age_s=0.5)
        rewards = probe.collect(JointState, f"{NS}/{names.REWARD}", SENSOR)
        image_pub = probe.node.create_publisher(Image, f"{NS}/{names.image_topic('front')}", SENSOR)
        state_pub = probe.node.create_publisher(JointState, f"{NS}/{names.ROBOT_STATE}", SENSOR)
        for (rgb, z), want in zip(cases, expected):

            def fresh(rgb=rgb, z=z, want=want) -> list:
                stamp = probe.node.get_clock().now().to_msg()
                image_pub.publish(image_msg(rgb, stamp, "front"))
                state_pub.publish(named_vector(names.STATE_NAMES, state_vector(z).tolist(), stamp))
                time.sleep(0.05)
                return [m for _, m in rewards[-3:] if abs(m.position[2] - want.probability) < 1e-4]

            got = wait_for(fresh, 30.0, f"rl/reward for the case z={z}", procs)[-1]
            assert list(got.name) == ["reward", "success", "probability"]
            assert got.position[0] == want.reward and got.position[1] == float(want.success)
        # inputs stop: within max_age the node stops publishing (no stale success)
        time.sleep(0.6)
        count = len(rewards)
        time.sleep(0.5)
        assert len(rewards) == count, "rewards kept coming from stale inputs"


def test_reward_config_errors_name_the_value() -> None:
    with pytest.raises(ValueError, match="classifier"):
        RewardNodeConfig()
    with pytest.raises(ValueError, match=r"'tcp_pos:2:0\.05'"):
        RewardNodeConfig(classifier="c.pt", state_checks=("tcp_pos:2:0.05",))
    with pytest.raises(ValueError, match=r"tcp_position.*fields"):
        parse_state_check("tcp_position:2:0:1")
    assert parse_state_check("gripper_opening:0:0.01:inf") == StateCheck("gripper_opening", 0, 0.01, np.inf)
