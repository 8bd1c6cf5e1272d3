"""The learner (not a ROS node: robot_rl's learner process, listening for actors on ``address``).

It needs no ROS and no robot, only the arm's and cameras' configs (to build the same spaces as the actor):

    ros2 launch robot_rl_ros learner.launch.py hardware:=franka_fr3 cameras:=realsense_d435_front \
        learner_args:="--train.run-dir runs/fr3-pick --link.token-file ~/.robot_rl_token"
"""

from launch import LaunchDescription
from launch.actions import ExecuteProcess, OpaqueFunction

from robot_rl_ros.launch_support import arg, names, value
from robot_rl_ros.specs import learner_argv


def _processes(context):
    cmd = learner_argv(value(context, "address"), value(context, "hardware"), names(context, "cameras"),
                       extra=value(context, "learner_args").split(),
                       intervention_mode=value(context, "intervention_mode"))
    return [ExecuteProcess(cmd=cmd, output="screen")]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        arg("address", "0.0.0.0:50051", "host:port the learner listens on"),
        arg("hardware", "franka_fr3", "the actor's arm config (the learner builds the same spaces)"),
        arg("cameras", "realsense_d435_front", "the actor's comma-separated camera configs"),
        arg("intervention_mode", "hil", "hil | rlif: must match the actor's (real_arm.launch.py)"),
        arg("learner_args", "", "further arguments for robot-rl learner"),
        OpaqueFunction(function=_processes),
    ])
