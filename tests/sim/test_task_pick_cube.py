"""pick_cube: the scene as specified, success only for a lifted *and* held cube, the expert lifts it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from robot_rl.sim import make_env, make_expert
from robot_rl.sim.tasks.pick_cube import PAD_INNER_OFFSET_M, PickCube, PickCubeConfig


def test_cube_as_specified_and_resting_at_reset() -> None:
    env = make_env("pick_cube")
    task: PickCube = env.task
    m = env.scene.model
    half = m.geom_size[m.geom("cube").id]
    assert np.allclose(half, 0.0225) and 0.05 <= m.body_mass[task.cube_body] <= 0.1
    yaws = []
    for seed in range(10):
        obs, info = env.reset(seed=seed)
        cube = task.cube_pos(env.scene)
        assert not info["is_success"]
        assert abs(cube[2] - task.rest_z) < 2e-3, "cube not resting on the table after reset"
        assert np.all(cube[:2] >= np.array(task.config.cube_xy_low) - 1e-3)
        assert np.all(cube[:2] <= np.array(task.config.cube_xy_high) + 1e-3)
        np.testing.assert_allclose(obs["privileged"][:3], cube, atol=1e-6)
        np.testing.assert_allclose(obs["privileged"][9:], cube - env.scene.tcp_pos(), atol=1e-6)
        mat = task.cube_mat(env.scene)
        yaws.append(np.arctan2(mat[1, 0], mat[0, 0]))
    assert np.ptp(yaws) > 0.5, "cube yaw is not randomised"


def _hold_cube_in_gripper(env) -> None:
    """Put the cube between the fingers at the TCP and close the fingers onto it (no physics step)."""
    scene, task = env.scene, env.task
    scene.set_free_body_pose("cube_joint", scene.tcp_pos())
    scene.data.qpos[scene.finger_qpos_adr] = task.config.cube_half_size_m - PAD_INNER_OFFSET_M - 5e-4
    scene.forward()


def test_success_needs_lift_and_grasp() -> None:
    env = make_env("pick_cube")
    env.reset(seed=0)
    scene, task = env.scene, env.task
    # Lifted but not held: floating 10 cm up, away from the hand.
    scene.set_free_body_pose("cube_joint", np.array([0.5, 0.25, task.rest_z + 0.1]))
    scene.forward()
    assert (
        task.lift(scene) > task.config.lift_height_m and not task.held(scene) and not task.is_success(scene)
    )
    # Held in the fingers at the start height (~20 cm above the table): lifted and held.
    _hold_cube_in_gripper(env)
    assert task.held(scene) and task.is_success(scene)
    terms = task.reward_terms(scene)
    assert terms["grasp"] == 1.0 and terms["lift"] == 1.0 and terms["reach"] > 0.9
    # Held, but not lifted far enough for a (stricter) task config.
    strict = PickCube(dataclasses.replace(task.config, lift_height_m=0.5))
    strict.bind(scene)
    assert strict.held(scene) and not strict.is_success(scene)


def test_expert_picks_and_terms_are_bounded() -> None:
    env = make_env("pick_cube")
    env.reset(seed=3)
    expert = make_expert(env, seed=3)
    for _ in range(env.cfg.max_episode_steps):
        _, _, terminated, truncated, info = env.step(expert.act(env.scene))
        assert all(0.0 <= v <= 1.0 for v in info["reward_terms"].values())
        if terminated or truncated:
            break
    assert info["is_success"] and terminated
    assert info["reward_terms"]["grasp"] == 1.0 and info["reward_terms"]["lift"] == 1.0


def test_bad_config_names_field() -> None:
    with pytest.raises(ValueError, match="cube_half_size_m"):
        PickCubeConfig(cube_half_size_m=0.06)
    with pytest.raises(ValueError, match="cube_xy_low"):
        PickCubeConfig(cube_xy_low=(0.7, 0.0))
