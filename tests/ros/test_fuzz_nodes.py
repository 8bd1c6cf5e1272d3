"""Property-based fuzz of every input the robot bridge and the camera bridge accept (hypothesis, derandomized,
``EXAMPLES`` generated cases per input kind): joint states, TCP poses, wrenches, actions, teleop interventions
and e-stops into the bridge (three arm configs: a pose backend, a joint-velocity backend with a health input,
a twist backend whose pose comes from forward kinematics), raw and compressed images into the camera bridge.

The nodes run in this process on a recording node: their subscription callbacks are called directly (the same
guarded callbacks the executor calls) with a test clock, and every message they publish is recorded. After
every input:

- no callback raised (the bridge's guard would count it as ``callback_errors``: that must stay 0);
- nothing non-finite reached any publisher;
- every pose command is inside the workspace box, and consecutive commands differ by at most the per-command
  step limits (the first after a restart starts at the measured pose); twists and joint speeds stay within
  their limits;
- every input that was not used was counted exactly once (a drop counter, or a refusal of the safety filter).
"""

from __future__ import annotations

import array
import math
from typing import Any

import numpy as np
import pytest

pytest.importorskip("rclpy")
import rclpy
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped, TwistStamped, WrenchStamped
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rclpy.context import Context
from rclpy.node import Node
from sensor_msgs.msg import CompressedImage, Image, JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from robot_rl.envs import names
from robot_rl.envs.geometry import rotation_angle_between
from robot_rl.ros.bridge import RobotBridge
from robot_rl.ros.camera import CameraBridge
from robot_rl.ros.hardware import CameraConfig, load_arm_config
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.messages import named_vector, pose_from_msg, pose_msg
from robot_rl.ros.state import MAX_WRENCH

EXAMPLES = 1000
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
DOWN = np.diag([1.0, -1.0, -1.0])
CLOCK = [0.0]
FILTER_DROPS = ("bad_observation", "implausible_observation", "refused_shape", "refused_nonfinite",
                "refused_estopped", "refused_faulted", "refused_disabled", "refused_inputs",
                "refused_stale_observation", "refused_outside_workspace")
# Where each config's arm rests: (TCP position, joint positions).
ARMS = {
    "sim_panda": (np.array([0.5, 0.0, 0.3]), np.zeros(7)),
    "ur5e_forward_velocity": (np.array([-0.4, -0.4, 0.3]), np.array([0.0, -1.2, 1.6, -1.9, -1.57, 0.0])),
    "xarm7": (None, np.array([0.0, 0.2, 0.0, 1.0, 0.0, 0.8, 0.0])),  # pose from forward kinematics
}


@pytest.fixture(scope="module", autouse=True)
def _context():
    context = Context()
    rclpy.init(context=context)
    # One real node for the whole module: the rigs borrow its names, logger and graph queries, so an example
    # costs no DDS traffic (creating and destroying a node per example would, and slowly on a busy machine).
    RecordingNode.shared = Node("fuzz_nodes", context=context, start_parameter_services=False,
                                enable_rosout=False)
    yield
    RecordingNode.shared.destroy_node()
    rclpy.try_shutdown(context=context)


class Recorder:
    def __init__(self, topic: str) -> None:
        self.topic, self.sent = topic, []

    def publish(self, msg: Any) -> None:
        self.sent.append(msg)


class _Timer:
    def cancel(self) -> None:
        pass


class RecordingNode:
    """A node for one rig: publishers record, subscriptions and timers are called by the test, everything else
    (logger, clock, topic-name resolution, graph queries) is the module's real rclpy node."""

    shared: Node

    def __init__(self) -> None:
        self.pubs: dict[str, Recorder] = {}
        self.subs: dict[str, list] = {}
        self.timers_: list = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.shared, name)

    def create_publisher(self, msg_type, topic, qos, **_):
        self.pubs[topic] = Recorder(topic)
        return self.pubs[topic]

    def create_subscription(self, msg_type, topic, callback, qos, **_):
        self.subs.setdefault(topic, []).append(callback)

    def create_timer(self, period, callback, **_):
        self.timers_.append(callback)
        return _Timer()

    def create_service(self, *_, **__):
        return None

    def create_client(self, *_, **__):
        return None


class ClockedBridge(RobotBridge):
    now_s = staticmethod(lambda: CLOCK[0])


