"""The robot bridge alone: ``ros2 launch robot_rl_ros robot_bridge.launch.py hardware:=franka_fr3``."""

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from launch_ros.actions import Node

from robot_rl_ros.launch_support import arg, environment, value
from robot_rl_ros.specs import SPECS, share_dir


def _nodes(context):
    ns = value(context, "namespace")
    overrides = {"hardware_config": value(context, "hardware")}
    return [Node(**SPECS["robot_bridge"].launch_kwargs(share_dir(), ns, overrides=overrides))]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        arg("hardware", "sim_panda", "arm config: hardware_configs/arms/<name>.yaml or a path"),
        arg("namespace", "", "namespace of the arm (driver topics resolve inside it)"),
        *environment(),
        OpaqueFunction(function=_nodes),
    ])
