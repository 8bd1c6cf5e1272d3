"""Which driver inputs an arm needs, and whether they are healthy (pure Python: the bridge and
``robot-rl check-hardware`` share it).

``required_inputs(arm)`` lists what the robot state is built from: the TCP pose (or the joint states it is
computed from), the joint states a joint-velocity backend needs, the wrench, the gripper's finger joints and
every driver health topic. ``InputMonitor`` records arrivals (and the frame a pose came in); an input is a
problem while it never arrived, has been silent for ``max_silence_s`` or came in the wrong frame. The robot
bridge holds the arm and publishes no ``rl/robot_state`` while any required input is a problem: an observation
is never filled in with a value that did not arrive.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

from robot_rl.ros.hardware import ArmConfig, load_arm_config, resolve_config_path

RATE_WINDOW_S = 2.0


@dataclass(frozen=True)
class InputSpec:
    name: str
    """pose, joint_states, wrench, gripper_joints or ``health/<name>``."""
    topic: str
    msg_type: str
    """ROS type as ``pkg/msg/Name``."""
    max_silence_s: float | None
    """Silent longer than this: a problem (None: latched status topics, one message is enough)."""
    min_rate_hz: float = 0.0
    """Slower than this is reported (check-hardware) but does not hold the arm."""
    frame_id: str | None = None
    """Expected header.frame_id (poses)."""
    joint_names: tuple[str, ...] = ()
    """JointState inputs: names a message must carry to count for this input."""


def required_inputs(arm: ArmConfig) -> list[InputSpec]:
    t, g = arm.topics, arm.gripper
    state_rate = 2.0 * arm.control_hz  # the observation must refresh faster than the policy steps
    out: list[InputSpec] = []
    if t.current_pose is not None:
        out.append(InputSpec("pose", t.current_pose, "geometry_msgs/msg/PoseStamped", t.timeout_s, state_rate,
                             frame_id=arm.base_frame))
    if t.current_pose is None or arm.command.backend == "joint_velocity":
        out.append(InputSpec("joint_states", t.joint_states, "sensor_msgs/msg/JointState", t.timeout_s,
                             state_rate, joint_names=arm.joint_names))
    if t.wrench is not None:
        out.append(InputSpec("wrench", t.wrench, "geometry_msgs/msg/WrenchStamped", t.timeout_s, state_rate))
    if g.backend != "none" and g.joint_names:
        out.append(InputSpec("gripper_joints", g.joint_states or t.joint_states, "sensor_msgs/msg/JointState",
                             t.timeout_s, 5.0, joint_names=g.joint_names))
    for h in arm.health:
        msg_type = {"bool": "std_msgs/msg/Bool", "int8": "std_msgs/msg/Int8", "int32": "std_msgs/msg/Int32"}
        out.append(InputSpec(f"health/{h.name}", h.topic, msg_type.get(h.type, h.type),
                             None if h.latched else t.timeout_s))
    return out


@dataclass
class _Track:
    spec: InputSpec
    last_s: float = -math.inf
    count: int = 0
    bad_frame: str | None = None
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=4096))


class InputMonitor:
    def __init__(self, specs: list[InputSpec]) -> None:
        self.tracks = {s.name: _Track(s) for s in specs}

    def specs(self) -> list[InputSpec]:
        return [t.spec for t in self.tracks.values()]

    def arrived(self, name: str, now_s: float) -> None:
        track = self.tracks.get(name)
        if track is not None:
            track.last_s = now_s
            track.count += 1
            track.bad_frame = None
            track.recent.append(now_s)

    def wrong_frame(self, name: str, frame_id: str) -> None:
        """A message of ``name`` came in another frame than its spec's (it was refused)."""
        track = self.tracks.get(name)
        if track is not None:
            track.bad_frame = frame_id

    def problem_of(self, track: _Track, now_s: float) -> str | None:
        spec = track.spec
        if track.bad_frame is not None:
            return f"{spec.topic} is in frame {track.bad_frame!r}, expected {spec.frame_id!r}"
        if track.count == 0:
            return f"nothing received on {spec.topic} ({spec.msg_type})"
        if spec.max_silence_s is not None and now_s - track.last_s > spec.max_silence_s:
            return f"{spec.topic} silent for more than {spec.max_silence_s} s"
        return None

    def problem(self, now_s: float) -> str | None:
        """The first required input that is not healthy, as one sentence that stays the same while the problem
        does (the bridge logs it when it changes); None when all are."""
        for name, track in self.tracks.items():
            why = self.problem_of(track, now_s)
            if why is not None:
                return f"{name}: {why}"
        return None

    def rate_hz(self, name: str, now_s: float) -> float:
        recent = self.tracks[name].recent
        while recent and now_s - recent[0] > RATE_WINDOW_S:
            recent.popleft()
        if len(recent) < 2:
            return 0.0
        return (len(recent) - 1) / max(recent[-1] - recent[0], 1e-9)

    def slow(self, name: str, now_s: float) -> bool:
        spec = self.tracks[name].spec
        return spec.max_silence_s is not None and self.rate_hz(name, now_s) < spec.min_rate_hz

    def report(self, now_s: float) -> dict[str, str]:
        """One line per input: ``ok, 99.8 Hz`` (``slow, ...`` below its plausible rate) or its problem."""
        out = {}
        for name, track in self.tracks.items():
            why = self.problem_of(track, now_s)
            if why is None:
                rate = self.rate_hz(name, now_s)
                why = (f"slow, {rate:.1f} Hz (expected >= {track.spec.min_rate_hz:.0f} Hz)"
                       if self.slow(name, now_s) else f"ok, {rate:.1f} Hz")
                if track.spec.max_silence_s is None:
                    why = "ok (latched status received)"
            out[name] = why
        return out


def describe_arm(config: str) -> list[str]:
    """An arm config, validated, as lines: what the bridge reads, what it commands and the limits it enforces."""
    arm = load_arm_config(config)
    limits = arm.safety
    lines = [
        f"{resolve_config_path(config, 'arms')}: valid",
        f"{arm.name} ({arm.driver}): base frame {arm.base_frame!r}, policy at {arm.control_hz:g} Hz",
        f"  command: {arm.command.backend} on {arm.command.topic!r} at {arm.command.publish_hz:g} Hz",
        f"  gripper: {arm.gripper.backend}",
        "  inputs the bridge needs before it commands:",
    ]
    lines += [f"    {spec.name}: {spec.topic!r} ({spec.msg_type})" for spec in required_inputs(arm)]
    lines += [
        f"  workspace box (m): {list(limits.workspace_low_m)} to {list(limits.workspace_high_m)}",
        f"  per control step at action 1: {limits.max_step_m:g} m, {limits.max_step_rad:g} rad; "
        f"tilt cone {'none' if limits.max_tilt_rad is None else f'{limits.max_tilt_rad:g} rad'}",
    ]
    return lines
