"""``RobotBridge``: the single publisher to the arm's controller, with the safety filter in front of it.

Wiring only: every callback takes the lock and calls library code (``SafetyFilter``, ``StateAssembler``,
``InputMonitor``, ``InterventionMux``, the command and gripper backends). No callback raises: a message that
cannot be used is dropped, counted and logged (``DropLog``), and the arm holds while a required input is
missing, stale or in the wrong frame (``rl/robot_state`` stops meanwhile). A few seconds after start the
bridge checks the driver's topics against the config and logs one report. Driver inputs use SENSOR QoS (they
match reliable and best-effort publishers); commands use CMD; e-stop and driver status use LATCH.

Interfaces (relative names resolve in the bridge's namespace):
  in   driver joint_states / current_pose / wrench, ``rl/action``, ``rl/intervention``, ``rl/estop`` (Bool)
  out  the command topic, ``rl/robot_state``, ``rl/executed_action``, ``rl/status`` (DiagnosticArray)
  srv  ``~/reset`` ``~/estop`` ``~/clear_estop`` ``~/clear_faults`` (Trigger), ``~/enable`` (SetBool)
"""

from __future__ import annotations

import threading
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import SetBool, Trigger

from robot_rl.envs import names
from robot_rl.envs.geometry import matrix_to_rotvec, quat_to_matrix, rotation_angle_between
from robot_rl.ros.command_backends import make_backend
from robot_rl.ros.drops import DropLog
from robot_rl.ros.gripper import make_gripper
from robot_rl.ros.hardware import ArmConfig, HealthInput
from robot_rl.ros.inputs import InputMonitor, required_inputs
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.messages import from_stamp, named_vector, pose_from_msg
from robot_rl.ros.mux import InterventionMux
from robot_rl.ros.qos import CMD, EVENTS, LATCH, SENSOR
from robot_rl.ros.selfcheck import graph_problems, message_class
from robot_rl.ros.state import StateAssembler
from robot_rl.safety.filter import SafetyFilter, Sent, state_index

_LEVEL = {"active": DiagnosticStatus.OK, "holding": DiagnosticStatus.WARN, "inactive": DiagnosticStatus.WARN,
          "faulted": DiagnosticStatus.ERROR, "estopped": DiagnosticStatus.ERROR}
BRIDGE_DROPS = ("refused_frame", "bad_joint_states", "bad_wrench", "bad_health", "bad_intervention",
                "malformed_actions", "ignored_during_reset", "callback_errors")
"""Inputs the bridge drops before the safety filter sees them (the filter counts its own)."""
STARTUP_CHECK_S = 3.0

