"""reward_classifier: a trained success classifier on rl/images/<cam> (+ state checks on rl/robot_state)
-> rl/reward [reward, success, probability], the sparse reward and success the policy actor's env reads."""

from __future__ import annotations

import time

from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState

from robot_rl.envs import names
from robot_rl.envs.contract import image_key
from robot_rl.ros.messages import image_from_msg, named_vector
from robot_rl.ros.qos import SENSOR
from robot_rl.ros.reward import STATE_KEY, RewardCore, RewardNodeConfig
from robot_rl.ros.runtime import declare_dataclass, init, spin, startup_errors

OUTPUT_NAMES = (*names.REWARD_NAMES, "probability")


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("reward_classifier")
    cfg = declare_dataclass(node, RewardNodeConfig)
    with startup_errors(node):
        core = RewardCore(cfg)
    group = MutuallyExclusiveCallbackGroup()  # inputs and evaluation never interleave
    sub = node.create_subscription
    for camera in core.cameras:
        key = image_key(camera)
        sub(Image, names.image_topic(camera), lambda m, k=key: core.put(k, image_from_msg(m), time.monotonic()),
            SENSOR, callback_group=group)
    if core.needs_state:

        def on_state(msg: JointState) -> None:
            state = names.pick(msg.name, msg.position, names.STATE_NAMES)
            if state is not None:  # a malformed vector is not a state: the old one ages out instead
                core.put(STATE_KEY, state.astype("float32"), time.monotonic())

        sub(JointState, names.ROBOT_STATE, on_state, SENSOR, callback_group=group)
    pub = node.create_publisher(JointState, names.REWARD, SENSOR)

    def evaluate() -> None:
        out = core.compute(time.monotonic())
        if out is not None:
            stamp = node.get_clock().now().to_msg()
            pub.publish(named_vector(OUTPUT_NAMES, [out.reward, float(out.success), out.probability], stamp))

    node.create_timer(1.0 / cfg.rate_hz, evaluate, callback_group=group)
    node.get_logger().info(f"reward classifier {cfg.classifier}: inputs {list(core.keys)} -> {names.REWARD}")
    spin(node)


if __name__ == "__main__":
    main()
