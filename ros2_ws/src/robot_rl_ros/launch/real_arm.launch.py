"""A real arm: robot bridge, camera bridges, teleop and the policy actor (learner optional or remote).

Start the arm's driver stack first (docs/hardware.md), then:

    ros2 launch robot_rl_ros real_arm.launch.py hardware:=franka_fr3 \
        cameras:=realsense_d435_front,realsense_d405_wrist policy:=checkpoint checkpoint:=runs/...

Arguments and what they start: robot_rl_ros/plans.py (``ros2 launch ... --show-args`` lists them).
"""

from robot_rl_ros.launch_support import describe


def generate_launch_description():
    return describe("real_arm")
