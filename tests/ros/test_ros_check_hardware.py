"""``robot-rl check-hardware`` against a live (stand-in) driver over real DDS: ready when every required input
is healthy and the controller listens; a clear report and exit status 1 when an input is missing or in the
wrong frame. It only listens: nothing is published on the command topic."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("rclpy")
from conftest import ros_session
from geometry_msgs.msg import PoseStamped
from ros_harness import FakeDriver, process_env

from robot_rl.ros.qos import CMD

NS = "/hw"


def check(domain: int) -> tuple[int, str]:
    out = subprocess.run([sys.executable, "-m", "robot_rl.cli", "check-hardware", "sim_panda", "--namespace", NS,
                          "--seconds", "5"], env=process_env(domain), capture_output=True, text=True, timeout=120)
    return out.returncode, out.stdout + out.stderr


def test_check_hardware_reports_each_input(tmp_path) -> None:
    with ros_session("check_hardware", tmp_path) as (_, probe):
        driver = FakeDriver(probe, NS)
        targets: list = []
        probe.node.create_subscription(PoseStamped, f"{NS}/target_pose", targets.append, CMD)  # the controller
        domain = probe.node.context.get_domain_id()

        code, report = check(domain)
        assert code == 0, report
        assert "ok  pose" in report and "ok  wrench" in report and "ok  gripper_joints" in report
        assert "ready: the bridge can enable commands" in report

        driver.with_wrench = False
        driver.frame_id = "world"
        code, report = check(domain)
        assert code == 1, report
        assert "BAD wrench" in report and "nothing received on wrench" in report
        assert "BAD pose" in report and "frame 'world', expected 'base'" in report
        assert "NOT ready" in report
        assert not targets, "check-hardware published a command"
