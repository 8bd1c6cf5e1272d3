"""The robot bridge alone: ``ros2 launch robot_rl_ros robot_bridge.launch.py hardware:=franka_fr3``."""

from robot_rl_ros.launch_support import describe


def generate_launch_description():
    return describe("robot_bridge")