def finite_message(msg: Any, where: str = "") -> None:
    """Every float in ``msg`` (recursively) is finite."""
    if isinstance(msg, float):
        assert math.isfinite(msg), f"non-finite value published at {where}"
        return
    if isinstance(msg, (list, tuple, array.array, np.ndarray)):
        for i, v in enumerate(msg):
            finite_message(v, f"{where}[{i}]")
        return
    if hasattr(msg, "get_fields_and_field_types"):
        for field in msg.get_fields_and_field_types():
            finite_message(getattr(msg, field), f"{where}.{field}")


class BridgeRig:
    """A bridge for one arm config on a recording node, a static arm publishing good readings, and the checks."""

    def __init__(self, config: str) -> None:
        CLOCK[0] = 1000.0
        self.arm = arm = load_arm_config(config)
        self.node = RecordingNode()
        self.bridge = ClockedBridge(self.node, arm, 500.0)
        self.filter = self.bridge.filter
        self.position, self.q = ARMS[config]
        self.chain = DHChain(arm.kinematics) if arm.kinematics else None
        if self.position is None:
            self.position = self.chain.forward(self.q)[0]
        self.checked: dict[str, int] = {}
        self.last_target: tuple[np.ndarray, np.ndarray] | None = None
        for h in arm.health:
            self.feed(h.topic, Bool(data=True))
        for _ in range(3):
            self.driver()
        self.tick(all_timers=True)  # the watchdog tick takes in the inputs' health
        self.act(np.zeros(7))
        assert self.filter.state == "active", self.filter.status()

    # --- inputs ---
    def feed(self, topic: str, msg: Any) -> None:
        for callback in self.node.subs[topic]:
            callback(msg)
        self.check()

    def stamp(self):
        sec = int(CLOCK[0])
        return rclpy.time.Time(seconds=sec, nanoseconds=int((CLOCK[0] - sec) * 1e9)).to_msg()

    def driver(self) -> None:
        """One round of good driver messages (and 5 ms of time)."""
        CLOCK[0] += 0.005
        t, g = self.arm.topics, self.arm.gripper
        stamp = self.stamp()
        joints = [*self.arm.joint_names, *g.joint_names]
        js = JointState(name=joints, position=[*self.q.tolist(), *([0.02] * len(g.joint_names))])
        js.header.stamp = stamp
        self.feed(t.joint_states, js)
        if t.wrench:
            w = WrenchStamped()
            w.header.stamp = stamp
            self.feed(t.wrench, w)
        if t.current_pose:
            self.feed(t.current_pose, pose_msg(self.position, DOWN, self.arm.base_frame, stamp))

    def act(self, values, labels=names.ACTION_NAMES) -> None:
        self.feed(names.ACTION, named_vector(labels, values, self.stamp()))

    def tick(self, all_timers: bool = False) -> None:
        """The watchdog, publisher-guard and status timers (``all_timers``: the start-up self-check too)."""
        for timer in self.node.timers_ if all_timers else self.node.timers_[:3]:
            timer()
        self.check()

    def drops(self) -> int:
        return sum(self.bridge.drops.counts.values()) + sum(self.filter.counters[c] for c in FILTER_DROPS)

    # --- properties ---
    def check(self) -> None:
        assert self.bridge.drops.counts["callback_errors"] == 0, "a callback raised"
        lim = self.arm.safety
        low, high = np.asarray(lim.workspace_low_m), np.asarray(lim.workspace_high_m)
        for topic, rec in self.node.pubs.items():
            new = rec.sent[self.checked.get(topic, 0):]
            self.checked[topic] = len(rec.sent)
            for msg in new:
                if not isinstance(msg, DiagnosticArray):
                    finite_message(msg, topic)
                if isinstance(msg, PoseStamped):
                    pos, rot = pose_from_msg(msg)
                    assert np.all(pos >= low - 1e-9) and np.all(pos <= high + 1e-9), f"outside the box: {pos}"
                    if self.last_target is not None and self.filter.last_target is not None:
                        assert np.linalg.norm(pos - self.last_target[0]) <= lim.max_translation_step_m + 1e-6
                        assert rotation_angle_between(rot, self.last_target[1]) <= lim.max_rotation_step_rad + 1e-6
                    self.last_target = (pos, rot)
                elif isinstance(msg, TwistStamped):
                    v = msg.twist.linear
                    assert math.hypot(v.x, v.y, v.z) <= lim.max_linear_speed_m_s + 1e-9
                elif isinstance(msg, Float64MultiArray) and topic == self.arm.command.topic:
                    cap = np.asarray(self.arm.kinematics.max_joint_speed_rad_s)
                    assert np.all(np.abs(np.asarray(msg.data)) <= cap + 1e-9)
        if self.filter.last_target is None:
            self.last_target = None  # a restart: the next command starts at the measured pose


