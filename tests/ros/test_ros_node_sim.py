"""The ROS 2 env passes ``check_conformance`` against the sim robot node (real processes: sim_robot,
robot_bridge, and for pixels a camera_bridge), and the sim's scripted expert solves reach through it."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("mujoco")

from conftest import ros_session
from ros_harness import wait_for

from robot_rl.envs.conformance import check_conformance
from robot_rl.envs.contract import STATE_LAYOUT, image_key
from robot_rl.ros.env import RosArmEnv, RosEnvConfig

NS = "/sim"


def test_ros_env_conforms_against_the_sim_robot_state(tmp_path) -> None:
    with ros_session("sim_state", tmp_path, namespace=NS) as (procs, probe):
        procs.start("sim_robot", namespace=NS)
        procs.start("robot_bridge", namespace=NS)
        env = RosArmEnv(RosEnvConfig(privileged_task="reach", max_episode_steps=15, reward=True), probe.node)
        wait_for(lambda: env.reset_client.service_is_ready(), 30.0, "the bridge's reset service", procs)
        check_conformance(env, steps=20)
        assert env.stats.missing_echoes == 0
        # Reach through ROS with a goal-seeking controller on the privileged goal: the sim's dynamics,
        # reward and success come back over the topics.
        successes = 0
        for _ in range(2):
            obs, _ = env.reset()
            for _ in range(15):
                to_goal = obs["privileged"][3:6]
                action = np.zeros(7, np.float32)
                action[:3] = np.clip(to_goal / env.contract.max_step_m, -1, 1)
                action[6] = 1.0
                obs, reward, terminated, truncated, info = env.step(action)
                if terminated or truncated:
                    break
            successes += int(info["is_success"])
            assert reward == float(info["is_success"])
        assert successes == 2, f"the goal-seeking controller reached {successes}/2 goals over ROS"
        tcp = obs["state"][STATE_LAYOUT.slice("tcp_pos")]
        assert np.all(np.abs(tcp - obs["privileged"][:3]) < 0.05)
        # A policy that overruns its period: counted as a missed cycle, and the incident says when and by how much.
        env.reset()
        missed = env.stats.missed_cycles
        env.step(np.zeros(7, np.float32))
        overrun_at = time.time()
        time.sleep(2.5 * env.period_s)
        env.step(np.zeros(7, np.float32))
        assert env.stats.missed_cycles >= missed + 1
        incident = env.stats.incidents[-1]
        assert incident["kind"] == "missed" and incident["episode_step"] == 1, list(env.stats.incidents)
        assert incident["ms"] >= env.period_s * 1e3, incident
        assert overrun_at < incident["time"] < overrun_at + 1.0, incident  # wall clock, to match other logs
        assert incident["cycle"]["caller"] >= 2.5 * env.period_s * 1e3, incident  # the period went to the caller


def test_ros_env_conforms_with_sim_camera_images(tmp_path) -> None:
    with ros_session("sim_pixels", tmp_path, namespace=NS) as (procs, probe):
        procs.start("sim_robot", namespace=NS, **{"sim.cameras": ["front"], "sim.camera_hz": 15.0})
        procs.start("robot_bridge", namespace=NS)
        procs.start("camera_bridge", name="camera_bridge_front", namespace=NS, camera_config="sim_front")
        env = RosArmEnv(RosEnvConfig(cameras=("sim_front",), max_episode_steps=10, reward=True), probe.node)
        wait_for(lambda: env.reset_client.service_is_ready(), 30.0, "the bridge's reset service", procs)
        check_conformance(env, steps=10)
        obs, _ = env.reset()
        image = obs[image_key("front")]
        assert image.shape == (128, 128, 3) and image.std() > 5, "the front camera image is blank"
