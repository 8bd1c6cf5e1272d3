"""Robot bridge safety over real DDS: e-stop latching, the two-publisher guard, garbage inputs that must
never produce a command outside the workspace box, and interventions from the teleop node overriding the
policy. Bridge and teleop run as processes; the test plays driver, policy and joystick."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import ros_session, write_arm_config
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from ros_harness import FakeDriver, wait_for
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from robot_rl.ros import names
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.messages import named_vector, pose_from_msg
from robot_rl.ros.qos import CMD, EVENTS, LATCH

NS = "/arm"


@pytest.fixture(scope="module")
def rig(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safety")
    config = write_arm_config(tmp, "sim_panda", reset_services=[])
    with ros_session("safety", tmp) as (procs, probe):
        driver = FakeDriver(probe, NS, follow=True)
        procs.start("robot_bridge", namespace=NS, hardware_config=config)
        procs.start("teleop", namespace=NS, joy_topic="joy", input_timeout_s=0.5)
        rig = Rig(procs, probe, driver, load_arm_config(config))
        wait_for(lambda: rig.status, 20.0, "the bridge's status", procs)
        yield rig


class Rig:
    def __init__(self, procs, probe, driver, arm) -> None:
        self.procs, self.probe, self.driver, self.arm = procs, probe, driver, arm
        node = probe.node
        self.action_pub = node.create_publisher(JointState, f"{NS}/{names.ACTION}", CMD)
        self.estop_pub = node.create_publisher(Bool, f"{NS}/{names.ESTOP}", LATCH)
        self.targets = probe.collect(PoseStamped, f"{NS}/target_pose", CMD)
        self.status = probe.collect(DiagnosticArray, f"{NS}/{names.STATUS}", EVENTS)

    def act(self, values, names_=names.ACTION_NAMES) -> None:
        stamp = self.probe.node.get_clock().now().to_msg()
        self.action_pub.publish(named_vector(names_, values, stamp))

    def mode(self) -> str:
        return self.status[-1][1].status[0].message.split(" ")[0].rstrip(";") if self.status else ""

    def counter(self, key: str) -> int:
        values = {kv.key: kv.value for kv in self.status[-1][1].status[0].values}
        return int(values[key])

    def stream(self, values, seconds: float, hz: float = 10.0) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.act(values)
            time.sleep(1.0 / hz)

    def reset(self) -> None:
        assert self.probe.call(Trigger, f"{NS}/robot_bridge/reset").success
        self.driver.position = np.array([0.5, 0.0, 0.3])

    def targets_since(self, t: float) -> list[np.ndarray]:
        return [pose_from_msg(m)[0] for s, m in self.targets if s > t]


def test_estop_latches_and_clears_only_on_request(rig: Rig) -> None:
    rig.reset()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 0.5)
    wait_for(lambda: rig.mode() == "active", 5.0, "active mode", rig.procs)
    rig.estop_pub.publish(Bool(data=True))
    wait_for(lambda: rig.mode() == "estop", 5.0, "estop mode", rig.procs)
    rig.estop_pub.publish(Bool(data=False))  # releasing the input must not clear the latch
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 1.0)
    moved = rig.targets_since(t)
    assert moved and np.ptp(np.array(moved)[:, 0]) < 1e-9, "the arm moved while e-stopped"
    assert rig.mode() == "estop"
    assert rig.counter("refused_estop") >= 5
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_estop").success
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 1.0)
    after = rig.targets_since(t)
    assert after and np.ptp(np.array(after)[:, 0]) > 0.01, "actions do not move the arm after clear_estop"
    # The service e-stop latches the same way.
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/estop").success
    wait_for(lambda: rig.mode() == "estop", 5.0, "estop mode from the service", rig.procs)
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_estop").success


def test_second_publisher_on_the_command_topic_is_refused_and_reported(rig: Rig) -> None:
    rig.reset()
    rogue = rig.probe.node.create_publisher(PoseStamped, f"{NS}/target_pose", CMD)
    try:
        wait_for(lambda: rig.mode() == "fault", 10.0, "a fault for two publishers", rig.procs)
        message = rig.status[-1][1].status[0].message
        assert "multiple_publishers" in message and "test_probe" in message
        t = time.monotonic()
        rig.stream([1, 0, 0, 0, 0, 0, 1], 0.6)
        time.sleep(0.1)
        assert not rig.targets_since(t + 0.15), "the bridge kept commanding with a second publisher present"
        assert rig.counter("refused_fault") > 0
    finally:
        rig.probe.node.destroy_publisher(rogue)
    wait_for(lambda: rig.mode() != "fault", 10.0, "the fault to clear", rig.procs)
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 0.6)
    assert rig.targets_since(t), "the bridge did not resume after the second publisher left"


def test_garbage_inputs_never_command_outside_the_box(rig: Rig) -> None:
    rig.reset()
    low, high = np.array(rig.arm.safety.workspace_low_m), np.array(rig.arm.safety.workspace_high_m)
    t = time.monotonic()
    rng = np.random.default_rng(0)
    for i in range(120):
        kind = i % 6
        if kind == 0:
            rig.act(rng.uniform(-50, 50, 7))  # far out of range
        elif kind == 1:
            rig.act([np.nan, 0, 0, np.inf, 0, 0, 0])
        elif kind == 2:
            rig.act([1, 1, 1], names_=("dx", "dy", "dz"))  # malformed: missing labels
        elif kind == 3:
            rig.act([1, 1, 1, 0, 0, 0, 0])  # drive into a corner of the box
        elif kind == 4:
            rig.driver.position = np.array([np.nan, 0.0, 0.3]) if i % 12 == 4 else rig.driver.position
        else:
            rig.driver.position = np.clip(rig.driver.position, low - 0.2, high + 0.2)
        if i == 60:  # observations go stale for a while
            rig.driver.publishing = False
        if i == 80:
            rig.driver.publishing = True
        time.sleep(0.02)
    time.sleep(0.3)
    sent = np.array(rig.targets_since(t))
    assert len(sent) > 20
    assert np.all(np.isfinite(sent))
    assert np.all(sent >= low - 1e-9) and np.all(sent <= high + 1e-9), "a command left the workspace box"
    for key in ("refused_nonfinite", "refused_shape", "clipped_action_range", "bad_observation"):
        assert rig.counter(key) > 0, key
    rig.driver.position = np.array([0.5, 0.0, 0.3])


def test_teleop_intervention_overrides_the_policy(rig: Rig) -> None:
    rig.reset()
    joy_pub = rig.probe.node.create_publisher(Joy, f"{NS}/joy", 10)
    echoes = rig.probe.collect(JointState, f"{NS}/{names.EXECUTED_ACTION}", EVENTS)

    def executed() -> dict[str, float]:
        return dict(zip(echoes[-1][1].name, echoes[-1][1].position)) if echoes else {}

    def joy_and_policy(axes: list[float], buttons: list[int], seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            joy_pub.publish(Joy(axes=axes, buttons=buttons))
            rig.act([0, 0.3, 0, 0, 0, 0, 0])  # the policy wants +y
            time.sleep(0.05)

    joy_and_policy([0.0] * 6, [0, 0], 1.0)
    wait_for(lambda: executed().get("intervention") == 0.0, 5.0, "policy actions executed", rig.procs)
    assert executed()["dy"] == pytest.approx(0.3)
    joy_and_policy([0.6, 0, 0, 0, 0, 0], [1, 0], 1.0)  # SpaceMouse pushed along x, close button
    e = executed()
    assert e["intervention"] == 1.0 and e["dx"] == pytest.approx(0.6) and e["dy"] == 0.0 and e["gripper"] == -1.0
    joy_and_policy([0.0] * 6, [0, 0], 1.0)  # released: the policy again
    assert executed()["intervention"] == 0.0 and executed()["dy"] == pytest.approx(0.3)
