"""The command safety filter: box, step limits against the last command, reading plausibility, refusal,
watchdog, latched e-stop and faults, counters."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_rl.envs.geometry import rotation_angle_between, rotvec_to_matrix
from robot_rl.safety import SafetyFilter, SafetyLimits
from robot_rl.safety.config import PRESET_FIELDS, SAFETY_PRESETS
from robot_rl.safety.gate import limit_tilt

DOWN = np.diag([1.0, -1.0, -1.0])  # tool z pointing down
HOME = np.array([0.5, 0.0, 0.3])
BOX = {"workspace_low_m": (0.25, -0.35, 0.012), "workspace_high_m": (0.75, 0.35, 0.45), "control_hz": 10.0}
LIMITS = SafetyLimits.from_preset("standard", **BOX, max_target_error_m=0.04)
PERIOD = LIMITS.control_period_s


def make(kind: str = "pose", at: np.ndarray = HOME, **overrides: object) -> SafetyFilter:
    """A filter that has seen two agreeing readings at ``at`` (a start needs a confirmed reading)."""
    f = SafetyFilter(dataclasses.replace(LIMITS, **overrides), kind=kind)  # type: ignore[arg-type]
    f.observe(at, DOWN, -0.001)
    f.observe(at, DOWN, 0.0)
    return f


def act(**parts: float) -> np.ndarray:
    a = np.zeros(7, np.float32)
    names = ("dx", "dy", "dz", "drx", "dry", "drz", "gripper")
    for k, v in parts.items():
        a[names.index(k)] = v
    return a


def test_action_moves_target_by_scaled_delta() -> None:
    f = make()
    sent = f.on_action(act(dx=0.5, dz=-1.0), 0.01)
    assert sent.state == "active" and not sent.safety_clipped
    np.testing.assert_allclose(sent.position, HOME + np.array([0.01, 0.0, -0.02]))
    np.testing.assert_allclose(sent.rotation, DOWN)
    np.testing.assert_allclose(sent.action, act(dx=0.5, dz=-1.0))


def test_out_of_range_action_is_clipped_and_counted() -> None:
    f = make()
    sent = f.on_action(act(dx=3.0), 0.01)
    assert sent.safety_clipped and "clipped_action_range" in sent.reasons
    assert sent.action[0] == 1.0 and f.counters["clipped_action_range"] == 1
    np.testing.assert_allclose(sent.position, HOME + np.array([0.02, 0, 0]))


def test_per_command_step_limits() -> None:
    f = make(max_step_m=0.1, max_translation_step_m=0.01, max_step_rad=0.5, max_rotation_step_rad=0.05,
             max_target_error_m=0.2, max_target_error_rad=1.0, max_tilt_rad=None)
    sent = f.on_action(act(dx=1.0, dy=1.0, drz=1.0), 0.01)
    assert np.linalg.norm(sent.position - HOME) == pytest.approx(0.01)
    assert rotation_angle_between(sent.rotation, DOWN) == pytest.approx(0.05)
    assert f.counters["clipped_translation_step"] == 1 and f.counters["clipped_rotation_step"] == 1


def test_workspace_box_clips_target_even_when_measured_pose_is_pushed_outside() -> None:
    f = make(at=np.array([0.74, 0.0, 0.3]), max_target_error_m=0.1)
    for i in range(5):
        sent = f.on_action(act(dx=1.0), 0.01 * (i + 1))
    assert sent.position[0] == pytest.approx(LIMITS.workspace_high_m[0])
    assert "clipped_workspace" in sent.reasons and sent.safety_clipped
    f.observe(np.array([0.8, 0.0, 0.3]), DOWN, 0.1)  # pushed outside by a disturbance (0.6 m/s: plausible)
    sent = f.on_action(act(), 0.11)
    assert np.all(sent.position <= np.array(LIMITS.workspace_high_m) + 1e-12)


def test_a_start_far_outside_the_box_is_refused() -> None:
    f = make(at=np.array([0.9, 0.0, 0.3]))  # 15 cm outside: commanding would yank the arm
    sent = f.on_action(act(), 0.01)
    assert sent.state == "inactive" and not sent.has_command
    assert f.counters["refused_outside_workspace"] == 1


def test_reference_limiting_keeps_target_near_measured_pose() -> None:
    f = make(max_target_error_m=0.03)
    for i in range(10):  # the arm is blocked at HOME (contact): the target must not wind up
        sent = f.on_action(act(dz=-1.0), 0.01 * (i + 1))
        f.observe(HOME, DOWN, 0.01 * (i + 1))
    assert sent.position[2] == pytest.approx(HOME[2] - 0.03)
    assert f.counters["limited_target_error"] > 0 and not sent.safety_clipped


def test_an_absurd_reading_never_moves_the_target() -> None:
    """Finite readings far away (2 m: a jump; 5 m: beyond any reach), interleaved with good ones: dropped,
    counted, and no command jumps."""
    f = make()
    t, last = 0.0, HOME
    for i in range(40):
        t += 0.005
        far = i % 2 == 1
        absurd = np.array([2.0, 1.0, 0.3]) if i % 4 == 1 else np.array([5.0, 4.0, 3.0])
        accepted = f.observe(absurd if far else HOME, DOWN, t)
        assert accepted != far
        sent = f.on_action(act(dx=1.0, dy=1.0, dz=1.0), t)
        assert np.linalg.norm(sent.position - last) <= LIMITS.max_translation_step_m + 1e-12
        last = sent.position
    assert f.counters["implausible_observation"] == 10 and f.counters["bad_observation"] == 10
    assert f.state == "active"
    assert np.linalg.norm(last - HOME) <= LIMITS.max_target_error_m * np.sqrt(3) + 1e-9  # near the arm


def test_bad_readings_in_a_row_fault_and_latch() -> None:
    f = make()
    f.on_action(act(dx=1.0), 0.001)
    for i in range(3):
        assert not f.observe(np.array([5.0, 0.0, 0.3]), DOWN, 0.002 + 0.001 * i)
    assert f.state == "active"  # the state changes with the next call
    sent = f.on_action(act(dx=1.0), 0.01)
    assert sent.state == "faulted" and not sent.has_command and "bad_readings" in f.faults
    assert f.observe(HOME, DOWN, 0.02)  # the next good reading is the new reference
    assert f.tick(0.03).state == "faulted"  # latched: good readings do not clear it
    assert f.clear_faults()[0]
    assert f.observe(HOME, DOWN, 0.04)
    assert f.on_action(act(dx=1.0), 0.05).state == "active"


@pytest.mark.parametrize("bad", [np.full(7, np.nan), np.array([0, 0, np.inf, 0, 0, 0, 0]), np.zeros(8),
                                 np.zeros(6)])
def test_malformed_actions_are_refused_and_hold(bad: np.ndarray) -> None:
    f = make()
    first = f.on_action(act(dx=1.0), 0.01)
    sent = f.on_action(bad, 0.02)
    assert sent.state == "holding" and sent.action is None
    np.testing.assert_allclose(sent.position, HOME)  # holds at the measured pose (fresh)
    assert not np.allclose(first.position, sent.position)
    assert f.counters["refused_nonfinite"] + f.counters["refused_shape"] == 1


def test_velocity_backend_refusal_sends_zero() -> None:
    f = make("velocity")
    assert np.any(f.on_action(act(dx=1.0), 0.01).linear)
    sent = f.on_action(np.full(7, np.nan), 0.02)
    assert np.all(sent.linear == 0) and np.all(sent.angular == 0)


def test_stale_action_holds_within_two_periods() -> None:
    for kind in ("pose", "velocity"):
        f = make(kind)
        f.on_action(act(dx=1.0), 0.0)
        t, tick_dt = 0.0, PERIOD / 4
        while True:  # the bridge ticks at 4x control rate; observations keep coming
            t += tick_dt
            f.observe(HOME, DOWN, t)
            sent = f.tick(t)
            if sent.state != "active":
                break
        assert t <= 2 * PERIOD, f"{kind}: hold after {t / PERIOD:.2f} periods"
        assert sent.state == "holding" and "hold_stale_action" in sent.reasons
        if kind == "velocity":
            assert np.all(sent.linear == 0) and np.all(sent.angular == 0)
        else:
            np.testing.assert_allclose(sent.position, HOME)
        assert f.counters["hold_stale_action"] == 1
        assert f.last_hold_delay_s == pytest.approx(t)  # reported in rl/status by the bridge


def test_stale_observation_refuses_actions_and_holds_last_target() -> None:
    f = make()
    sent = f.on_action(act(dx=1.0), 0.01)
    target = sent.position.copy()
    late = 0.01 + 2 * PERIOD
    sent = f.on_action(act(dx=1.0), late)
    assert sent.state == "holding" and f.counters["refused_stale_observation"] == 1
    np.testing.assert_allclose(sent.position, target)  # no fresh measured pose: keep the last target
    assert f.tick(late + 0.01).state == "holding"


def test_estop_latches_and_clears_only_on_request() -> None:
    f = make()
    f.on_action(act(dx=1.0), 0.01)
    f.set_estop_input(True)
    assert f.on_action(act(dx=1.0), 0.02).state == "estopped"
    f.set_estop_input(False)  # releasing the input does not clear the latch
    for i in range(5):
        f.observe(HOME, DOWN, 0.03 + i * 0.01)
        assert f.on_action(act(dx=1.0), 0.03 + i * 0.01).state == "estopped"
        assert f.tick(0.03 + i * 0.01).state == "estopped"
    assert f.counters["refused_estopped"] == 6 and f.counters["estop_engaged"] == 1
    f.set_estop_input(True)
    ok, _ = f.clear_estop()
    assert not ok and f.estop_latched  # input still asserted
    f.set_estop_input(False)
    ok, _ = f.clear_estop()
    assert ok and not f.estop_latched and f.state == "inactive"
    sent = f.on_action(act(dx=1.0), 0.08)
    assert sent.state == "active"
    np.testing.assert_allclose(sent.position, HOME + np.array([0.02, 0, 0]))  # restarted from measured


def test_driver_faults_latch_until_cleared() -> None:
    f = make("velocity")
    f.set_fault("robot_program_running", "program stopped")
    sent = f.on_action(act(dx=1.0), 0.01)
    assert sent.state == "faulted" and np.all(sent.linear == 0)
    assert f.status()["faults"] == {"robot_program_running": "program stopped"}
    assert not f.clear_faults()[0]  # the condition is still present
    f.set_fault("robot_program_running", None)
    assert f.on_action(act(dx=1.0), 0.02).state == "faulted"  # latched: its end does not clear it
    ok, message = f.clear_faults()
    assert ok and "robot_program_running" in message
    assert f.on_action(act(dx=1.0), 0.03).state == "active"


def test_faults_end_with_their_condition_when_configured_not_to_latch() -> None:
    f = make("velocity", latch_faults=False)
    f.set_fault("safety_mode", "protective stop")
    assert f.on_action(act(dx=1.0), 0.01).state == "faulted"
    f.set_fault("safety_mode", None)
    assert f.on_action(act(dx=1.0), 0.02).state == "active"


def test_disable_and_enable_restart_from_the_measured_pose() -> None:
    f = make()
    f.on_action(act(dx=1.0), 0.01)
    f.disable()
    assert f.on_action(act(dx=1.0), 0.02).state == "inactive"
    f.observe(HOME + 0.1, DOWN, 0.03)  # a reset moved the arm while disabled: a jump is taken as is
    f.observe(HOME + 0.1, DOWN, 0.035)
    f.enable()
    sent = f.on_action(act(), 0.04)
    np.testing.assert_allclose(sent.position, HOME + 0.1)


def test_a_start_needs_a_confirmed_reading() -> None:
    f = SafetyFilter(LIMITS)
    f.observe(HOME, DOWN, 0.0)
    assert f.on_action(act(), 0.001).state == "inactive"  # one reading: nothing to confirm it
    f.observe(HOME, DOWN, 0.002)
    assert f.on_action(act(), 0.003).state == "active"


def test_gripper_latch() -> None:
    f = make()
    assert f.on_action(act(gripper=0.2), 0.01).gripper_open is None
    assert f.on_action(act(gripper=-0.7), 0.02).gripper_open is False
    assert f.on_action(act(gripper=0.0), 0.03).gripper_open is False
    assert f.on_action(act(gripper=0.5), 0.04).gripper_open is True


def test_velocity_box_prediction_and_speed() -> None:
    f = make("velocity", at=np.array([0.5, 0.0, 0.015]), max_linear_speed_m_s=0.1)
    sent = f.on_action(act(dx=1.0, dz=-1.0), 0.01)
    assert np.linalg.norm(sent.linear) <= 0.1 + 1e-9
    assert 0.015 + sent.linear[2] * PERIOD >= LIMITS.workspace_low_m[2] - 1e-9
    assert "clipped_speed" in sent.reasons and "clipped_workspace" in sent.reasons


def test_tilt_cone() -> None:
    tilted = rotvec_to_matrix(np.array([1.0, 0.0, 0.0])) @ DOWN
    limited, changed = limit_tilt(tilted, 0.6)
    assert changed and np.arccos(-limited[2, 2]) == pytest.approx(0.6)
    assert limit_tilt(DOWN, 0.6) == (DOWN, False)


def test_limits_validate_with_field_names_and_units() -> None:
    with pytest.raises(ValueError, match="workspace_low_m"):
        SafetyLimits.from_preset("standard", **{**BOX, "workspace_low_m": (1.0, 0.0, 0.0)})
    with pytest.raises(ValueError, match=r"workspace_low_m\[0\] = 300 m .*millimetres"):
        SafetyLimits.from_preset("standard", **{**BOX, "workspace_low_m": (300, -300, 20),
                                                "workspace_high_m": (700, 300, 450)})
    with pytest.raises(ValueError, match=r"max_translation_step_m .*\(0.0, 0.1\]"):
        SafetyLimits.from_preset("standard", **BOX, max_translation_step_m=1.0)
    with pytest.raises(ValueError, match="max_translation_step_m"):
        SafetyLimits.from_preset("standard", **BOX, max_translation_step_m=0.0)
    with pytest.raises(ValueError, match="stale_periods"):
        SafetyLimits.from_preset("standard", **BOX, stale_periods=3.0)
    with pytest.raises(ValueError, match=r"max_step_rad .*degrees"):
        SafetyLimits.from_preset("standard", **BOX, max_step_rad=5.0)
    with pytest.raises(ValueError, match="unknown safety preset 'fast'"):
        SafetyLimits.from_preset("fast", **BOX)
    with pytest.raises(ValueError, match="kind"):
        SafetyFilter(LIMITS, kind="joint")  # type: ignore[arg-type]


def test_presets_hold_every_limit_but_the_box_and_rate() -> None:
    for name, preset in SAFETY_PRESETS.items():
        assert set(preset) == PRESET_FIELDS, name
        SafetyLimits.from_preset(name, **BOX)  # valid
