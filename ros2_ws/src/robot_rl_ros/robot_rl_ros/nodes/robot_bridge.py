"""robot_bridge: the single publisher to the arm's controller, behind the safety filter."""

from __future__ import annotations

from rclpy.node import Node

from robot_rl.ros.bridge import RobotBridge
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.params import BridgeParams
from robot_rl.ros.runtime import declare_dataclass, init, spin, startup_errors


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("robot_bridge")
    params = declare_dataclass(node, BridgeParams)
    with startup_errors(node):
        arm = load_arm_config(params.hardware_config)
        bridge = RobotBridge(node, arm, state_hz=params.state_hz)
    node.get_logger().info(f"robot bridge for {arm.name} ({arm.command.backend} -> {arm.command.topic})")
    spin(node, on_stop=bridge.stop)


if __name__ == "__main__":
    main()
