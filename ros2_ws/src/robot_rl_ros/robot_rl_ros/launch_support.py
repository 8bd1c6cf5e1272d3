"""Our launch files' one builder (imported only inside ``ros2 launch``: needs launch and launch_ros): a launch
file is ``describe(<name>)`` over its plan (``robot_rl_ros.plans``)."""

from __future__ import annotations

from typing import Any

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from robot_rl_ros.plans import LAUNCH_FILES, NodePlan, Plan
from robot_rl_ros.specs import ENVIRONMENT, SPECS, share_dir


def describe(launch_file: str) -> LaunchDescription:
    """The launch description of ``<launch_file>.launch.py``: its arguments, our environment, its plan."""
    arguments, build = LAUNCH_FILES[launch_file]
    args = arguments()
    declared = [DeclareLaunchArgument(a.name, description=a.description) if a.default is None else
                DeclareLaunchArgument(a.name, default_value=a.default, description=a.description) for a in args]

    def actions(context: Any) -> list:
        values = {a.name: LaunchConfiguration(a.name).perform(context) for a in args}
        return [_action(p) for p in build(values)]

    return LaunchDescription([*declared, *(SetEnvironmentVariable(k, v) for k, v in ENVIRONMENT.items()),
                              OpaqueFunction(function=actions)])


def _action(p: Plan) -> Node | ExecuteProcess:
    if isinstance(p, NodePlan):
        return Node(**SPECS[p.spec].launch_kwargs(share_dir(), p.namespace, p.name, p.overrides,
                                                  rt_priority=p.rt_priority))
    return ExecuteProcess(cmd=list(p.cmd), output="screen")
