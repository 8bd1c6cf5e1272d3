"""Command backends: a filtered ``Sent`` -> the driver's message on the driver's topic (CMD QoS).

pose: PoseStamped (crisp ``target_pose``, FZI ``<ctrl>/target_frame``); twist: TwistStamped (MoveIt Servo
``~/delta_twist_cmds``); joint_velocity: Float64MultiArray of joint speeds (forward_velocity_controller),
from the TCP twist through the arm's DH Jacobian; zeros when holding or when joint states are missing.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped, TwistStamped
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

from robot_rl.ros.hardware import ArmConfig
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.messages import pose_msg
from robot_rl.ros.qos import CMD
from robot_rl.safety.filter import Sent


class PoseBackend:
    msg_type = PoseStamped

    def __init__(self, node: Node, arm: ArmConfig) -> None:
        self.frame_id = arm.command.frame_id
        self.pub = node.create_publisher(PoseStamped, arm.command.topic, CMD)

    def publish(self, sent: Sent, stamp: Time) -> bool:
        if sent.position is None or sent.rotation is None:
            return False
        self.pub.publish(pose_msg(sent.position, sent.rotation, self.frame_id, stamp))
        return True


class TwistBackend:
    msg_type = TwistStamped

    def __init__(self, node: Node, arm: ArmConfig) -> None:
        self.frame_id = arm.command.frame_id
        self.pub = node.create_publisher(TwistStamped, arm.command.topic, CMD)

    def publish(self, sent: Sent, stamp: Time) -> bool:
        if sent.linear is None or sent.angular is None:
            return False
        msg = TwistStamped()
        msg.header.stamp = stamp
        msg.header.frame_id = self.frame_id
        t = msg.twist
        t.linear.x, t.linear.y, t.linear.z = (float(v) for v in sent.linear)
        t.angular.x, t.angular.y, t.angular.z = (float(v) for v in sent.angular)
        self.pub.publish(msg)
        return True


class JointVelocityBackend:
    msg_type = Float64MultiArray

    def __init__(self, node: Node, arm: ArmConfig, joint_positions: Callable[[], np.ndarray | None]) -> None:
        assert arm.kinematics is not None  # ArmConfig validates this for joint_velocity
        self.chain = DHChain(arm.kinematics)
        self.joint_positions = joint_positions
        self.pub = node.create_publisher(Float64MultiArray, arm.command.topic, CMD)

    def joint_command(self, sent: Sent) -> np.ndarray | None:
        if sent.linear is None or sent.angular is None:
            return None
        q = self.joint_positions()
        if q is None or not (np.any(sent.linear) or np.any(sent.angular)):
            return np.zeros(self.chain.n)
        return self.chain.joint_velocity(q, sent.linear, sent.angular)

    def publish(self, sent: Sent, stamp: Time) -> bool:
        qdot = self.joint_command(sent)
        if qdot is None:
            return False
        self.pub.publish(Float64MultiArray(data=[float(v) for v in qdot]))
        return True


Backend = PoseBackend | TwistBackend | JointVelocityBackend
BACKEND_TYPES: dict[str, type] = {"pose": PoseBackend.msg_type, "twist": TwistBackend.msg_type,
                                  "joint_velocity": JointVelocityBackend.msg_type}


def make_backend(node: Node, arm: ArmConfig, joint_positions: Callable[[], np.ndarray | None]) -> Backend:
    if arm.command.backend == "pose":
        return PoseBackend(node, arm)
    if arm.command.backend == "twist":
        return TwistBackend(node, arm)
    return JointVelocityBackend(node, arm, joint_positions)
