"""The driver's topics checked against an arm config, without moving the arm: at the robot bridge's start-up
and as ``robot-rl check-hardware CONFIG``.

Checked: every required input (``robot_rl.ros.inputs.required_inputs``) has a publisher of the expected type,
delivers usable messages at a plausible rate and in the expected frame; the command topic has a subscriber (the
controller) and no publisher but the bridge. ``check_hardware`` subscribes only; it publishes nothing.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import numpy as np
from rclpy.node import Node

from robot_rl.ros.inputs import InputMonitor, InputSpec, required_inputs
from robot_rl.ros.messages import pose_from_msg
from robot_rl.ros.qos import LATCH, SENSOR
from robot_rl.ros.state import MAX_WRENCH, StateAssembler

_STD = {"bool": "std_msgs/msg/Bool", "int8": "std_msgs/msg/Int8", "int32": "std_msgs/msg/Int32"}


def message_class(type_name: str) -> type:
    """``bool``/``int8``/``int32`` or ``pkg/msg/Name``, imported now (a clear error if it is absent)."""
    pkg, _, msg = _STD.get(type_name, type_name).split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.msg"), msg)
    except (ImportError, AttributeError) as err:
        raise ImportError(f"message type {type_name!r}: not importable; install the ROS package {pkg}") from err


def type_name(msg_class: type) -> str:
    return f"{msg_class.__module__.split('.')[0]}/msg/{msg_class.__name__}"


def graph_problems(node: Node, specs: list[InputSpec], command_topic: str, command_type: type,
                   own_publisher: bool) -> list[str]:
    """What the ROS graph says is wrong: missing publishers, wrong types, no controller, a second commander."""
    types = dict(node.get_topic_names_and_types())
    out = []
    for spec in specs:
        topic = node.resolve_topic_name(spec.topic)
        found = [t for t in types.get(topic, []) if t != spec.msg_type]
        if found:
            out.append(f"{spec.name}: {topic} carries {found}, expected {spec.msg_type}")
        elif node.count_publishers(topic) == 0:
            out.append(f"{spec.name}: no publisher on {topic} ({spec.msg_type}); is the driver running, in this "
                       "namespace?")
    cmd = node.resolve_topic_name(command_topic)
    expected = type_name(command_type)
    wrong = [t for t in types.get(cmd, []) if t != expected]
    if wrong:
        out.append(f"command: {cmd} carries {wrong}, the {expected} commands would not reach the controller")
    if node.count_subscribers(cmd) == 0:
        out.append(f"command: nothing subscribes {cmd}; is the controller loaded and active?")
    others = node.count_publishers(cmd) - (1 if own_publisher else 0)
    if others > 0:
        names = [f"{i.node_namespace.rstrip('/')}/{i.node_name}" for i in node.get_publishers_info_by_topic(cmd)]
        out.append(f"command: {cmd} already has publishers {names}; the bridge must be the only one")
    return out


class _Checker:
    """Subscriptions that only look: each message is checked as the bridge would use it."""

    def __init__(self, node: Node, arm: Any, monitor: InputMonitor) -> None:
        self.arm, self.monitor = arm, monitor
        self.assembler = StateAssembler(arm.joint_names, arm.gripper.joint_names, arm.gripper.max_width_m)
        self.bad: dict[str, str] = {}
        for spec in monitor.specs():  # the bridge's QoS: sensor data, latched for latched status topics
            health = next((h for h in arm.health if f"health/{h.name}" == spec.name), None)
            qos = LATCH if health is not None and health.latched else SENSOR
            node.create_subscription(message_class(spec.msg_type), spec.topic,
                                     lambda msg, spec=spec, h=health: self.on_message(spec, h, msg), qos)

    def on_message(self, spec: InputSpec, health: Any, msg: Any) -> None:
        now = time.monotonic()
        try:
            problem = self._problem(spec, health, msg)
        except Exception as err:
            problem = f"{type(err).__name__}: {err}"
        if problem is None:
            self.monitor.arrived(spec.name, now)
        elif problem != "":
            self.bad[spec.name] = problem

    def _problem(self, spec: InputSpec, health: Any, msg: Any) -> str | None:
        """None: usable; "": not for this input (another joint group); else what is wrong."""
        if spec.frame_id is not None and msg.header.frame_id != spec.frame_id:
            self.monitor.wrong_frame(spec.name, msg.header.frame_id)
            return f"frame {msg.header.frame_id!r}, expected {spec.frame_id!r} (base_frame)"
        if spec.name == "pose":
            return None if pose_from_msg(msg) is not None else "a NaN position or a non-unit quaternion"
        if spec.name in ("joint_states", "gripper_joints"):
            arm, grip = self.assembler.on_joint_states(msg.name, msg.position, msg.velocity, 0.0)
            return None if (arm if spec.name == "joint_states" else grip) else ""
        if spec.name == "wrench":
            f, t = msg.wrench.force, msg.wrench.torque
            ok = np.all(np.abs([f.x, f.y, f.z, t.x, t.y, t.z]) <= MAX_WRENCH)
            return None if ok else f"a non-finite wrench or one beyond {MAX_WRENCH:g} N / N m"
        value = int(getattr(msg, health.field))
        return None if value in health.ok_values else f"{health.topic} = {value} (ok: {list(health.ok_values)})"


def check_hardware(config: str, seconds: float = 3.0, namespace: str = "") -> tuple[bool, list[str]]:
    """Listen to the driver for ``seconds`` and report each input and the command topic; True if all is well."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from robot_rl.ros.command_backends import BACKEND_TYPES
    from robot_rl.ros.hardware import load_arm_config

    arm = load_arm_config(config)
    monitor = InputMonitor(required_inputs(arm))
    context = Context()
    rclpy.init(context=context)
    try:
        node = Node("check_hardware", namespace=namespace or "/", context=context)
        checker = _Checker(node, arm, monitor)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        now = time.monotonic()
        problems = graph_problems(node, monitor.specs(), arm.command.topic, BACKEND_TYPES[arm.command.backend],
                                  own_publisher=False)
        report = monitor.report(now)
        lines = [f"{arm.name} ({arm.driver}), namespace {node.get_namespace()}, {seconds:.1f} s:"]
        healthy = not problems
        for spec in monitor.specs():
            text = report[spec.name]
            if spec.name in checker.bad:
                text += f"; unusable messages: {checker.bad[spec.name]}"
            ok = text.startswith("ok") and spec.name not in checker.bad
            healthy = healthy and ok
            lines.append(f"  {'ok ' if ok else 'BAD'} {spec.name:<24} {node.resolve_topic_name(spec.topic)}: {text}")
        lines += [f"  BAD {p}" for p in problems]
        lines.append("ready: the bridge can enable commands" if healthy else
                     "NOT ready: the bridge would hold the arm (fix the lines marked BAD)")
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        return healthy, lines
    finally:
        rclpy.try_shutdown(context=context)
