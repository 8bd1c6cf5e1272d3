"""sim_robot: a MuJoCo arm task with the topics, QoS and controller semantics of a crisp driver stack."""

from __future__ import annotations

from rclpy.node import Node

from robot_rl.ros.hardware import load_arm_config
from robot_rl.ros.params import SimRobotConfig, SimRobotParams
from robot_rl.ros.runtime import declare_dataclass, init, spin, startup_errors
from robot_rl.ros.sim_robot import SimRobotNode


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("sim_robot")
    params = declare_dataclass(node, SimRobotParams)
    sim_cfg = declare_dataclass(node, SimRobotConfig, prefix="sim.")
    with startup_errors(node):
        sim = SimRobotNode(node, load_arm_config(params.hardware_config), sim_cfg)
    c = sim.cfg
    node.get_logger().info(f"sim robot: task {c.task}, state {c.state_hz} Hz, cameras {c.cameras}")
    spin(node, on_stop=sim.close)  # the camera thread ends before the node goes


if __name__ == "__main__":
    main()