floats = st.one_of(st.floats(-2, 2, allow_nan=False), st.sampled_from([math.nan, math.inf, -math.inf, 1e300]),
                   st.floats(allow_nan=True, allow_infinity=True))
configs = st.sampled_from(sorted(ARMS))
good = st.sampled_from([("driver",), ("driver",), ("good_action",), ("tick",), ("wait",)])


def run(rig: BridgeRig, events: list[tuple], fuzzed) -> None:
    rng = np.random.default_rng(0)
    for ev in events:
        if ev[0] == "driver":
            rig.driver()
        elif ev[0] == "good_action":
            rig.act(rng.uniform(-1, 1, 7))
        elif ev[0] == "tick":
            rig.tick()
        elif ev[0] == "wait":
            CLOCK[0] += 0.05
            rig.tick()
        else:
            fuzzed(rig, ev)


def bridge_fuzz(kind_events):
    """A test body: the warm-up, then good traffic mixed with ``kind_events``."""
    def decorate(check_event):
        @FUZZ
        @given(configs, st.lists(st.one_of(good, kind_events), min_size=1, max_size=30))
        def test(config: str, events: list[tuple]) -> None:
            run(BridgeRig(config), events, check_event)
        test.__doc__ = check_event.__doc__
        return test
    return decorate


# --- joint states ---
def _joint_bad(rig: BridgeRig, labels: list[str], pos: list[float], vel: list[float]) -> bool:
    if len(pos) != len(labels) or len(vel) not in (0, len(labels)) or len(set(labels)) != len(labels):
        return True
    index = {n: i for i, n in enumerate(labels)}
    for group in (rig.arm.joint_names, rig.arm.gripper.joint_names):
        if group and all(n in index for n in group):
            vals = [pos[index[n]] for n in group] + ([vel[index[n]] for n in group] if vel else [])
            if group is rig.arm.joint_names and not all(math.isfinite(v) for v in vals):
                return True
            if group is not rig.arm.joint_names and not math.isfinite(sum(pos[index[n]] for n in group)):
                return True
    return False


JOINT_POOL = ["fr3_joint1", "fr3_joint2", "fr3_joint3", "fr3_joint4", "fr3_joint5", "fr3_joint6", "fr3_joint7",
              "fr3_finger_joint1", "fr3_finger_joint2", "shoulder_pan_joint", "elbow_joint", "joint1", "joint4",
              "other"]
joint_events = st.tuples(st.just("joint_states"), st.lists(st.sampled_from(JOINT_POOL), max_size=12),
                         st.lists(floats, max_size=12), st.lists(floats, max_size=12), st.lists(floats, max_size=4))


@bridge_fuzz(joint_events)
def test_fuzz_joint_states(rig: BridgeRig, ev: tuple) -> None:
    """Joint states with any names, lengths and values: an unreadable one is counted, never raises."""
    _, labels, pos, vel, eff = ev
    bad = _joint_bad(rig, labels, pos, vel)
    before = rig.drops()
    msg = JointState(name=labels, position=pos, velocity=vel, effort=eff)
    msg.header.stamp = rig.stamp()
    rig.feed(rig.arm.topics.joint_states, msg)
    if bad:
        assert rig.drops() >= before + 1, "an unreadable joint_states message was not counted"


# --- poses ---
pose_events = st.tuples(st.just("pose"), st.lists(floats, min_size=3, max_size=3),
                        st.lists(floats, min_size=4, max_size=4), st.sampled_from(["base", "world", ""]),
                        st.booleans())


@bridge_fuzz(pose_events)
def test_fuzz_poses(rig: BridgeRig, ev: tuple) -> None:
    """TCP poses with any position, quaternion and frame: used, or counted once; the arm never jumps."""
    _, xyz, quat, frame, near = ev
    if rig.arm.topics.current_pose is None:
        return  # this arm's pose comes from forward kinematics (fuzzed through joint states)
    msg = PoseStamped()
    msg.header.stamp, msg.header.frame_id = rig.stamp(), frame
    p, o = msg.pose.position, msg.pose.orientation
    base = rig.position if near else np.zeros(3)
    p.x, p.y, p.z = (float(b + v * (0.001 if near else 1.0)) for b, v in zip(base, xyz))
    o.x, o.y, o.z, o.w = (float(v) for v in quat)
    before = rig.drops()
    CLOCK[0] += 0.001
    rig.feed(rig.arm.topics.current_pose, msg)
    used = rig.filter.observation_time_s == CLOCK[0]
    assert rig.drops() == before + (0 if used else 1), "a pose was neither used nor counted once"


