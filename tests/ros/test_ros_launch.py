"""Every launch file run for real, as ``ros2 launch robot_rl_ros <file> k:=v`` (ros2launch's own API over
``launch.LaunchService``, tests/ros/ros2_launch.py), from the colcon-built package: every node it names comes up
with the parameters the launch file gave it (read back over the nodes' parameter services), topics connect,
and Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops everything with exit status 0
within a bound and no traceback.

Skips, saying why, where neither the ROS 2 launch wheels nor a ROS 2 install provide ``launch_ros`` and
``ros2launch``; never runs against a stand-in of ``launch``."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

from conftest import ros_session
from diagnostic_msgs.msg import DiagnosticArray
from rcl_interfaces.srv import GetParameters
from rclpy.parameter import parameter_value_to_python
from ros_harness import FakeDriver, process_env, wait_for
from sensor_msgs.msg import JointState

from robot_rl.envs import names
from robot_rl.ros.qos import EVENTS

MISSING = [m for m in ("launch", "launch_ros", "ros2launch") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"{MISSING} not installed: bash scripts/setup.sh installs "
                                "them from ../shared/wheels/ros2-launch (or source a ROS 2 install)")
RUNNER = Path(__file__).with_name("ros2_launch.py")
STOP_BOUND_S = 15.0  # SIGINT, launch's 5 s to SIGTERM, its 5 s to SIGKILL: a clean stop is well inside


class Launch:
    """One ``ros2 launch`` in its own process group, its output in a file."""

    def __init__(self, domain: int, log: Path, launch_file: str, **args: str) -> None:
        self.log = log
        env = process_env(domain)
        env["ROBOT_RL_TOKEN"] = "launch-test-token-0123456789"
        argv = [sys.executable, str(RUNNER), "robot_rl_ros", launch_file, *(f"{k}:={v}" for k, v in args.items())]
        self.proc = subprocess.Popen(argv, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                                     start_new_session=True)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def ctrl_c(self) -> str:
        """SIGINT to the launch and every node (a terminal's Ctrl-C); return the whole output once it exits."""
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            code = self.proc.wait(timeout=STOP_BOUND_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise AssertionError(f"ros2 launch did not stop within {STOP_BOUND_S} s:\n{self.output()}") from None
        out = self.output()
        assert code == 0, f"ros2 launch exited {code}:\n{out}"
        return out


def assert_clean_stop(out: str, processes: int) -> None:
    assert "Traceback" not in out and "has died" not in out, out
    assert out.count("process has finished cleanly") == processes, out


def parameters(probe, node: str, wanted: dict[str, object], launch_log: str = "", timeout_s: float = 30.0) -> None:
    """``node``'s parameters equal ``wanted``, read back over its ``get_parameters`` service."""
    client = probe.node.create_client(GetParameters, f"{node}/get_parameters")
    assert client.wait_for_service(timeout_sec=timeout_s), f"{node} is not up\n{launch_log}"
    reply = client.call(GetParameters.Request(names=list(wanted)), timeout_sec=10.0)
    got = dict(zip(wanted, (parameter_value_to_python(v) for v in reply.values)))
    assert got == wanted, f"{node}: {got} != {wanted}"


def test_sim_robot_launch(tmp_path: Path) -> None:
    with ros_session("launch_sim", tmp_path) as (procs, probe):
        echoes = probe.collect(JointState, f"/lsim/{names.EXECUTED_ACTION}", EVENTS)
        launch = Launch(procs.domain, tmp_path / "launch.log", "sim_robot.launch.py", namespace="lsim",
                        policy="random", task="reach")
        parameters(probe, "/lsim/sim_robot", {"hardware_config": "sim_panda", "sim.task": "reach"})
        parameters(probe, "/lsim/robot_bridge", {"hardware_config": "sim_panda", "state_hz": 500.0})
        parameters(probe, "/lsim/policy_actor", {"actor.policy": "random", "env.reward": True,
                                                 "env.privileged_task": "reach", "env.hardware_config": "sim_panda"})
        wait_for(lambda: len(echoes) > 20, 60.0, f"the sim robot -> bridge -> actor loop stepping\n{launch.output()}")
        out = launch.ctrl_c()
        assert_clean_stop(out, processes=3)


def test_real_arm_launch_against_the_sim_robot(tmp_path: Path) -> None:
    with ros_session("launch_real", tmp_path) as (procs, probe):
        procs.start("sim_robot", namespace="/larm")  # stands in for the arm's driver stack
        echoes = probe.collect(JointState, f"/larm/{names.EXECUTED_ACTION}", EVENTS)
        launch = Launch(procs.domain, tmp_path / "launch.log", "real_arm.launch.py", hardware="sim_panda",
                        namespace="larm", policy="random", reward="true")
        parameters(probe, "/larm/robot_bridge", {"hardware_config": "sim_panda"}, launch.output())
        parameters(probe, "/larm/teleop", {"joy_topic": "spacenav/joy"})
        parameters(probe, "/larm/policy_actor", {"actor.policy": "random", "env.reward": True,
                                                 "actor.learner": "none", "actor.intervention_mode": "hil"})
        wait_for(lambda: len(echoes) > 20, 60.0, f"the real-arm nodes stepping the sim robot\n{launch.output()}")
        out = launch.ctrl_c()
        assert_clean_stop(out, processes=3)
        procs.assert_alive()


def test_robot_bridge_launch(tmp_path: Path) -> None:
    with ros_session("launch_bridge", tmp_path) as (procs, probe):
        FakeDriver(probe, "/lbr")
        status = probe.collect(DiagnosticArray, f"/lbr/{names.STATUS}", EVENTS)
        launch = Launch(procs.domain, tmp_path / "launch.log", "robot_bridge.launch.py", namespace="lbr")
        parameters(probe, "/lbr/robot_bridge", {"hardware_config": "sim_panda"})
        wait_for(lambda: status and "inputs:" not in status[-1][1].status[0].message, 30.0,
                 f"the bridge hearing the driver\n{launch.output()}")
        out = launch.ctrl_c()
        assert_clean_stop(out, processes=1)


def test_learner_launch(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run = tmp_path / "run"
    tiny = ("--train.agent.hidden-dims 32 32 --train.agent.num-critics 2 --train.batch-size 16 "
            "--train.scripted-demos 0 --train.torch-threads 1 --train.no-progress")
    with ros_session("launch_learner", tmp_path) as (procs, _):
        launch = Launch(procs.domain, tmp_path / "launch.log", "learner.launch.py", address=f"127.0.0.1:{port}",
                        hardware="sim_panda", learner_args=f"--train.run-dir {run} {tiny}")
        address = run / "learner_address.json"
        wait_for(lambda: address.exists(), 60.0, f"the learner listening\n{launch.output()}")
        assert json.loads(address.read_text())["port"] == port
        time.sleep(0.5)
        out = launch.ctrl_c()
        assert_clean_stop(out, processes=1)
        assert "robot-rl learner: stopped (SIGINT)" in out
