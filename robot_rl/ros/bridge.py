"""``RobotBridge``: the single publisher to the arm's controller, with the safety filter in front of it.

Wiring only: every callback takes the lock and calls library code (``SafetyFilter``, ``StateAssembler``,
``InterventionMux``, the command and gripper backends). Driver inputs use SENSOR QoS (they match reliable
and best-effort publishers); commands use CMD; e-stop and driver status use LATCH.

Interfaces (relative names resolve in the bridge's namespace):
  in   driver joint_states / current_pose / wrench, ``rl/action``, ``rl/intervention``, ``rl/estop`` (Bool)
  out  the command topic, ``rl/robot_state``, ``rl/executed_action``, ``rl/status`` (DiagnosticArray)
  srv  ``~/reset`` ``~/estop`` ``~/clear_estop`` (Trigger), ``~/enable`` (SetBool)
"""

from __future__ import annotations

import importlib
import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Int8, Int32
from std_srvs.srv import SetBool, Trigger

from robot_rl.envs.geometry import matrix_to_rotvec, quat_to_matrix, rotation_angle_between
from robot_rl.ros import names
from robot_rl.ros.commands import make_backend
from robot_rl.ros.gripper import make_gripper
from robot_rl.ros.hardware import ArmConfig, HealthInput
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.messages import from_stamp, named_vector, pose_from_msg
from robot_rl.ros.mux import InterventionMux
from robot_rl.ros.qos import CMD, EVENTS, LATCH, SENSOR
from robot_rl.ros.state import StateAssembler
from robot_rl.safety.filter import SafetyFilter, Sent

_LEVEL = {"active": DiagnosticStatus.OK, "hold": DiagnosticStatus.WARN, "paused": DiagnosticStatus.WARN,
          "fault": DiagnosticStatus.ERROR, "estop": DiagnosticStatus.ERROR}
_HEALTH_TYPES = {"bool": Bool, "int8": Int8, "int32": Int32}


def _message_type(name: str) -> type:
    """``bool``/``int8``/``int32`` or ``pkg/msg/Name``, imported now (a clear error if it is absent)."""
    if name in _HEALTH_TYPES:
        return _HEALTH_TYPES[name]
    pkg, _, msg = name.split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.msg"), msg)
    except (ImportError, AttributeError) as err:
        raise RuntimeError(f"health input type {name!r}: not importable; install {pkg}") from err


