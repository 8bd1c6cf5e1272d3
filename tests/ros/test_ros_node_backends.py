"""Each command backend of the robot bridge publishes the right message on the right topic (real processes).

Three bridges run at once in their own namespaces (pose / twist / joint_velocity); the test process plays
the driver (current_pose + joint_states) and the policy (rl/action).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")

from conftest import ros_session, write_arm_config
from geometry_msgs.msg import PoseStamped, TwistStamped
from ros_harness import FakeDriver, wait_for
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from robot_rl.envs import names
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.messages import named_vector, pose_from_msg
from robot_rl.ros.qos import CMD, EVENTS

UR_JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
             "wrist_3_joint")
UR_Q = np.array([0.0, -1.2, 1.6, -1.9, -1.57, 0.0])
BOX = {"workspace_low_m": [0.2, -0.4, 0.0], "workspace_high_m": [0.8, 0.4, 0.6]}


@pytest.fixture(scope="module")
def bridges(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("backends")
    relative = {"joint_states": "joint_states", "current_pose": "current_pose", "wrench": None}
    configs = {
        "pose": write_arm_config(tmp, "sim_panda"),
        "twist": write_arm_config(tmp, "ur5e", topics=relative, health=[], safety=BOX,
                                  command={"topic": "servo_node/delta_twist_cmds"}),
        "jv": write_arm_config(tmp, "ur5e_forward_velocity", topics=relative, health=[], safety=BOX,
                               command={"topic": "forward_velocity_controller/commands"}),
    }
    with ros_session("backends", tmp) as (procs, probe):
        drivers = {"pose": FakeDriver(probe, "/pose"), "twist": FakeDriver(probe, "/twist"),
                   "jv": FakeDriver(probe, "/jv", joints=UR_JOINTS)}
        drivers["jv"].q = UR_Q.copy()
        for ns, cfg in configs.items():
            procs.start("robot_bridge", namespace=ns, hardware_config=cfg)
        yield procs, probe, configs, drivers


def send(probe, ns: str, action: np.ndarray, pub_cache: dict = {}):  # noqa: B006 - per-module cache
    if ns not in pub_cache:  # a new publisher's first message is lost until the bridge has matched it
        pub = probe.node.create_publisher(JointState, f"/{ns}/{names.ACTION}", CMD)
        wait_for(lambda: pub.get_subscription_count() > 0, 10.0, f"the {ns} bridge to subscribe to rl/action")
        pub_cache[ns] = pub
    pub_cache[ns].publish(named_vector(names.ACTION_NAMES, action, probe.node.get_clock().now().to_msg()))


def action(**parts: float) -> np.ndarray:
    a = np.zeros(7)
    for k, v in parts.items():
        a[names.ACTION_NAMES.index(k)] = v
    return a


def drive(probe, procs, ns: str, received: list, a: np.ndarray, accept, what: str):
    """Publish ``a`` every 50 ms until a received command satisfies ``accept``; return that message."""
    def check():
        send(probe, ns, a)
        time.sleep(0.05)
        return next((m for _, m in reversed(received) if accept(m)), None)
    return wait_for(check, 20.0, what, procs)


def test_pose_backend_publishes_pose_stamped_targets(bridges) -> None:
    procs, probe, _, drivers = bridges
    got = probe.collect(PoseStamped, "/pose/target_pose", CMD)
    grip = probe.collect(Float64MultiArray, "/pose/gripper/gripper_position_controller/commands", CMD,
                         wait_matched_s=10.0)  # the bridge sends the gripper command once, on change
    start = drivers["pose"].position.copy()
    msg = drive(probe, procs, "pose", got, action(dx=1.0, gripper=-1.0),
                lambda m: pose_from_msg(m)[0][0] > start[0] + 0.01, "a pose target moved along +x")
    pos, rot = pose_from_msg(msg)
    assert msg.header.frame_id == "base"
    np.testing.assert_allclose(pos[1:], start[1:], atol=1e-6)
    assert pos[0] - start[0] <= 0.04 + 1e-9  # reference limiting: max_target_error from the measured pose
    np.testing.assert_allclose(rot, drivers["pose"].rotation, atol=1e-6)
    wait_for(lambda: grip, 5.0, "a gripper command", procs)
    assert list(grip[-1][1].data) == [0.0]  # closed width (m), on the forward position controller's topic


def test_twist_backend_publishes_twist_stamped(bridges) -> None:
    procs, probe, configs, _ = bridges
    got = probe.collect(TwistStamped, "/twist/servo_node/delta_twist_cmds", CMD)
    msg = drive(probe, procs, "twist", got, action(dx=1.0, drz=-0.5),
                lambda m: m.twist.linear.x > 0.01, "a non-zero twist")
    arm = load_arm_config(configs["twist"])
    assert msg.header.frame_id == arm.command.frame_id
    expected = min(arm.safety.max_step_m * arm.control_hz, arm.safety.max_linear_speed_m_s)
    assert msg.twist.linear.x == pytest.approx(expected, rel=1e-6)
    assert msg.twist.angular.z == pytest.approx(-0.5 * arm.safety.max_step_rad * arm.control_hz, rel=1e-6)
    assert msg.twist.linear.y == 0.0 and msg.twist.linear.z == 0.0


def test_joint_velocity_backend_publishes_joint_speeds(bridges) -> None:
    procs, probe, configs, _ = bridges
    got = probe.collect(Float64MultiArray, "/jv/forward_velocity_controller/commands", CMD)
    msg = drive(probe, procs, "jv", got, action(dz=0.5), lambda m: any(abs(v) > 1e-4 for v in m.data),
                "non-zero joint speeds")
    arm = load_arm_config(configs["jv"])
    chain = DHChain(arm.kinematics)
    assert len(msg.data) == len(UR_JOINTS)
    twist = chain.jacobian(UR_Q) @ np.asarray(msg.data)
    # The commanded joint speeds move the TCP up (+z) at the action's speed, without sideways motion.
    assert twist[2] == pytest.approx(0.5 * arm.safety.max_step_m * arm.control_hz, rel=0.05)
    assert np.abs(twist[[0, 1, 3, 4, 5]]).max() < 0.01


def test_velocity_backends_send_zero_when_actions_stop(bridges) -> None:
    procs, probe, _, _ = bridges
    twists = probe.collect(TwistStamped, "/twist/servo_node/delta_twist_cmds", CMD)
    joints = probe.collect(Float64MultiArray, "/jv/forward_velocity_controller/commands", CMD)
    for _ in range(5):
        send(probe, "twist", action(dy=1.0))
        send(probe, "jv", action(dy=1.0))
        time.sleep(0.05)
    stop = time.monotonic()
    late = stop + 0.05
    wait_for(lambda: any(t > late and m.twist.linear.y == 0.0 for t, m in twists), 5.0, "a zero twist", procs)
    wait_for(lambda: any(t > late and not any(m.data) for t, m in joints), 5.0, "zero joint speeds", procs)


def test_status_and_echo_are_published(bridges) -> None:
    from diagnostic_msgs.msg import DiagnosticArray

    procs, probe, _, _ = bridges
    status = probe.collect(DiagnosticArray, "/pose/rl/status", EVENTS)
    echoes = probe.collect(JointState, "/pose/rl/executed_action", EVENTS)
    # -x: an earlier test may have left the target ahead of the arm along +x, where reference limiting would
    # shorten a further +x step; a step back toward the arm is only clipped to the action range. Sent until one
    # is executed: on a loaded machine the bridge may hold for a moment (a late driver reading), and then it
    # echoes the refusal (zeros, refused = 1) instead.
    def executed(m: JointState) -> bool:
        return dict(zip(m.name, m.position))["refused"] == 0.0
    msg = drive(probe, procs, "pose", echoes, action(dx=-5.0), executed, "an executed rl/executed_action echo")
    wait_for(lambda: status, 5.0, "rl/status", procs)
    e = dict(zip(msg.name, msg.position))
    assert e["dx"] == -1.0 and e["safety_clipped"] == 1.0, e
    keys = {kv.key for kv in status[-1][1].status[0].values}
    assert {"clipped_action_range", "refused_nonfinite", "commands_sent", "estop_latched"} <= keys
