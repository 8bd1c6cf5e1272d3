"""teleop: sensor_msgs/Joy (SpaceMouse, gamepad) -> rl/intervention at a fixed rate."""

from __future__ import annotations

import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState, Joy

from robot_rl.envs import names
from robot_rl.ros.messages import named_vector
from robot_rl.ros.qos import SENSOR
from robot_rl.ros.runtime import declare_dataclass, init, spin
from robot_rl.ros.teleop import JoyMapper, TeleopConfig


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("teleop")
    cfg = declare_dataclass(node, TeleopConfig)
    mapper = JoyMapper(cfg)
    pub = node.create_publisher(JointState, names.INTERVENTION, SENSOR)
    group = MutuallyExclusiveCallbackGroup()
    node.create_subscription(Joy, cfg.joy_topic, lambda m: mapper.update(m.axes, m.buttons, time.monotonic()),
                             SENSOR, callback_group=group)

    def publish() -> None:
        stamp = node.get_clock().now().to_msg()
        pub.publish(named_vector(names.INTERVENTION_NAMES, mapper.vector(time.monotonic()), stamp))

    node.create_timer(1.0 / cfg.rate_hz, publish, callback_group=group)

    def release() -> None:  # on SIGINT/SIGTERM: end any intervention at once instead of by timeout
        pub.publish(named_vector(names.INTERVENTION_NAMES, [0.0] * 8, node.get_clock().now().to_msg()))

    spin(node, on_stop=release)


if __name__ == "__main__":
    main()
