"""The MuJoCo sim robot behind ROS 2, with the robot bridge, camera bridges and the policy actor:

    ros2 launch robot_rl_ros sim_robot.launch.py task:=reach policy:=checkpoint checkpoint:=runs/<run>

Arguments and what they start: robot_rl_ros/plans.py (``ros2 launch ... --show-args`` lists them).
"""

from robot_rl_ros.launch_support import describe


def generate_launch_description():
    return describe("sim_robot")