class RobotBridge:
    def __init__(self, node: Node, arm: ArmConfig, state_hz: float) -> None:
        self.node, self.arm = node, arm
        self.lock = threading.RLock()
        self.filter = SafetyFilter(arm.safety, "velocity" if arm.velocity_kind else "pose")
        g = arm.gripper
        self.assembler = StateAssembler(arm.joint_names, g.joint_names, g.max_width_m, gripper_units=g.units)
        self.mux = InterventionMux(arm.safety.stale_after_s)
        self.inputs = InputMonitor(required_inputs(arm))
        self.drops = DropLog(node.get_logger().warning, BRIDGE_DROPS)
        self.resetting = False
        self._tick_waiters: list[Future] = []
        self._state_period_s = 1.0 / state_hz
        self._last_state_s = -np.inf
        self._last_state: str = ""
        self._input_problem: str | None = None
        inputs, actions = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        timers, clients = MutuallyExclusiveCallbackGroup(), MutuallyExclusiveCallbackGroup()
        services = ReentrantCallbackGroup()
        self.backend = make_backend(node, arm, lambda: self.assembler.q)
        self.command_topic = node.resolve_topic_name(arm.command.topic)
        self.gripper = make_gripper(node, g, group=clients)
        t = arm.topics
        sub = self._subscribe
        self.fk = DHChain(arm.kinematics) if t.current_pose is None and arm.kinematics else None
        if t.current_pose is not None:
            sub(PoseStamped, t.current_pose, self._on_pose, SENSOR, inputs)
        sub(JointState, t.joint_states, lambda m: self._on_joint_states(m, t.joint_states), SENSOR, inputs)
        if g.joint_states and g.joint_states != t.joint_states:
            sub(JointState, g.joint_states, lambda m: self._on_joint_states(m, g.joint_states), SENSOR, inputs)
        if t.wrench:
            sub(WrenchStamped, t.wrench, self._on_wrench, SENSOR, inputs)
        for h in arm.health:
            sub(message_class(h.type), h.topic, lambda msg, h=h: self._on_health(h, msg),
                LATCH if h.latched else SENSOR, inputs)
        sub(JointState, names.ACTION, self._on_action, CMD, actions)
        sub(JointState, names.INTERVENTION, self._on_intervention, SENSOR, actions)
        sub(Bool, names.ESTOP, self._on_estop, LATCH, actions)
        self.state_pub = node.create_publisher(JointState, names.ROBOT_STATE, SENSOR)
        self.executed_pub = node.create_publisher(JointState, names.EXECUTED_ACTION, EVENTS)
        self.status_pub = node.create_publisher(DiagnosticArray, names.STATUS, EVENTS)
        self._timer(1.0 / arm.command.publish_hz, self._tick, timers)
        self._timer(0.1, self._guard_publishers, timers)
        self._timer(0.2, self._publish_status, timers)
        self._startup_timer = self._timer(STARTUP_CHECK_S, self._self_check, timers)
        srv = node.create_service
        srv(Trigger, "~/reset", self._srv_reset, callback_group=services)
        srv(Trigger, "~/estop", self._srv_estop, callback_group=services)
        srv(Trigger, "~/clear_estop", self._srv_clear_estop, callback_group=services)
        srv(Trigger, "~/clear_faults", self._srv_clear_faults, callback_group=services)
        srv(SetBool, "~/enable", self._srv_enable, callback_group=services)
        self.reset_clients = [node.create_client(Trigger, name, callback_group=clients)
                              for name in arm.reset_services]
        self._update_inputs(self.now_s())

    # --- helpers -----------------------------------------------------------------------------------------
    @staticmethod
    def now_s() -> float:
        return time.monotonic()

    def stamp(self):
        return self.node.get_clock().now().to_msg()

    def _guarded(self, where: str, callback, *args) -> None:
        """Run a callback so that it never raises into the executor: an error is counted, logged (``DropLog``)
        and the input it came with is dropped; an input that keeps failing goes stale, and the arm holds."""
        try:
            callback(*args)
        except Exception as err:
            self.drops.drop("callback_errors", f"{where}: {type(err).__name__}: {err}")

    def _subscribe(self, msg_type: type, topic: str, callback, qos, group) -> None:
        self.node.create_subscription(msg_type, topic, lambda msg: self._guarded(topic, callback, msg), qos,
                                      callback_group=group)

    def _timer(self, period_s: float, callback, group):
        return self.node.create_timer(period_s, lambda: self._guarded(callback.__name__, callback),
                                      callback_group=group)

    def _send(self, sent: Sent) -> float | None:
        """Publish ``sent`` (command + gripper); return the command's stamp (s), None if nothing went out."""
        stamp = self.stamp()
        out = self.backend.publish(sent, stamp)
        if sent.gripper_open is not None:
            self.gripper.command(sent.gripper_open)
        if sent.state != self._last_state:
            self._last_state = sent.state
            self._publish_status()
        return from_stamp(stamp) if out else None

    def _update_inputs(self, now: float) -> None:
        problem = self.inputs.problem(now)
        if problem != self._input_problem:
            log = self.node.get_logger()
            if problem is None:
                log.info("inputs: every required input is healthy")
            else:
                log.warning(f"inputs: {problem}; holding until it is")
            self._input_problem = problem
        self.filter.set_input_problem(problem)

    # --- driver inputs -------------------------------------------------------------------------------------
    def _on_pose(self, msg: PoseStamped) -> None:
        now = self.now_s()
        with self.lock:
            frame = msg.header.frame_id
            if frame != self.arm.base_frame:
                self.drops.drop("refused_frame", f"{self.arm.topics.current_pose}: pose in frame {frame!r}, "
                                                 f"expected base_frame {self.arm.base_frame!r}")
                self.inputs.wrong_frame("pose", frame)
                return
            self._pose_input(pose_from_msg(msg), msg.header.stamp, now)

    def _pose_input(self, pose: tuple[np.ndarray, np.ndarray] | None, stamp, now: float) -> None:
        """A TCP reading (pose topic or forward kinematics): through the filter's checks into the state."""
        f = self.filter
        if pose is None:
            pose = (np.full(3, np.nan), np.eye(3))  # a NaN or degenerate pose: the filter counts it
        if not f.observe(pose[0], pose[1], now):
            kind, detail = f.last_bad_reading
            self.drops.report(kind, f"TCP reading {np.round(pose[0], 4).tolist()}: {detail}", f.counters[kind])
            return
        if self.fk is None:
            self.inputs.arrived("pose", now)
        self.assembler.on_pose(pose[0], pose[1], from_stamp(stamp))
        if now - self._last_state_s >= self._state_period_s * 0.9 and self.inputs.problem(now) is None:
            self._last_state_s = now
            self.state_pub.publish(named_vector(names.STATE_NAMES, self.assembler.state, stamp,
                                                self.arm.base_frame))

    def _on_joint_states(self, msg: JointState, topic: str) -> None:
        now = self.now_s()
        with self.lock:
            try:
                arm, grip = self.assembler.on_joint_states(msg.name, msg.position, msg.velocity,
                                                           from_stamp(msg.header.stamp))
            except ValueError as err:
                self.drops.drop("bad_joint_states", f"{topic}: {err}")
                return
            if arm:
                self.inputs.arrived("joint_states", now)
            if grip:
                self.inputs.arrived("gripper_joints", now)
            if self.fk is not None and arm:  # no pose topic: forward kinematics of the DH chain
                self._pose_input(self.fk.forward(self.assembler.q), msg.header.stamp, now)

    def _on_wrench(self, msg: WrenchStamped) -> None:
        f, t = msg.wrench.force, msg.wrench.torque
        now = self.now_s()
        with self.lock:
            if not self.assembler.on_wrench((f.x, f.y, f.z), (t.x, t.y, t.z)):
                self.drops.drop("bad_wrench", f"{self.arm.topics.wrench}: non-finite or out-of-range wrench "
                                              f"{[f.x, f.y, f.z, t.x, t.y, t.z]}")
                return
            self.inputs.arrived("wrench", now)

    def _on_health(self, h: HealthInput, msg) -> None:
        now = self.now_s()
        with self.lock:
            try:
                value = int(getattr(msg, h.field))
            except (AttributeError, TypeError, ValueError) as err:
                self.drops.drop("bad_health", f"{h.topic}: field {h.field!r} unreadable ({err})")
                self.filter.set_fault(h.name, f"{h.topic}: unreadable status")
                return
            self.inputs.arrived(f"health/{h.name}", now)
            self.filter.set_fault(h.name, None if value in h.ok_values else f"{h.topic} = {value}")

    # --- RL inputs ---------------------------------------------------------------------------------------
    def _on_intervention(self, msg: JointState) -> None:
        values = names.pick(msg.name, msg.position, names.INTERVENTION_NAMES)
        with self.lock:
            if values is None:  # ends any intervention: the human's device is not readable
                self.drops.drop("bad_intervention", f"rl/intervention needs labels {names.INTERVENTION_NAMES}, "
                                                    f"got {list(msg.name)} with {len(msg.position)} values")
            self.mux.update(values, self.now_s())

    def _on_action(self, msg: JointState) -> None:
        now = self.now_s()
        values = names.pick(msg.name, msg.position, names.ACTION_NAMES)
        with self.lock:
            if values is None:
                self.drops.drop("malformed_actions", f"rl/action needs labels {names.ACTION_NAMES}, got "
                                                     f"{list(msg.name)} with {len(msg.position)} values")
                values = np.zeros(0)  # refused by the filter (wrong shape): the arm holds
            if self.resetting:
                self.drops.counts["ignored_during_reset"] += 1
                self._publish_executed(msg, None, False, None)
                return
            action, intervened = self.mux.select(values, now)
            sent = self.filter.on_action(action, now)
            self._publish_executed(msg, sent, intervened, self._send(sent))

    def _publish_executed(self, msg: JointState, sent: Sent | None, intervened: bool,
                          cmd_s: float | None) -> None:
        refused = sent is None or sent.action is None
        action = np.zeros(7) if refused else sent.action  # refused: the arm held, i.e. executed "no motion"
        state = sent.state if sent is not None else "inactive"
        values = [*action, float(intervened), float(bool(sent and sent.safety_clipped)), float(refused),
                  float(state_index(state)), names.NO_COMMAND if cmd_s is None else cmd_s]
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
            now = self.now_s()
            self._update_inputs(now)
            self._send(self.filter.tick(now))

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

    def _self_check(self) -> None:
        """Once, a few seconds after start: the driver's topics against the config, as one report."""
        self._startup_timer.cancel()
        with self.lock:
            report = self.inputs.report(self.now_s())
        lines = graph_problems(self.node, list(self.inputs.specs()), self.arm.command.topic,
                               self.backend.msg_type, own_publisher=True)
        log = self.node.get_logger()
        for name, text in report.items():
            if text.startswith("ok"):  # rclpy: one severity per logging call site
                log.info(f"self-check: {name}: {text}")
            else:
                log.error(f"self-check: {name}: {text}")
        for line in lines:
            log.error(f"self-check: {line}")
        if not lines and all(text.startswith("ok") for text in report.values()):
            log.info("self-check passed: commands are enabled once an action arrives")

    def _publish_status(self) -> None:
        with self.lock:
            st = self.filter.status()
            counters = {**st["counters"], **self.drops.counts}  # type: ignore[dict-item]
            report = self.inputs.report(self.now_s())
        status = DiagnosticStatus(level=_LEVEL[str(st["state"])], name=f"{self.node.get_name()}: safety",
                                  hardware_id=self.arm.name)
        reason = f" ({st['reason']})" if st["state"] == "holding" and st["reason"] else ""
        fault_text = "".join(f"; {k}: {v}" for k, v in st["faults"].items())  # type: ignore[union-attr]
        inputs = f"; inputs: {st['input_problem']}" if st["input_problem"] else ""
        status.message = f"{st['state']}{reason}{fault_text}{inputs}"
        status.values = [KeyValue(key=k, value=str(v)) for k, v in counters.items()]
        status.values += [KeyValue(key=f"input.{k}", value=v) for k, v in report.items()]
        status.values.append(KeyValue(key="estop_latched", value=str(st["estop_latched"])))
        status.values.append(KeyValue(key="enabled", value=str(st["enabled"])))
        status.values.append(KeyValue(key="last_hold_delay_s", value=f"{st['last_hold_delay_s']:.4f}"))
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.stamp()
        self.status_pub.publish(msg)

    def stop(self) -> None:
        """The last act before the node exits: disable the filter and send its safe command (velocity backends:
        zeros; pose backends: nothing more, the controller holds the last target), then a final status."""
        with self.lock:
            self.filter.disable()
            self._send(self.filter.tick(self.now_s()))
        self._publish_status()

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

    def _srv_clear_faults(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        with self.lock:
            resp.success, resp.message = self.filter.clear_faults()
        self.node.get_logger().info(f"clear_faults: {resp.message}")
        return resp

    def _srv_enable(self, req: SetBool.Request, resp: SetBool.Response) -> SetBool.Response:
        with self.lock:
            if req.data:
                self.filter.enable()
            else:
                self.filter.disable()
                self._send(self.filter.tick(self.now_s()))
        resp.success, resp.message = True, "enabled" if req.data else "disabled"
        return resp

    async def _srv_reset(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        resp.success, resp.message = await self.reset()
        return resp

    async def reset(self, timeout_s: float = 30.0) -> tuple[bool, str]:
        """Disable, call the reset services, wait for a fresh pose, enable, then drive to the reset pose.
        Refused while e-stopped or faulted: a reset never clears a safety stop.

        A coroutine: it awaits (service responses, watchdog ticks) instead of blocking, so the
        single-threaded executor keeps serving inputs and the watchdog meanwhile."""
        with self.lock:
            if self.filter.estop_latched or self.filter.faults:
                blocked = "e-stop latched (~/clear_estop)" if self.filter.estop_latched else \
                    "faulted: " + "; ".join(f"{k}: {v}" for k, v in self.filter.faults.items()) + " (~/clear_faults)"
                return False, f"reset refused: {blocked}"
            self.resetting = True
            self.filter.disable()
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
                self.filter.enable()
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
