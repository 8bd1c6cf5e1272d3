"""The command safety filter: box, step limits, refusal, watchdog, latched e-stop, faults, counters."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_rl.envs.geometry import rotation_angle_between, rotvec_to_matrix
from robot_rl.safety import COUNTERS, SafetyFilter, SafetyLimits
from robot_rl.safety.filter import limit_tilt

DOWN = np.diag([1.0, -1.0, -1.0])  # tool z pointing down
HOME = np.array([0.5, 0.0, 0.3])
LIMITS = SafetyLimits()
PERIOD = LIMITS.control_period_s


def make(kind: str = "pose", **overrides: object) -> SafetyFilter:
    f = SafetyFilter(dataclasses.replace(LIMITS, **overrides), kind=kind)  # type: ignore[arg-type]
    f.observe(HOME, DOWN, 0.0)
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
    assert sent.mode == "active" and not sent.safety_clipped
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


def test_workspace_box_clips_target_even_when_measured_pose_is_outside() -> None:
    f = make(max_target_error_m=1.0)
    f.observe(np.array([0.74, 0.0, 0.3]), DOWN, 0.0)
    for i in range(5):
        sent = f.on_action(act(dx=1.0), 0.01 * (i + 1))
    assert sent.position[0] == pytest.approx(LIMITS.workspace_high_m[0])
    assert "clipped_workspace" in sent.reasons and sent.safety_clipped
    f.observe(np.array([0.9, 0.0, 0.3]), DOWN, 0.1)  # pushed outside by a disturbance
    sent = f.on_action(act(), 0.11)
    assert np.all(sent.position <= np.array(LIMITS.workspace_high_m) + 1e-12)


def test_reference_limiting_keeps_target_near_measured_pose() -> None:
    f = make(max_target_error_m=0.03)
    for i in range(10):  # the arm is blocked at HOME (contact): the target must not wind up
        sent = f.on_action(act(dz=-1.0), 0.01 * (i + 1))
        f.observe(HOME, DOWN, 0.01 * (i + 1))
    assert sent.position[2] == pytest.approx(HOME[2] - 0.03)
    assert f.counters["limited_target_error"] > 0 and not sent.safety_clipped


def test_tilt_cone() -> None:
    tilted = rotvec_to_matrix(np.array([1.0, 0.0, 0.0])) @ DOWN
    limited, changed = limit_tilt(tilted, 0.6)
    assert changed and np.arccos(-limited[2, 2]) == pytest.approx(0.6)
    assert limit_tilt(DOWN, 0.6) == (DOWN, False)


BAD_ACTIONS = [np.full(7, np.nan), np.array([0, 0, np.inf, 0, 0, 0, 0]), np.zeros(8), np.zeros(6)]


@pytest.mark.parametrize("bad", BAD_ACTIONS)
def test_malformed_actions_are_refused_and_hold(bad: np.ndarray) -> None:
    f = make()
    first = f.on_action(act(dx=1.0), 0.01)
    sent = f.on_action(bad, 0.02)
    assert sent.mode == "hold" and sent.action is None
    np.testing.assert_allclose(sent.position, HOME)  # holds the measured pose (fresh)
    assert not np.allclose(first.position, sent.position)
    refused = f.counters["refused_nonfinite"] + f.counters["refused_shape"]
    assert refused == 1


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
            if sent.mode != "active":
                break
        assert t <= 2 * PERIOD, f"{kind}: hold after {t / PERIOD:.2f} periods"
        assert sent.mode == "hold" and "hold_stale_action" in sent.reasons
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
    assert sent.mode == "hold" and f.counters["refused_stale_observation"] == 1
    np.testing.assert_allclose(sent.position, target)  # no fresh measured pose: keep the last target
    assert f.tick(late + 0.01).mode == "hold"


def test_estop_latches_and_clears_only_on_request() -> None:
    f = make()
    f.on_action(act(dx=1.0), 0.01)
    f.set_estop_input(True)
    assert f.on_action(act(dx=1.0), 0.02).mode == "estop"
    f.set_estop_input(False)  # releasing the input does not clear the latch
    for i in range(5):
        f.observe(HOME, DOWN, 0.03 + i * 0.01)
        assert f.on_action(act(dx=1.0), 0.03 + i * 0.01).mode == "estop"
        assert f.tick(0.03 + i * 0.01).mode == "estop"
    assert f.counters["refused_estop"] == 6 and f.counters["estop_engaged"] == 1
    f.set_estop_input(True)
    ok, _ = f.clear_estop()
    assert not ok and f.estop_latched  # input still asserted
    f.set_estop_input(False)
    ok, _ = f.clear_estop()
    assert ok and not f.estop_latched
    sent = f.on_action(act(dx=1.0), 0.09)
    assert sent.mode == "active"
    np.testing.assert_allclose(sent.position, HOME + np.array([0.02, 0, 0]))  # re-seeded from measured


def test_driver_faults_block_until_cleared() -> None:
    f = make("velocity")
    f.set_fault("robot_program_running", "program stopped")
    sent = f.on_action(act(dx=1.0), 0.01)
    assert sent.mode == "fault" and np.all(sent.linear == 0)
    assert f.status()["faults"] == {"robot_program_running": "program stopped"}
    f.set_fault("robot_program_running", None)
    assert f.on_action(act(dx=1.0), 0.02).mode == "active"


def test_pause_and_resume_reseed() -> None:
    f = make()
    f.on_action(act(dx=1.0), 0.01)
    f.pause()
    assert f.on_action(act(dx=1.0), 0.02).mode == "paused"
    f.observe(HOME + 0.1, DOWN, 0.03)  # the arm was moved while paused (a reset)
    f.resume()
    sent = f.on_action(act(), 0.04)
    np.testing.assert_allclose(sent.position, HOME + 0.1)


def test_gripper_latch() -> None:
    f = make()
    assert f.on_action(act(gripper=0.2), 0.01).gripper_open is None
    assert f.on_action(act(gripper=-0.7), 0.02).gripper_open is False
    assert f.on_action(act(gripper=0.0), 0.03).gripper_open is False
    assert f.on_action(act(gripper=0.5), 0.04).gripper_open is True


def test_velocity_box_prediction_and_speed() -> None:
    f = make("velocity", max_linear_speed_m_s=0.1)
    f.observe(np.array([0.5, 0.0, 0.015]), DOWN, 0.0)
    sent = f.on_action(act(dx=1.0, dz=-1.0), 0.01)
    assert np.linalg.norm(sent.linear) <= 0.1 + 1e-9
    assert 0.015 + sent.linear[2] * PERIOD >= LIMITS.workspace_low_m[2] - 1e-9
    assert "clipped_speed" in sent.reasons and "clipped_workspace" in sent.reasons


def test_random_inputs_never_leave_the_box() -> None:
    """Fuzz: any mix of actions, NaN, stale gaps and observations keeps every sent target inside the box."""
    rng = np.random.default_rng(0)
    low, high = np.array(LIMITS.workspace_low_m), np.array(LIMITS.workspace_high_m)
    for kind in ("pose", "velocity"):
        f = make(kind)
        t = 0.0
        for _ in range(3000):
            t += rng.choice([0.001, PERIOD, 3 * PERIOD], p=[0.6, 0.35, 0.05])
            r = rng.random()
            if r < 0.3:
                pos = rng.uniform(low - 0.3, high + 0.3)
                f.observe(pos, rotvec_to_matrix(rng.normal(0, 0.5, 3)) @ DOWN, t)
            elif r < 0.35:
                f.observe(np.array([np.nan, 0, 0]), DOWN, t)
            a = rng.uniform(-5, 5, 7) if rng.random() < 0.9 else np.full(7, np.nan)
            sent = f.on_action(a, t) if rng.random() < 0.7 else f.tick(t)
            if sent.position is not None:
                assert np.all(sent.position >= low - 1e-12) and np.all(sent.position <= high + 1e-12)
                assert np.all(np.isfinite(sent.rotation))
            if sent.linear is not None:
                assert np.all(np.isfinite(sent.linear)) and np.all(np.isfinite(sent.angular))
                assert np.linalg.norm(sent.linear) <= LIMITS.max_linear_speed_m_s + 1e-9
        assert f.counters["bad_observation"] > 0 and f.counters["refused_nonfinite"] > 0
        assert set(f.counters) == set(COUNTERS)


def test_limits_validate_with_field_names() -> None:
    with pytest.raises(ValueError, match="workspace_low_m"):
        SafetyLimits(workspace_low_m=(1.0, 0.0, 0.0), workspace_high_m=(0.5, 1.0, 1.0))
    with pytest.raises(ValueError, match="max_translation_step_m"):
        SafetyLimits(max_translation_step_m=0.0)
    with pytest.raises(ValueError, match="stale_periods"):
        SafetyLimits(stale_periods=3.0)
    with pytest.raises(ValueError, match="kind"):
        SafetyFilter(LIMITS, kind="joint")  # type: ignore[arg-type]