class RobotBridge:
    def __init__(self, node: Node, arm: ArmConfig, state_hz: float = 250.0) -> None:
        self.node, self.arm = node, arm
        self.lock = threading.RLock()
        self.filter = SafetyFilter(arm.safety, "velocity" if arm.velocity_kind else "pose")
        self.assembler = StateAssembler(arm.joint_names, arm.gripper.joint_names, arm.gripper.max_width_m)
        self.mux = InterventionMux(arm.safety.stale_after_s)
        self.extra = {"ignored_during_reset": 0, "malformed_messages": 0}
        self.resetting = False
        self._tick_waiters: list[Future] = []
        self._state_period_s = 1.0 / state_hz
        self._last_state_s = -np.inf
        self._last_mode = ""
        inputs, actions = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        timers, clients = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        services = ReentrantCallbackGroup()
        self.backend = make_backend(node, arm, lambda: self.assembler.q)
        self.command_topic = node.resolve_topic_name(arm.command.topic)
        self.gripper = make_gripper(node, arm.gripper, group=clients)
        t = arm.topics
        sub = node.create_subscription
        self.fk = DHChain(arm.kinematics) if t.current_pose is None and arm.kinematics else None
        if t.current_pose is not None:
            sub(PoseStamped, t.current_pose, self._on_pose, SENSOR, callback_group=inputs)
        sub(JointState, t.joint_states, self._on_joint_states, SENSOR, callback_group=inputs)
        if arm.gripper.joint_states and arm.gripper.joint_states != t.joint_states:
            sub(JointState, arm.gripper.joint_states, self._on_joint_states, SENSOR, callback_group=inputs)
        if t.wrench:
            sub(WrenchStamped, t.wrench, self._on_wrench, SENSOR, callback_group=inputs)
        for h in arm.health:
            qos = LATCH if h.latched else SENSOR
            sub(_message_type(h.type), h.topic, lambda msg, h=h: self._on_health(h, msg), qos,
                callback_group=inputs)
        sub(JointState, names.ACTION, self._on_action, CMD, callback_group=actions)
        sub(JointState, names.INTERVENTION, self._on_intervention, SENSOR, callback_group=actions)
        sub(Bool, names.ESTOP, self._on_estop, LATCH, callback_group=actions)
        self.state_pub = node.create_publisher(JointState, names.ROBOT_STATE, SENSOR)
        self.executed_pub = node.create_publisher(JointState, names.EXECUTED_ACTION, EVENTS)
        self.status_pub = node.create_publisher(DiagnosticArray, names.STATUS, EVENTS)
        node.create_timer(1.0 / arm.command.publish_hz, self._tick, callback_group=timers)
        node.create_timer(0.1, self._guard_publishers, callback_group=timers)
        node.create_timer(0.2, self._publish_status, callback_group=timers)
        srv = node.create_service
        srv(Trigger, "~/reset", self._srv_reset, callback_group=services)
        srv(Trigger, "~/estop", self._srv_estop, callback_group=services)
        srv(Trigger, "~/clear_estop", self._srv_clear_estop, callback_group=services)
        srv(SetBool, "~/enable", self._srv_enable, callback_group=services)
        self.reset_clients = [node.create_client(Trigger, name, callback_group=clients)
                              for name in arm.reset_services]

    # --- helpers -----------------------------------------------------------------------------------------
    @staticmethod
    def now_s() -> float:
        return time.monotonic()

    def stamp(self):
        return self.node.get_clock().now().to_msg()

    def _send(self, sent: Sent) -> float | None:
        """Publish ``sent`` (command + gripper); return the command's stamp (s), None if nothing went out."""
        if sent.mode in ("paused", "fault") and self.filter.kind == "pose":
            # Pose controllers hold their last target: stay silent while a reset moves the arm, or while a
            # second publisher makes crisp ignore every target anyway. Velocity backends send zeros.
            return None
        stamp = self.stamp()
        out = self.backend.publish(sent, stamp)
        if sent.gripper_open is not None:
            self.gripper.command(sent.gripper_open)
        if sent.mode != self._last_mode:
            self._last_mode = sent.mode
            self._publish_status()
        return from_stamp(stamp) if out else None

    # --- driver inputs -------------------------------------------------------------------------------------
    def _on_pose(self, msg: PoseStamped) -> None:
        self._pose_input(pose_from_msg(msg), msg.header.stamp)

    def _pose_input(self, pose: tuple[np.ndarray, np.ndarray] | None, stamp) -> None:
        now = self.now_s()
        with self.lock:
            if pose is None:
                self.filter.observe(np.full(3, np.nan), np.eye(3), now)  # counted as bad_observation
                return
            self.filter.observe(pose[0], pose[1], now)
            self.assembler.on_pose(pose[0], pose[1], from_stamp(stamp))
            if now - self._last_state_s >= self._state_period_s * 0.9:
                self._last_state_s = now
                state = self.assembler.state
                self.state_pub.publish(named_vector(names.STATE_NAMES, state, stamp, self.arm.base_frame))

    def _on_joint_states(self, msg: JointState) -> None:
        with self.lock:
            seen = self.assembler.joint_stamp_s
            self.assembler.on_joint_states(msg.name, msg.position, msg.velocity, from_stamp(msg.header.stamp))
            q = self.assembler.q if self.assembler.joint_stamp_s != seen else None
        if self.fk is not None and q is not None:  # no pose topic: forward kinematics of the DH chain
            self._pose_input(self.fk.forward(q), msg.header.stamp)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        with self.lock:
            self.assembler.on_wrench((f.x, f.y, f.z), (t.x, t.y, t.z))

    def _on_health(self, h: HealthInput, msg) -> None:
        value = int(getattr(msg, h.field))
        with self.lock:
            self.filter.set_fault(h.name, None if value in h.ok_values else f"{h.topic} = {value}")

    # --- RL inputs ---------------------------------------------------------------------------------------
    def _on_intervention(self, msg: JointState) -> None:
        with self.lock:
            self.mux.update(names.pick(msg.name, msg.position, names.INTERVENTION_NAMES), self.now_s())

    def _on_action(self, msg: JointState) -> None:
        now = self.now_s()
        values = names.pick(msg.name, msg.position, names.ACTION_NAMES)
        with self.lock:
            if values is None:
                self.extra["malformed_messages"] += 1
                values = np.zeros(0)  # refused by the filter (wrong shape), counted there too
            if self.resetting:
                self.extra["ignored_during_reset"] += 1
                self._publish_executed(msg, None, False, None)
                return
            action, intervened = self.mux.select(values, now)
            sent = self.filter.on_action(action, now)
            self._publish_executed(msg, sent, intervened, self._send(sent))

    def _publish_executed(self, msg: JointState, sent: Sent | None, intervened: bool,
                          cmd_s: float | None) -> None:
        action = sent.action if sent is not None and sent.action is not None else np.full(7, np.nan)
        mode = sent.mode if sent is not None else "paused"
        values = [*action, float(intervened), float(bool(sent and sent.safety_clipped)),
                  float(sent is None or sent.action is None), float(names.mode_index(mode)),
                  np.nan if cmd_s is None else cmd_s]
        self.executed_pub.publish(named_vector(names.EXECUTED_NAMES, values, msg.header.stamp))

    def _on_estop(self, msg: Bool) -> None:
        with self.lock:
            self.filter.set_estop_input(bool(msg.data))
            self._send(self.filter.tick(self.now_s()))

    # --- timers ------------------------------------------------------------------------------------------
    def _tick(self) -> None:
        waiters, self._tick_waiters = self._tick_waiters, []
        for w in waiters:  # wake the reset coroutine
            w.set_result(None)
        with self.lock:
            if self.arm.command.backend == "joint_velocity":
                stale = self.assembler.joint_stamp_s is None
                self.filter.set_fault("joint_states", "no joint_states received" if stale else None)
            self._send(self.filter.tick(self.now_s()))

    def _guard_publishers(self) -> None:
        """crisp ignores every target when two publishers exist: refuse to be one of two, and say who."""
        count = self.node.count_publishers(self.command_topic)
        with self.lock:
            if count > 1:
                me = (self.node.get_name(), self.node.get_namespace())
                others = [f"{i.node_namespace.rstrip('/')}/{i.node_name}"
                          for i in self.node.get_publishers_info_by_topic(self.command_topic)
                          if (i.node_name, i.node_namespace) != me]
                reason = f"{count} publishers on {self.command_topic} (others: {', '.join(others)})"
                if self.filter.faults.get("multiple_publishers") != reason:
                    self.node.get_logger().error(f"SAFETY: {reason}; not commanding the arm")
                self.filter.set_fault("multiple_publishers", reason)
            else:
                self.filter.set_fault("multiple_publishers", None)

    def _publish_status(self) -> None:
        with self.lock:
            st = self.filter.status()
            counters = {**st["counters"], **self.extra}  # type: ignore[dict-item]
            faults = st["faults"]
        status = DiagnosticStatus(level=_LEVEL[str(st["mode"])], name=f"{self.node.get_name()}: safety",
                                  hardware_id=self.arm.name)
        reason = f" ({st['holding']})" if st["mode"] == "hold" and st["holding"] else ""
        fault_text = "".join(f"; {k}: {v}" for k, v in faults.items())  # type: ignore[union-attr]
        status.message = f"{st['mode']}{reason}{fault_text}"
        status.values = [KeyValue(key=k, value=str(v)) for k, v in counters.items()]
        status.values.append(KeyValue(key="estop_latched", value=str(st["estop_latched"])))
        status.values.append(KeyValue(key="last_hold_delay_s", value=f"{st['last_hold_delay_s']:.4f}"))
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.stamp()
        self.status_pub.publish(msg)

    # --- services ------------------------------------------------------------------------------------------
    def _srv_estop(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        with self.lock:
            self.filter.engage_estop()
            self._send(self.filter.tick(self.now_s()))
        resp.success, resp.message = True, "e-stop latched; call clear_estop to release"
        return resp

    def _srv_clear_estop(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        with self.lock:
            resp.success, resp.message = self.filter.clear_estop()
        return resp

    def _srv_enable(self, req: SetBool.Request, resp: SetBool.Response) -> SetBool.Response:
        with self.lock:
            if req.data:
                self.filter.resume()
            else:
                self.filter.pause()
                self._send(self.filter.tick(self.now_s()))
        resp.success, resp.message = True, "enabled" if req.data else "paused"
        return resp

    async def _srv_reset(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        resp.success, resp.message = await self.reset()
        return resp

    async def reset(self, timeout_s: float = 30.0) -> tuple[bool, str]:
        """Pause, call the reset services, wait for a fresh pose, re-seed, then drive to the reset pose.

        A coroutine: it awaits (service responses, watchdog ticks) instead of blocking, so the
        single-threaded executor keeps serving inputs and the watchdog meanwhile."""
        with self.lock:
            self.resetting = True
            self.filter.pause()
            self._send(self.filter.tick(self.now_s()))
        try:
            for client in self.reset_clients:
                if not await self._until(client.service_is_ready, 5.0):
                    return False, f"reset service {client.srv_name} is not available"
                future = client.call_async(Trigger.Request())
                if not await self._until(future.done, timeout_s) or not future.result().success:
                    message = future.result().message if future.done() else "timeout"
                    return False, f"{client.srv_name} failed: {message}"
            called = self.now_s()
            if not await self._until(lambda: self.filter.observation_time_s > called, 5.0):
                return False, "no fresh pose from the driver after the reset"
            with self.lock:
                self.filter.resume()
            if self.arm.reset_pose is not None:
                return await self._approach(timeout_s)
            return True, "reset"
        finally:
            with self.lock:
                self.resetting = False

    async def _approach(self, timeout_s: float) -> tuple[bool, str]:
        """Drive to ``reset_pose`` through the safety filter at half the action scale."""
        rp, lim = self.arm.reset_pose, self.arm.safety
        assert rp is not None
        goal_pos = np.asarray(rp.position_m)
        x, y, z, w = rp.orientation_xyzw
        goal_rot = quat_to_matrix(np.array([w, x, y, z]))
        deadline = self.now_s() + timeout_s
        while self.now_s() < deadline:
            with self.lock:
                pos, rot = self.assembler.position, self.assembler.rotation
                if pos is None or rot is None:
                    return False, "no pose"
                if np.linalg.norm(goal_pos - pos) < 0.005 and rotation_angle_between(goal_rot, rot) < 0.03:
                    return True, "reset: at the reset pose"
                a = np.zeros(7)
                a[:3] = np.clip((goal_pos - pos) / lim.max_step_m, -0.5, 0.5)
                a[3:6] = np.clip(matrix_to_rotvec(goal_rot @ rot.T) / lim.max_step_rad, -0.5, 0.5)
                a[6] = 1.0
                self._send(self.filter.on_action(a, self.now_s()))
            await self._until(lambda: False, lim.control_period_s)
        return False, "reset pose not reached in time"

    async def _until(self, cond, timeout_s: float) -> bool:
        """Await watchdog ticks until ``cond()`` holds (True) or ``timeout_s`` passes (False)."""
        deadline = self.now_s() + timeout_s
        while True:
            with self.lock:
                if cond():
                    return True
            if self.now_s() >= deadline:
                return False
            tick = Future()
            self._tick_waiters.append(tick)
            await tick
