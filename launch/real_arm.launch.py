"""User entry point: includes robot_rl_ros's real_arm.launch.py (its arguments pass through: --show-args).

    ros2 launch launch/real_arm.launch.py <argument>:=<value> ...
"""

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource


def generate_launch_description() -> LaunchDescription:
    share = get_package_share_directory("robot_rl_ros")
    return LaunchDescription([
        IncludeLaunchDescription(PythonLaunchDescriptionSource(f"{share}/launch/real_arm.launch.py")),
    ])
