"""One safety gate: the simulated arm, the robot bridge's filter and the sim arm's hardware config agree.

The sim env moves its target with the same ``pose_step`` as ``SafetyFilter``, under the limits of
``hardware_configs/arms/sim_panda.yaml`` (the driver config of the sim robot node), so a policy trained in the
sim env meets the gate it will meet behind the bridge.
"""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.envs.contract import ACTION_DIM
from robot_rl.envs.geometry import rotation_angle_between
from robot_rl.ros.hardware import load_arm_config
from robot_rl.safety.filter import SafetyFilter
from robot_rl.safety.gate import tool_tilt
from robot_rl.sim import make_env
from robot_rl.sim.config import SIM_ARM_SAFETY


def test_the_sim_arm_limits_are_its_hardware_config() -> None:
    assert load_arm_config("sim_panda").safety == SIM_ARM_SAFETY
    assert make_env("reach").unwrapped.cfg.safety == SIM_ARM_SAFETY


def random_actions(n: int, seed: int) -> np.ndarray:
    """Mostly saturated actions: the limits are what they exercise."""
    rng = np.random.default_rng(seed)
    actions = rng.uniform(-1.0, 1.0, (n, ACTION_DIM)) * rng.choice([1.0, 3.0], (n, 1))
    return np.clip(actions, -1.0, 1.0).astype(np.float32)


@pytest.mark.parametrize("task", ["reach", "pick_cube"])
def test_the_sim_arm_never_exceeds_its_hardware_limits(task: str) -> None:
    limits = load_arm_config("sim_panda").safety
    env = make_env(task)
    arm = env.unwrapped
    env.reset(seed=4)
    previous = (arm._target_pos.copy(), arm._target_mat.copy())
    for action in random_actions(150, seed=1):
        _, _, terminated, truncated, _ = env.step(action)
        pos, rot = arm._target_pos, arm._target_mat
        assert np.linalg.norm(pos - previous[0]) <= limits.max_translation_step_m + 1e-9
        assert rotation_angle_between(rot, previous[1]) <= limits.max_rotation_step_rad + 1e-9
        assert np.all(pos >= np.asarray(limits.workspace_low_m) - 1e-9)
        assert np.all(pos <= np.asarray(limits.workspace_high_m) + 1e-9)
        assert tool_tilt(rot) <= limits.max_tilt_rad + 1e-6
        previous = (pos.copy(), rot.copy())
        if terminated or truncated:
            env.reset()
            previous = (arm._target_pos.copy(), arm._target_mat.copy())


def test_the_bridge_filter_commands_the_targets_the_sim_env_does() -> None:
    """Same actions, same measured poses: the filter's targets are the sim env's, step for step."""
    env = make_env("reach")
    arm = env.unwrapped
    env.reset(seed=2)
    gate = SafetyFilter(load_arm_config("sim_panda").safety)
    period = 1.0 / SIM_ARM_SAFETY.control_hz
    now = 0.0
    for t in (-period, now):  # a start needs a reading the one before it confirms
        gate.observe(arm.scene.tcp_pos(), arm.scene.tcp_mat(), t)
    start = gate.on_action(np.zeros(ACTION_DIM), now)  # both start from the measured pose after reset
    np.testing.assert_allclose(start.position, arm._target_pos, atol=1e-12)
    for action in random_actions(39, seed=3):  # reach runs 40 steps
        now += period
        gate.observe(arm.scene.tcp_pos(), arm.scene.tcp_mat(), now)
        sent = gate.on_action(action, now)
        _, _, terminated, truncated, info = env.step(action)
        assert sent.state == "active"
        np.testing.assert_allclose(sent.position, arm._target_pos, atol=1e-12)
        np.testing.assert_allclose(sent.rotation, arm._target_mat, atol=1e-12)
        assert info["safety_clipped"] == any(r.startswith("clipped_") for r in sent.reasons)
        assert not (terminated or truncated)
