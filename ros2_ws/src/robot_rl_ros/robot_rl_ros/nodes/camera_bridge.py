"""camera_bridge: one camera's images -> cropped/resized rgb8 on rl/images/<name>."""

from __future__ import annotations

from rclpy.node import Node

from robot_rl.ros.camera import CameraBridge
from robot_rl.ros.hardware import load_camera_config
from robot_rl.ros.params import CameraParams
from robot_rl.ros.runtime import declare_dataclass, init, spin, startup_errors


def main(argv: list[str] | None = None) -> None:
    init(argv)
    node = Node("camera_bridge")
    params = declare_dataclass(node, CameraParams)
    with startup_errors(node):
        cfg = load_camera_config(params.camera_config)
        CameraBridge(node, cfg)
    node.get_logger().info(f"camera bridge {cfg.name}: {cfg.topic} ({cfg.transport}) -> {cfg.output_hw_px}")
    spin(node)


if __name__ == "__main__":
    main()