# --- wrench ---
wrench_events = st.tuples(st.just("wrench"), st.lists(floats, min_size=6, max_size=6))


@bridge_fuzz(wrench_events)
def test_fuzz_wrenches(rig: BridgeRig, ev: tuple) -> None:
    """Wrenches with any values: a non-finite or absurd one is counted and never enters the published state."""
    if rig.arm.topics.wrench is None:
        return
    values = [float(v) for v in ev[1]]
    msg = WrenchStamped()
    msg.header.stamp = rig.stamp()
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = values
    before = rig.drops()
    rig.feed(rig.arm.topics.wrench, msg)
    assert rig.drops() == before + (0 if all(abs(v) <= MAX_WRENCH for v in values) else 1)
    CLOCK[0] += 0.005
    rig.feed(rig.arm.topics.current_pose, pose_msg(rig.position, DOWN, rig.arm.base_frame, rig.stamp()))


# --- actions ---
action_events = st.tuples(st.just("action"), st.lists(st.sampled_from([*names.ACTION_NAMES, "dq", ""]),
                                                      max_size=9), st.lists(floats, max_size=9))


@bridge_fuzz(action_events)
def test_fuzz_actions(rig: BridgeRig, ev: tuple) -> None:
    """Actions with any labels and values: each is executed or refused (counted), and always echoed."""
    _, labels, values = ev
    msg = JointState(name=labels, position=[float(v) for v in values])
    msg.header.stamp = rig.stamp()
    echoes = rig.node.pubs[names.EXECUTED_ACTION].sent
    before, n_echo = rig.drops(), len(echoes)
    rig.feed(names.ACTION, msg)
    assert len(echoes) == n_echo + 1, "every action is echoed on rl/executed_action"
    echo = dict(zip(echoes[-1].name, echoes[-1].position))
    if echo["refused"] >= 0.5:
        assert rig.drops() >= before + 1, "a refused action was not counted"
        assert all(echo[k] == 0.0 for k in names.ACTION_NAMES)


# --- teleop interventions ---
intervention_events = st.tuples(
    st.just("intervention"), st.lists(st.sampled_from([*names.INTERVENTION_NAMES, "x"]), max_size=9),
    st.lists(floats, max_size=9))


@bridge_fuzz(intervention_events)
def test_fuzz_interventions(rig: BridgeRig, ev: tuple) -> None:
    """Teleop vectors with any labels and values, then a policy action: unreadable ones are counted and end the
    intervention; a readable one with NaN is refused by the safety filter (the arm holds)."""
    _, labels, values = ev
    msg = JointState(name=labels, position=[float(v) for v in values])
    msg.header.stamp = rig.stamp()
    before = rig.drops()
    rig.feed(names.INTERVENTION, msg)
    readable = names.pick(labels, values, names.INTERVENTION_NAMES) is not None
    assert rig.drops() == before + (0 if readable else 1)
    rig.act(np.zeros(7))


# --- e-stop and the services that clear ---
estop_events = st.one_of(st.tuples(st.sampled_from(["estop", "health"]), st.booleans()),
                         st.sampled_from([("clear_estop",), ("clear_faults",), ("estop_service",)]))


@bridge_fuzz(estop_events)
def test_fuzz_estop(rig: BridgeRig, ev: tuple) -> None:
    """E-stop inputs, driver health (where the arm has a health topic) and the clearing services in any order:
    while e-stopped or faulted no command moves the arm."""
    b = rig.bridge
    if ev[0] == "estop":
        rig.feed(names.ESTOP, Bool(data=ev[1]))
    elif ev[0] == "health":
        for h in rig.arm.health:
            rig.feed(h.topic, Bool(data=ev[1]))
            if not ev[1]:
                assert h.name in rig.filter.faults
    elif ev[0] == "estop_service":
        b._srv_estop(Trigger.Request(), Trigger.Response())
    elif ev[0] == "clear_estop":
        b._srv_clear_estop(Trigger.Request(), Trigger.Response())
    else:
        b._srv_clear_faults(Trigger.Request(), Trigger.Response())
    rig.check()
    if rig.filter.estop_latched or rig.filter.faults:
        held = rig.filter.last_target
        rig.act(np.ones(7))
        assert rig.filter.state in ("estopped", "faulted")
        after = rig.filter.last_target
        assert (held is None) == (after is None) and (held is None or np.allclose(held[0], after[0]))


