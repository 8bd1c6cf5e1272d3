"""The learner (not a ROS node: robot_rl's learner process, listening for actors on ``address``)."""

from launch import LaunchDescription
from launch.actions import ExecuteProcess, OpaqueFunction

from robot_rl_ros.launch_support import arg, value
from robot_rl_ros.specs import LEARNER_COMMAND


def _processes(context):
    extra = value(context, "learner_args").split()
    cmd = [*LEARNER_COMMAND, "--address", value(context, "address"), *extra]
    return [ExecuteProcess(cmd=cmd, output="screen")]


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription([
        arg("address", "0.0.0.0:50051", "host:port the learner listens on"),
        arg("learner_args", "", "further arguments for robot-rl learner"),
        OpaqueFunction(function=_processes),
    ])
