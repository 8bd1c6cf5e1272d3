"""Property-based fuzz of the safety filter (hypothesis, derandomized): any sequence of readings (good, absurd,
NaN, odd rotations), actions (in range, huge, NaN/Inf, wrong shape), watchdog ticks, waits, e-stops, faults,
input problems and enable/disable. Properties, after every call:

- no call raises; nothing non-finite is ever sent;
- every commanded target is inside the workspace box and its tool inside the tilt cone;
- consecutive pose commands differ by at most the per-command step limits; the first command after a (re)start
  is within two steps of the latest accepted reading (the arm's measured pose);
- velocity commands stay within the speed limits (and one period of motion within the step limits);
- every refused action and every dropped reading is counted exactly once.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_filter import DOWN, HOME, LIMITS

from robot_rl.envs.geometry import rotation_angle_between, rotvec_to_matrix
from robot_rl.safety import SafetyFilter
from robot_rl.safety.filter import COUNTERS
from robot_rl.safety.gate import tool_tilt

EXAMPLES = 1000
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
REFUSED = [c for c in COUNTERS if c.startswith("refused_")]
DROPPED = ("bad_observation", "implausible_observation")

finite = st.floats(-50, 50, allow_nan=False)
weird = st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300])
action = st.one_of(
    st.lists(st.floats(-1, 1, allow_nan=False), min_size=7, max_size=7),
    st.lists(finite, min_size=7, max_size=7),
    st.lists(st.one_of(finite, weird), min_size=7, max_size=7),
    st.lists(finite, min_size=0, max_size=9),
)
event = st.one_of(
    st.tuples(st.just("read"), st.floats(0.0005, 0.05), st.lists(st.floats(-0.002, 0.002), min_size=6,
                                                                   max_size=6)),
    st.tuples(st.just("read_absurd"), st.lists(finite, min_size=3, max_size=3)),
    st.tuples(st.just("read_weird"), st.lists(st.one_of(finite, weird), min_size=3, max_size=3)),
    st.tuples(st.just("read_turned"), st.lists(st.floats(-3, 3), min_size=3, max_size=3)),
    st.tuples(st.just("act"), action),
    st.tuples(st.just("wait"), st.floats(0, 0.5)),
    st.sampled_from([("tick",), ("estop_on",), ("estop_off",), ("clear_estop",), ("fault_on",), ("fault_off",),
                     ("clear_faults",), ("disable",), ("enable",), ("inputs_bad",), ("inputs_ok",)]),
)


class Arm:
    """The 'true' arm: follows the commanded target like an ideal controller, at most 0.25 m/s."""

    def __init__(self) -> None:
        self.position, self.rotation, self.t = HOME.copy(), DOWN.copy(), 0.0

    def follow(self, target: np.ndarray | None, dt: float) -> None:
        if target is not None:
            step = target - self.position
            norm = float(np.linalg.norm(step))
            if norm > 0.25 * dt:
                step *= 0.25 * dt / norm
            self.position = self.position + step


def run(events: list[tuple], kind: str, latch: bool) -> None:
    f = SafetyFilter(dataclasses.replace(LIMITS, latch_faults=latch), kind=kind)  # type: ignore[arg-type]
    arm = Arm()
    lim = f.limits
    low, high = np.asarray(lim.workspace_low_m), np.asarray(lim.workspace_high_m)
    last_pose: tuple[np.ndarray, np.ndarray] | None = None
    last_reading = None
    for ev in events:
        name, sent = ev[0], None
        before = dict(f.counters)
        if name.startswith("read"):
            if name == "read":
                dt, noise = ev[1], np.asarray(ev[2])
                arm.t += dt
                arm.follow(f.last_target[0] if f.last_target else None, dt)
                pos, rot = arm.position + noise[:3], rotvec_to_matrix(noise[3:]) @ arm.rotation
            elif name == "read_turned":
                pos, rot = arm.position, rotvec_to_matrix(np.asarray(ev[1])) @ arm.rotation
            else:
                pos, rot = np.asarray(ev[1], float), arm.rotation
            arm.t += 0.001
            accepted = f.observe(pos, rot, arm.t)
            dropped = sum(f.counters[c] - before[c] for c in DROPPED)
            assert dropped == (0 if accepted else 1)
            if accepted:
                last_reading = pos
        elif name == "act":
            sent = f.on_action(np.asarray(ev[1], dtype=np.float64), arm.t)
            refused = sum(f.counters[c] - before[c] for c in REFUSED)
            assert refused == (1 if sent.action is None else 0), sent.reasons
        elif name == "wait":
            arm.t += ev[1]
        elif name == "tick":
            sent = f.tick(arm.t)
        else:
            {"estop_on": lambda: f.set_estop_input(True), "estop_off": lambda: f.set_estop_input(False),
             "clear_estop": f.clear_estop, "fault_on": lambda: f.set_fault("driver", "stopped"),
             "fault_off": lambda: f.set_fault("driver", None), "clear_faults": f.clear_faults,
             "disable": f.disable, "enable": f.enable, "inputs_bad": lambda: f.set_input_problem("wrench"),
             "inputs_ok": lambda: f.set_input_problem(None)}[name]()
        if f.last_target is None:
            last_pose = None  # a restart: the next command starts from the measured pose
        if sent is None:
            continue
        assert sent.state == f.state
        if sent.position is not None:
            pos, rot = sent.position, sent.rotation
            assert np.all(np.isfinite(pos)) and np.all(np.isfinite(rot))
            assert np.all(pos >= low - 1e-12) and np.all(pos <= high + 1e-12), f"outside the box: {pos}"
            assert np.allclose(rot @ rot.T, np.eye(3), atol=1e-9)
            assert tool_tilt(rot) <= lim.max_tilt_rad + 1e-9
            if last_pose is not None:
                assert np.linalg.norm(pos - last_pose[0]) <= lim.max_translation_step_m + 1e-9
                assert rotation_angle_between(rot, last_pose[1]) <= lim.max_rotation_step_rad + 1e-9
            else:
                assert last_reading is not None
                assert np.linalg.norm(pos - last_reading) <= 2 * lim.max_translation_step_m + 1e-9
            last_pose = (pos.copy(), rot.copy())
        if sent.linear is not None:
            assert np.all(np.isfinite(sent.linear)) and np.all(np.isfinite(sent.angular))
            cap = min(lim.max_linear_speed_m_s, lim.max_translation_step_m * lim.control_hz)
            assert np.linalg.norm(sent.linear) <= cap + 1e-9
            assert np.linalg.norm(sent.angular) <= lim.max_angular_speed_rad_s + 1e-9
        if sent.action is not None:
            assert np.all(np.isfinite(sent.action)) and np.all(np.abs(sent.action) <= 1.0)


@FUZZ
@given(st.lists(event, min_size=1, max_size=60))
def test_pose_filter_properties(events: list[tuple]) -> None:
    run(events, "pose", latch=True)


@FUZZ
@given(st.lists(event, min_size=1, max_size=60), st.booleans())
def test_velocity_filter_properties(events: list[tuple], latch: bool) -> None:
    run(events, "velocity", latch)