# --- camera bridge: raw and compressed images ---
ENCODINGS = ["rgb8", "bgr8", "rgba8", "bgra8", "mono8", "8UC3", "8UC1", "16UC1", "yuv422", ""]
image_events = st.one_of(
    st.tuples(st.just("raw"), st.sampled_from(ENCODINGS), st.integers(0, 70), st.integers(0, 70),
              st.integers(0, 300), st.integers(0, 20_000)),
    st.tuples(st.just("right_size"), st.sampled_from(["rgb8", "bgr8", "mono8"])),
    st.tuples(st.just("jpeg"), st.sampled_from([(48, 64), (40, 60), (48, 65)]), st.booleans()),
)


class CameraRig:
    def __init__(self, transport: str) -> None:
        self.cfg = CameraConfig(name="front", topic="cam/image_raw", input_hw_px=(48, 64), transport=transport,  # type: ignore[arg-type]
                                crop_xywh_px=(8, 0, 48, 48), output_hw_px=(16, 16), reliability="reliable")
        self.node = RecordingNode()
        self.bridge = CameraBridge(self.node, self.cfg)
        self.out = self.node.pubs[names.image_topic("front")].sent

    def counted(self) -> int:
        return sum(self.bridge.drops.counts.values())


@FUZZ
@given(st.lists(image_events, min_size=1, max_size=10))
def test_fuzz_images(events: list[tuple]) -> None:
    """Images of any encoding, size, step and payload, and JPEGs right, wrong-sized or corrupt: published at the
    output size only when the frame is the configured size, otherwise counted once."""
    cv2 = pytest.importorskip("cv2")
    rigs = {t: CameraRig(t) for t in ("raw", "compressed")}
    for ev in events:
        stamp = rclpy.time.Time(seconds=1).to_msg()
        if ev[0] in ("raw", "right_size"):
            rig = rigs["raw"]
            if ev[0] == "raw":
                _, enc, h, w, step, size = ev
                msg = Image(encoding=enc, height=h, width=w, step=step, data=bytes(size % 20_000))
            else:
                channels = {"rgb8": 3, "bgr8": 3, "mono8": 1}[ev[1]]
                msg = Image(encoding=ev[1], height=48, width=64, step=64 * channels,
                            data=bytes(48 * 64 * channels))
            msg.header.stamp = stamp
            callback = rig.bridge._on_raw
        else:
            rig = rigs["compressed"]
            (h, w), corrupt = ev[1], ev[2]
            data = cv2.imencode(".jpg", np.zeros((h, w, 3), np.uint8))[1].tobytes()
            msg = CompressedImage(format="jpeg", data=data[: len(data) // 2] + b"x" if corrupt else data)
            msg.header.stamp = stamp
            callback = rig.bridge._on_compressed
        before, published = rig.counted(), len(rig.out)
        callback(msg)
        assert rig.bridge.drops.counts["callback_errors"] == 0
        if len(rig.out) > published:
            out = rig.out[-1]
            assert (out.height, out.width, out.encoding) == (16, 16, "rgb8") and rig.counted() == before
        else:
            assert rig.counted() == before + 1, "a dropped frame was not counted"


@FUZZ
@given(st.lists(st.one_of(st.floats(), st.sampled_from([math.nan, math.inf])), max_size=10),
       st.lists(st.integers(-5, 5), max_size=10), st.floats(0, 10))
def test_fuzz_teleop_joy(axes: list[float], buttons: list[int], age_s: float) -> None:
    """The teleop node's input: any Joy axes and buttons give a finite rl/intervention vector in range."""
    from robot_rl.ros.teleop import JoyMapper, TeleopConfig

    mapper = JoyMapper(TeleopConfig())
    mapper.update(axes, buttons, 0.0)
    out = mapper.vector(age_s)
    assert out.shape == (8,) and np.all(np.isfinite(out)) and np.all(np.abs(out) <= 1.0)
    assert out[0] in (0.0, 1.0)
