"""Robot bridge safety over real DDS: e-stop latching, the two-publisher guard (latched), garbage inputs that
must never produce a command outside the workspace box or kill the node (short joint states, absurd poses, a
wrong frame), the held gripper command reaching a late controller, and interventions from the teleop node
overriding the policy. Bridge and teleop run as processes; the test plays driver, policy and joystick."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import ros_session, write_arm_config
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile
from ros_harness import FakeDriver, wait_for
from sensor_msgs.msg import JointState, Joy
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from robot_rl.envs import names
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.messages import named_vector, pose_from_msg, pose_msg
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

    def state(self) -> str:
        return self.status[-1][1].status[0].message.split(" ")[0].rstrip(";") if self.status else ""

    def message(self) -> str:
        return self.status[-1][1].status[0].message if self.status else ""

    def counter(self, key: str) -> int:
        values = {kv.key: kv.value for kv in self.status[-1][1].status[0].values}
        return int(values[key])

    def stream(self, values, seconds: float, hz: float = 10.0) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.act(values)
            time.sleep(1.0 / hz)

    def reset(self) -> None:
        """Clear what an earlier test latched (a reset never does), then reset at the home pose."""
        self.driver.position = np.array([0.5, 0.0, 0.3])
        time.sleep(0.1)
        assert self.probe.call(Trigger, f"{NS}/robot_bridge/clear_faults").success
        assert self.probe.call(Trigger, f"{NS}/robot_bridge/clear_estop").success
        reply = self.probe.call(Trigger, f"{NS}/robot_bridge/reset")
        assert reply.success, reply.message

    def targets_since(self, t: float) -> list[np.ndarray]:
        return [pose_from_msg(m)[0] for s, m in self.targets if s > t]


def test_estop_latches_and_clears_only_on_request(rig: Rig) -> None:
    rig.reset()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 0.5)
    wait_for(lambda: rig.state() == "active", 5.0, "active", rig.procs)
    rig.estop_pub.publish(Bool(data=True))
    wait_for(lambda: rig.state() == "estopped", 5.0, "estopped", rig.procs)
    rig.estop_pub.publish(Bool(data=False))  # releasing the input must not clear the latch
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 1.0)
    moved = rig.targets_since(t)
    assert moved and np.ptp(np.array(moved)[:, 0]) < 1e-9, "the arm moved while e-stopped"
    assert rig.state() == "estopped"
    assert rig.counter("refused_estopped") >= 5
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_estop").success
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 1.0)
    after = rig.targets_since(t)
    assert after and np.ptp(np.array(after)[:, 0]) > 0.01, "actions do not move the arm after clear_estop"
    # The service e-stop latches the same way.
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/estop").success
    wait_for(lambda: rig.state() == "estopped", 5.0, "estopped by the service", rig.procs)
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_estop").success


def test_second_publisher_on_the_command_topic_is_refused_reported_and_latched(rig: Rig) -> None:
    rig.reset()
    rogue = rig.probe.node.create_publisher(PoseStamped, f"{NS}/target_pose", CMD)
    try:
        wait_for(lambda: rig.state() == "faulted", 10.0, "a fault for two publishers", rig.procs)
        assert "multiple_publishers" in rig.message() and "test_probe" in rig.message()
        t = time.monotonic()
        rig.stream([1, 0, 0, 0, 0, 0, 1], 0.6)
        time.sleep(0.1)
        assert not rig.targets_since(t + 0.15), "the bridge kept commanding with a second publisher present"
        assert rig.counter("refused_faulted") > 0
        refused = rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_faults")
        assert not refused.success and "still present" in refused.message
    finally:
        rig.probe.destroy(rogue)
    time.sleep(1.0)
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 0.6)
    assert rig.state() == "faulted", "the fault cleared itself when the intruder left"
    assert not rig.targets_since(t + 0.15)
    assert rig.probe.call(Trigger, f"{NS}/robot_bridge/clear_faults").success
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 1], 0.6)
    assert rig.targets_since(t), "the bridge did not resume after clear_faults"


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
    for key in ("refused_nonfinite", "refused_shape", "clipped_action_range", "bad_observation",
                "malformed_actions"):
        assert rig.counter(key) > 0, key
    rig.procs.assert_alive()
    rig.driver.position = np.array([0.5, 0.0, 0.3])


def test_unreadable_joint_states_are_dropped_counted_and_survived(rig: Rig) -> None:
    """Fewer positions than names, effort only, NaN joints: each one dropped and counted; the node lives on."""
    rig.reset()
    pub = rig.probe.node.create_publisher(JointState, f"{NS}/joint_states", 10)
    names9 = [*rig.arm.joint_names, *rig.arm.gripper.joint_names]
    bad = [JointState(name=names9, position=[0.0] * 3), JointState(name=names9, effort=[1.0] * 9),
           JointState(name=names9, position=[np.nan] * 9), JointState(name=names9 + names9[:1], position=[0.0] * 10)]
    for _ in range(10):
        for msg in bad:  # spaced: the bridge reads driver topics with depth 1 (only the newest matters)
            pub.publish(msg)
            time.sleep(0.015)
        rig.act([0.3, 0, 0, 0, 0, 0, 0])
    time.sleep(0.5)
    rig.procs.assert_alive()
    assert rig.counter("bad_joint_states") >= 30  # best effort in: nearly all arrive
    assert rig.counter("callback_errors") == 0
    rig.stream([0.3, 0, 0, 0, 0, 0, 0], 0.5)
    assert rig.state() == "active"


def test_an_absurd_pose_reading_never_moves_the_arm(rig: Rig) -> None:
    """Finite but absurd TCP readings interleaved with good ones: dropped and counted, and no command moves
    further than the per-command step limit from the one before."""
    rig.reset()
    liar = rig.probe.node.create_publisher(PoseStamped, f"{NS}/current_pose", 10)
    every = rig.probe.collect(PoseStamped, f"{NS}/target_pose", QoSProfile(depth=1000))
    far = [np.array([0.74, 0.34, 0.44]), np.array([2.0, 1.0, 0.3]), np.array([5.0, 0.0, 0.3])]
    end = time.monotonic() + 2.0
    i = 0
    while time.monotonic() < end:
        stamp = rig.probe.node.get_clock().now().to_msg()
        liar.publish(pose_msg(far[i % 3], rig.driver.rotation, "base", stamp))
        rig.act([1, 1, 1, 0, 0, 0, 0])
        i += 1
        time.sleep(0.05)
    rig.probe.destroy(liar)
    time.sleep(0.2)
    sent = np.array([pose_from_msg(m)[0] for _, m in every])
    assert len(sent) > 20
    steps = np.linalg.norm(np.diff(sent, axis=0), axis=1)
    assert steps.max() <= rig.arm.safety.max_translation_step_m + 1e-6, f"a target jumped {steps.max():.3f} m"
    assert rig.counter("implausible_observation") + rig.counter("bad_observation") >= 20
    assert rig.state() != "faulted", rig.message()  # interleaved with good readings: never three in a row


def test_a_pose_in_the_wrong_frame_holds_and_is_reported(rig: Rig) -> None:
    rig.reset()
    rig.driver.frame_id = "world"
    try:
        wait_for(lambda: "frame 'world'" in rig.message(), 5.0, "the frame problem in rl/status", rig.procs)
        t = time.monotonic()
        rig.stream([1, 0, 0, 0, 0, 0, 0], 0.8)
        moved = rig.targets_since(t)
        assert not moved or np.ptp(np.array(moved), axis=0).max() < 1e-9, "the arm moved on a wrong-frame pose"
        assert rig.state() in ("holding", "inactive") and rig.counter("refused_frame") > 10
        assert rig.counter("refused_inputs") > 0
    finally:
        rig.driver.frame_id = "base"
    wait_for(lambda: "inputs:" not in rig.message(), 5.0, "the inputs to be healthy again", rig.procs)
    log = (rig.procs.log_dir / "arm_robot_bridge.log").read_text()
    assert log.count("is in frame 'world'") == 1, "the input problem is logged once, when it starts"
    t = time.monotonic()
    rig.stream([1, 0, 0, 0, 0, 0, 0], 0.6)
    assert rig.targets_since(t)


def test_the_held_gripper_command_reaches_a_controller_that_subscribes_late(rig: Rig) -> None:
    rig.reset()
    rig.stream([0, 0, 0, 0, 0, 0, -1], 0.5)  # close: sent once on the change...
    late = rig.probe.collect(Float64MultiArray, f"{NS}/{rig.arm.gripper.command}", CMD)
    rig.stream([0, 0, 0, 0, 0, 0, 0], 1.6)  # ...and re-sent while held (resend_period_s 1 s)
    assert late and list(late[-1][1].data) == [rig.arm.gripper.closed_width_m]


def test_teleop_intervention_overrides_the_policy(rig: Rig) -> None:
    rig.reset()
    joy_pub = rig.probe.node.create_publisher(Joy, f"{NS}/joy", 10)
    echoes = rig.probe.collect(JointState, f"{NS}/{names.EXECUTED_ACTION}", EVENTS)

    def executed() -> dict[str, float]:
        """The last action the bridge sent on: which source the mux chose. An action the filter refused (the arm
        held, e.g. while a loaded machine delays the driver's readings) says nothing about the mux."""
        sent = [e for e in (dict(zip(m.name, m.position)) for _, m in echoes) if e["refused"] == 0.0]
        return sent[-1] if sent else {}

    def joy_and_policy(axes: list[float], buttons: list[int], intervention: float) -> None:
        """Stream the device and the policy for a second, and on until an action from the expected source is
        executed (at most 5 s more)."""
        start = time.monotonic()
        while time.monotonic() < start + 1.0 or executed().get("intervention") != intervention:
            assert time.monotonic() < start + 6.0, f"no executed action with intervention={intervention}: {executed()}"
            joy_pub.publish(Joy(axes=axes, buttons=buttons))
            rig.act([0, 0.3, 0, 0, 0, 0, 0])  # the policy wants +y
            time.sleep(0.05)

    joy_and_policy([0.0] * 6, [0, 0], 0.0)
    assert executed()["dy"] == pytest.approx(0.3)
    joy_and_policy([0.6, 0, 0, 0, 0, 0], [1, 0], 1.0)  # SpaceMouse pushed along x, close button
    e = executed()
    assert e["dx"] == pytest.approx(0.6) and e["dy"] == 0.0 and e["gripper"] == -1.0
    joy_and_policy([0.0] * 6, [0, 0], 0.0)  # released: the policy again
    assert executed()["dy"] == pytest.approx(0.3)
