"""``SimRobotNode`` wiring: a ``SimArm`` behind the same topics, QoS and semantics as a crisp driver stack.

Publishes (names from the arm's hardware config, e.g. ``hardware_configs/arms/sim_panda.yaml``):
  ``joint_states`` (reliable, like joint_state_broadcaster), ``current_pose`` (PoseStamped, base frame),
  the wrench topic (WrenchStamped), the gripper's ``joint_states``, camera images (rgb8, reliable like
  realsense's default, ``camera/<name>/color/image_raw``), and the sim-only ``rl/reward`` / ``rl/privileged``.
Subscribes: the pose target (QoS(1) reliable, as crisp; **ignored while more than one publisher exists**,
as crisp does), the gripper's forward position controller (Float64MultiArray [width m]).
Serves ``~/reset`` (Trigger): a new episode of the task. Physics runs in real time from a timer at
``state_hz``; cameras render in their own thread (GL contexts belong to one thread).
"""

from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import PoseStamped, WrenchStamped
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import Image, JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger

from robot_rl.envs import names
from robot_rl.ros.hardware import ArmConfig
from robot_rl.ros.messages import image_msg, named_vector, pose_from_msg, pose_msg
from robot_rl.ros.params import SimRobotConfig
from robot_rl.ros.qos import CMD, SENSOR
from robot_rl.ros.sim_core import FINGER_NAMES, JOINT_NAMES, SimArm

RELIABLE10 = QoSProfile(depth=10)  # SystemDefaults-like: what joint_state_broadcaster and realsense use


class SimRobotNode:
    def __init__(self, node: Node, arm: ArmConfig, cfg: SimRobotConfig) -> None:
        self.node, self.arm, self.cfg = node, arm, cfg
        self.sim = SimArm(cfg.task, cfg.seed)
        self.counters = {"targets": 0, "ignored_multiple_publishers": 0, "bad_targets": 0, "late_ticks": 0}
        self._last_tick = time.monotonic()
        self._period = 1.0 / cfg.state_hz
        self._multi = False
        physics, inputs, timers = (MutuallyExclusiveCallbackGroup() for _ in range(3))
        t, g = arm.topics, arm.gripper
        pub = node.create_publisher
        self.joint_pub = pub(JointState, t.joint_states, RELIABLE10)
        self.pose_pub = pub(PoseStamped, t.current_pose, RELIABLE10)
        self.wrench_pub = pub(WrenchStamped, t.wrench, RELIABLE10) if t.wrench else None
        self.gripper_pub = pub(JointState, g.joint_states, RELIABLE10) if g.joint_states else None
        self.reward_pub = pub(JointState, names.REWARD, SENSOR)
        self.priv_pub = pub(JointState, names.PRIVILEGED, SENSOR)
        self.priv_names = self.sim.privileged_names
        self.command_topic = node.resolve_topic_name(arm.command.topic)
        sub = node.create_subscription
        sub(PoseStamped, arm.command.topic, self._on_target, CMD, callback_group=inputs)
        if g.backend == "topic":
            sub(Float64MultiArray, g.command, self._on_gripper, CMD, callback_group=inputs)
        node.create_service(Trigger, "~/reset", self._srv_reset, callback_group=inputs)
        node.create_timer(self._period, self._tick, callback_group=physics)
        node.create_timer(0.1, self._check_publishers, callback_group=timers)
        self._stop = threading.Event()
        self.image_pubs = {c: pub(Image, f"camera/{c}/color/image_raw", RELIABLE10) for c in cfg.cameras}
        self._camera_thread = threading.Thread(target=self._camera_loop, daemon=True) if cfg.cameras else None
        if self._camera_thread is not None:
            self._camera_thread.start()

    # --- inputs ------------------------------------------------------------------------------------------
    def _on_target(self, msg: PoseStamped) -> None:
        if self._multi:  # crisp: "SAFETY WARNING: Multiple publishers detected" -> every target ignored
            self.counters["ignored_multiple_publishers"] += 1
            return
        pose = pose_from_msg(msg)
        if pose is None or msg.header.frame_id not in ("", self.arm.command.frame_id):
            self.counters["bad_targets"] += 1
            return
        self.counters["targets"] += 1
        self.sim.set_target(*pose)

    def _on_gripper(self, msg: Float64MultiArray) -> None:
        if len(msg.data) == 1 and np.isfinite(msg.data[0]):
            self.sim.set_gripper_width(float(msg.data[0]))

    def _check_publishers(self) -> None:
        multi = self.node.count_publishers(self.command_topic) > 1
        if multi and not self._multi:
            self.node.get_logger().warning(f"SAFETY WARNING: Multiple publishers on {self.command_topic}")
        self._multi = multi

    def _srv_reset(self, _req: Trigger.Request, resp: Trigger.Response) -> Trigger.Response:
        self.sim.reset()
        self._publish_state()
        resp.success, resp.message = True, f"episode with seed {self.sim.seed - 1}"
        return resp

    # --- outputs -----------------------------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        if elapsed > 2 * self._period:
            self.counters["late_ticks"] += 1
        self.sim.advance(elapsed)
        self._publish_state()

    def _publish_state(self) -> None:
        r = self.sim.read()
        stamp = self.node.get_clock().now().to_msg()
        js = JointState(name=[*JOINT_NAMES, *FINGER_NAMES], position=[*r.q, *r.fingers],
                        velocity=[*r.dq, 0.0, 0.0], effort=[0.0] * 9)
        js.header.stamp = stamp
        self.joint_pub.publish(js)
        if self.gripper_pub is not None:
            gs = JointState(name=list(FINGER_NAMES), position=list(r.fingers), velocity=[0.0] * 2,
                            effort=[0.0] * 2)
            gs.header.stamp = stamp
            self.gripper_pub.publish(gs)
        if self.wrench_pub is not None:
            w = WrenchStamped()
            w.header.stamp, w.header.frame_id = stamp, self.arm.base_frame
            w.wrench.force.x, w.wrench.force.y, w.wrench.force.z = (float(v) for v in r.wrench[:3])
            w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z = (float(v) for v in r.wrench[3:])
            self.wrench_pub.publish(w)
        self.reward_pub.publish(named_vector(names.REWARD_NAMES, [float(r.success), float(r.success)], stamp))
        if self.priv_names:
            self.priv_pub.publish(named_vector(self.priv_names, r.privileged, stamp))
        self.pose_pub.publish(pose_msg(r.tcp_pos, r.tcp_rot, self.arm.base_frame, stamp))  # last: freshest

    def _camera_loop(self) -> None:
        h, w = self.cfg.camera_hw_px
        renderer = self.sim.renderer(h, w)
        snapshot = None
        period, next_t = 1.0 / self.cfg.camera_hz, time.monotonic()
        try:
            while not self._stop.is_set():
                next_t += period
                snapshot = self.sim.snapshot(snapshot)
                stamp = self.node.get_clock().now().to_msg()
                for cam, image_pub in self.image_pubs.items():
                    frame = f"{cam}_optical_frame"
                    image_pub.publish(image_msg(renderer.render(cam, snapshot), stamp, frame))
                delay = next_t - time.monotonic()
                if delay < -period:
                    next_t = time.monotonic()
                self._stop.wait(max(0.0, delay))
        finally:
            renderer.close()

    def close(self) -> None:
        self._stop.set()
        if self._camera_thread is not None:
            self._camera_thread.join(timeout=2.0)
        self.sim.close()
