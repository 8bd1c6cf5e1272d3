"""robot_bridge: the single publisher to the arm's controller, behind the safety filter."""

from __future__ import annotations

from dataclasses import dataclass

from rclpy.node import Node

from robot_rl.ros.bridge import RobotBridge
from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.runtime import declare_dataclass, init, spin, startup_errors


@dataclass(frozen=True)
class Params:
    hardware_config: str = "sim_panda"
    """Arm config name (hardware_configs/arms/<name>.yaml) or path."""
    state_hz: float = 500.0
    """Max rate of rl/robot_state (Hz); it is published on driver pose messages."""


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("robot_bridge")
    params = declare_dataclass(node, Params)
    with startup_errors(node):
        arm = load_arm_config(params.hardware_config)
        RobotBridge(node, arm, state_hz=params.state_hz)
    node.get_logger().info(f"robot bridge for {arm.name} ({arm.command.backend} -> {arm.command.topic})")
    spin(node)


if __name__ == "__main__":
    main()
