"""Gripper command backends. ``topic`` (Float64MultiArray to a forward position controller) is the CI path;
the action backends import ``control_msgs`` / ``franka_msgs`` lazily, only when selected.

Every backend gets a binary command (open/closed, from the contract's gripper latch); action backends send a
goal only when it changes, the topic backend also re-sends the held command at a low rate. Action goals are
built by small pure functions, so tests check them with fake action types that have the same goal fields.
"""

from __future__ import annotations

import importlib
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from std_msgs.msg import Float64MultiArray

from robot_rl.ros.hardware import GripperConfig
from robot_rl.ros.qos import CMD


class Gripper(Protocol):
    def command(self, open_: bool) -> None: ...


class NoGripper:
    def command(self, open_: bool) -> None:
        pass


def width(cfg: GripperConfig, open_: bool) -> float:
    return cfg.open_width_m if open_ else cfg.closed_width_m


def topic_value(cfg: GripperConfig, open_: bool) -> float:
    """The topic backend's command: the width in m, or as a fraction of ``max_width_m`` (crisp_py)."""
    w = width(cfg, open_)
    return w / cfg.max_width_m if cfg.units == "fraction" else w


# --- goal builders (pure: they only set fields on the goal object they are given) ---
def gripper_command_goal(goal: Any, cfg: GripperConfig, open_: bool) -> Any:
    """control_msgs/action/GripperCommand: command.position (m), command.max_effort (N)."""
    goal.command.position = width(cfg, open_)
    goal.command.max_effort = cfg.max_effort_n
    return goal


def parallel_gripper_goal(goal: Any, cfg: GripperConfig, open_: bool) -> Any:
    """control_msgs/action/ParallelGripperCommand: command is a JointState."""
    goal.command.name = list(cfg.joint_names[:1])
    goal.command.position = [width(cfg, open_)]
    goal.command.velocity = [cfg.speed_m_s]
    goal.command.effort = [cfg.max_effort_n]
    return goal


def franka_goal(move_goal: Any, grasp_goal: Any, cfg: GripperConfig, open_: bool) -> Any:
    """franka_msgs Move (open: width, speed) or Grasp (close: width, epsilon.inner/outer, speed, force)."""
    if open_:
        move_goal.width = cfg.open_width_m
        move_goal.speed = cfg.speed_m_s
        return move_goal
    grasp_goal.width = cfg.closed_width_m
    grasp_goal.epsilon.inner = 0.005
    grasp_goal.epsilon.outer = cfg.open_width_m  # grasp anything narrower than fully open
    grasp_goal.speed = cfg.speed_m_s
    grasp_goal.force = cfg.max_effort_n
    return grasp_goal


# --- backends ---
class TopicGripper:
    """Sends on change, and re-sends the held command every ``resend_period_s``: position controllers
    subscribe volatile, so one that (re)starts after a change would otherwise never get it."""

    def __init__(self, node: Node, cfg: GripperConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg, self.clock = cfg, clock
        self.pub = node.create_publisher(Float64MultiArray, cfg.command, CMD)
        self.last: bool | None = None
        self._sent_s = -math.inf

    def command(self, open_: bool) -> None:
        now = self.clock()
        if open_ != self.last or now - self._sent_s >= self.cfg.resend_period_s:
            self.pub.publish(Float64MultiArray(data=[topic_value(self.cfg, open_)]))
            self.last, self._sent_s = open_, now


ClientFactory = Callable[[Node, Any, str, CallbackGroup | None], Any]


def _action_client(node: Node, action_type: Any, name: str, group: CallbackGroup | None) -> Any:
    from rclpy.action import ActionClient

    return ActionClient(node, action_type, name, callback_group=group)


class ActionGripper:
    """One or two action clients; goals go out asynchronously (never blocking the bridge's callbacks)."""

    def __init__(self, node: Node, cfg: GripperConfig, types: dict[str, Any],
                 client_factory: ClientFactory = _action_client, group: CallbackGroup | None = None) -> None:
        self.cfg = cfg
        self.node = node
        self.backend = cfg.backend
        if cfg.backend == "franka":
            self.clients = {
                "move": client_factory(node, types["move"], f"{cfg.command}/move", group),
                "grasp": client_factory(node, types["grasp"], f"{cfg.command}/grasp", group),
            }
        else:
            self.clients = {"main": client_factory(node, types["main"], cfg.command, group)}
        self.types = types
        self.last: bool | None = None

    def command(self, open_: bool) -> None:
        if open_ == self.last:
            return
        cfg = self.cfg
        if self.backend == "franka":
            key = "move" if open_ else "grasp"
            goal = franka_goal(self.types["move"].Goal(), self.types["grasp"].Goal(), cfg, open_)
        else:
            key = "main"
            build = gripper_command_goal if self.backend == "gripper_command" else parallel_gripper_goal
            goal = build(self.types["main"].Goal(), cfg, open_)
        client = self.clients[key]
        if not client.server_is_ready():
            self.node.get_logger().warning(f"gripper action server {cfg.command} not ready; command dropped")
            return
        client.send_goal_async(goal)
        self.last = open_


_ACTION_TYPES = {
    "gripper_command": {"main": ("control_msgs.action", "GripperCommand")},
    "parallel_gripper_command": {"main": ("control_msgs.action", "ParallelGripperCommand")},
    "franka": {"move": ("franka_msgs.action", "Move"), "grasp": ("franka_msgs.action", "Grasp")},
}


def load_action_types(backend: str) -> dict[str, Any]:
    """Import the action types of ``backend``; a clear error when its message package is missing."""
    out = {}
    for key, (module, name) in _ACTION_TYPES[backend].items():
        try:
            out[key] = getattr(importlib.import_module(module), name)
        except ImportError as err:
            raise ImportError(
                f"gripper backend {backend!r} needs {module} ({name}); install the ROS package "
                f"{module.split('.')[0]} (apt: ros-$ROS_DISTRO-{module.split('.')[0].replace('_', '-')}) "
                f"or use gripper.backend: topic"
            ) from err
    return out


def make_gripper(node: Node, cfg: GripperConfig, group: CallbackGroup | None = None) -> Gripper:
    if cfg.backend == "none":
        return NoGripper()
    if cfg.backend == "topic":
        return TopicGripper(node, cfg)
    return ActionGripper(node, cfg, load_action_types(cfg.backend), group=group)
