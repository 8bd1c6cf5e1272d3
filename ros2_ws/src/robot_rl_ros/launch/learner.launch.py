"""The learner (not a ROS node: robot_rl's learner process, listening for actors on ``address``).

It needs no ROS and no robot, only the arm's and cameras' configs (to build the same spaces as the actor):

    ros2 launch robot_rl_ros learner.launch.py address:=0.0.0.0:50051 hardware:=franka_fr3 \
        cameras:=realsense_d435_front learner_args:="--train.run-dir runs/fr3-pick --link.token-file ~/.robot_rl_token"
"""

from robot_rl_ros.launch_support import describe


def generate_launch_description():
    return describe("learner")
