"""The scripted corrector: takeover on drift, k steps in control, hand-back, cooldown, random takeovers."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.teleop.corrector import CorrectorConfig, ScriptedCorrector, action_drift, direction_drift

EXPERT = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], np.float32)
GOOD = EXPERT.copy()
BAD = np.array([-1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0], np.float32)


def per_step_rms(**changes: object) -> CorrectorConfig:
    """The action-RMS rule reacting to a single drifted step (the simplest rule to pin down by hand)."""
    return CorrectorConfig(drift_metric="rms", threshold=0.3, patience_steps=1, **changes)


def run(corrector: ScriptedCorrector, proposals: list[np.ndarray]) -> list[bool]:
    corrector.on_reset(None)
    active = []
    for a in proposals:
        corrector.propose(a)
        active.append(corrector.read().active)
    return active


def test_takes_over_on_drift_for_k_steps_then_hands_back() -> None:
    c = ScriptedCorrector(per_step_rms(takeover_steps=3), plan_fn=lambda: EXPERT)
    proposals = [GOOD, GOOD, BAD, BAD, GOOD, GOOD, GOOD, BAD]
    assert run(c, proposals) == [False, False, True, True, True, False, False, True]
    assert c.takeovers == 2
    # still drifted right after a hand-back: a new takeover at once (no cooldown by default)
    assert run(c, [BAD] * 4) == [True] * 4 and c.takeovers == 4


def test_commands_are_the_expert_and_good_policies_are_left_alone() -> None:
    c = ScriptedCorrector(per_step_rms(takeover_steps=2), plan_fn=lambda: EXPERT)
    c.on_reset(None)
    c.propose(BAD)
    cmd = c.read()
    np.testing.assert_array_equal(cmd.action, EXPERT)
    assert run(c, [GOOD] * 10) == [False] * 10


def test_cooldown_lets_the_policy_act() -> None:
    c = ScriptedCorrector(per_step_rms(takeover_steps=2, cooldown_steps=2), plan_fn=lambda: EXPERT)
    assert run(c, [BAD] * 7) == [True, True, False, False, True, True, False]


def test_gripper_disagreement_is_drift() -> None:
    c = ScriptedCorrector(per_step_rms(takeover_steps=1), plan_fn=lambda: EXPERT)
    close = EXPERT.copy()
    close[6] = -1.0
    keep = EXPERT.copy()
    keep[6] = 0.0  # "keep" while open (the start state) agrees with an expert that wants it open
    assert run(c, [keep, close, keep]) == [False, True, False]
    assert action_drift(EXPERT, BAD) == pytest.approx(np.sqrt(4 / 6))


def test_direction_drift_ignores_speed_and_rotation_but_not_heading() -> None:
    slower = np.array([0.3, 0.05, 0.0, 0.9, -0.9, 0.5, 1.0], np.float32)  # right way, slow, rotation noise
    sideways = np.array([0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0], np.float32)
    hold = np.zeros(7, np.float32)
    assert direction_drift(slower, EXPERT) < 0.05 and action_drift(slower, EXPERT) > 0.5
    assert direction_drift(sideways, EXPERT) == pytest.approx(1.0)
    assert direction_drift(BAD, EXPERT) == pytest.approx(2.0)
    assert direction_drift(hold, EXPERT) == 1.0 and direction_drift(hold, hold) == 0.0
    c = ScriptedCorrector(CorrectorConfig(drift_metric="direction", threshold=0.7, takeover_steps=2),
                          plan_fn=lambda: EXPERT)
    assert run(c, [slower] * 6) == [False] * 6


def test_patience_needs_consecutive_drifted_steps() -> None:
    c = ScriptedCorrector(CorrectorConfig(drift_metric="rms", takeover_steps=2, patience_steps=3),
                          plan_fn=lambda: EXPERT)
    assert run(c, [BAD, BAD, GOOD, BAD, BAD, BAD, BAD, GOOD, GOOD]) == [
        False, False, False, False, False, True, True, False, False]


def test_progress_metric_takes_over_when_the_task_stalls() -> None:
    progress = iter([0.0, 0.1, 0.2, 0.2, 0.2, 0.2, 0.2, 0.5, 0.6, 0.6, 0.65, 0.7])
    cfg = CorrectorConfig(patience_steps=3, takeover_steps=2, min_progress=0.01)  # default metric: progress
    c = ScriptedCorrector(cfg, plan_fn=lambda: EXPERT, progress_fn=lambda: next(progress))
    # rising, rising, then 3 stalled steps -> takeover for 2 steps; after the hand-back the policy progresses
    assert run(c, [BAD] * 12) == [False, False, False, False, False, True, True] + [False] * 5
    assert c.takeovers == 1
    with pytest.raises(RuntimeError, match="progress"):
        run(ScriptedCorrector(cfg, plan_fn=lambda: EXPERT), [GOOD])


def test_random_takeovers_and_noise_are_seeded() -> None:
    cfg = CorrectorConfig(drift_metric="rms", threshold=float("inf"), p_takeover_random=0.3, takeover_steps=1,
                          expert_noise_std=0.2)
    a = run(ScriptedCorrector(cfg, plan_fn=lambda: EXPERT), [GOOD] * 200)
    b = run(ScriptedCorrector(cfg, plan_fn=lambda: EXPERT), [GOOD] * 200)
    assert a == b and 30 < sum(a) < 90
    c = ScriptedCorrector(cfg, plan_fn=lambda: EXPERT)
    c.on_reset(None)
    while True:
        c.propose(GOOD)
        cmd = c.read()
        if cmd.active:
            assert not np.allclose(cmd.action[:6], EXPERT[:6]) and cmd.action[6] == 1.0
            break


def test_config_errors_name_the_field() -> None:
    with pytest.raises(ValueError, match="takeover_steps"):
        CorrectorConfig(takeover_steps=0)
    with pytest.raises(ValueError, match="p_takeover_on_drift"):
        CorrectorConfig(p_takeover_on_drift=1.5)
    with pytest.raises(RuntimeError, match="on_reset"):
        ScriptedCorrector().read()


def test_corrects_a_zero_policy_in_pick_cube() -> None:
    pytest.importorskip("robot_rl.sim")  # sets MUJOCO_GL before mujoco loads
    from robot_rl.sim import make_env
    from robot_rl.teleop.intervention import InterventionWrapper

    corrector = ScriptedCorrector(CorrectorConfig(takeover_steps=20, patience_steps=3))
    env = InterventionWrapper(make_env("pick_cube"), corrector)
    env.reset(seed=3)
    flags = []
    for _ in range(80):
        _, _, term, trunc, info = env.step(np.zeros(7, np.float32))
        flags.append(info["intervention"])
        if term or trunc:
            break
    # a policy that does nothing makes no progress: after 3 patient steps the corrector takes over, nearly all
    # the time from then on, and the corrected episode succeeds
    assert info["is_success"] and flags[:4] == [False, False, False, True] and sum(flags) >= 0.7 * len(flags)
    assert info["intervention_stats"]["takeovers"] >= 1


def test_a_pace_catches_a_dawdling_policy_in_pick_cube() -> None:
    """A policy heading for the cube at a fifth of the expert's speed never stalls, so only a ``min_progress``
    that asks for a pace takes over from it (under RLIF dawdling is otherwise never penalised)."""
    pytest.importorskip("robot_rl.sim")
    from robot_rl.sim import make_env, make_expert

    env = make_env("pick_cube")
    sim = env.unwrapped

    def first_takeover(min_progress: float) -> int | None:
        env.reset(seed=3)
        expert = make_expert(env)
        corrector = ScriptedCorrector(CorrectorConfig(min_progress=min_progress, patience_steps=8))
        corrector.on_reset(env)
        for t in range(40):
            action = expert.act(sim.scene)
            action[:6] *= 0.2  # same heading, a fifth of the speed
            corrector.propose(action)
            if corrector.read().active:
                return t
            env.step(action)
        return None

    assert first_takeover(0.01) is None and first_takeover(0.3) == 8
    # the expert itself keeps that pace: not taken over on the way to the cube
    env.reset(seed=3)
    expert = make_expert(env)
    corrector = ScriptedCorrector(CorrectorConfig(min_progress=0.3, patience_steps=8))
    corrector.on_reset(env)
    for _ in range(12):
        action = expert.act(sim.scene)
        corrector.propose(action)
        assert not corrector.read().active
        env.step(action)
    progress = sim.task.progress(sim.scene)
    assert 0.7 < progress < 1.0  # reach term linear in the distance: the TCP is close but holds nothing yet
