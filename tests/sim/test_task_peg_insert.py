"""peg_insert: the hole as built has <= 5 mm clearance, the peg starts grasped, success is geometric."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.envs.contract import ACTION_DIM, STATE_LAYOUT
from robot_rl.sim import make_env, make_expert
from robot_rl.sim.tasks.peg_insert import PegInsert, PegInsertConfig


def _opening_half_widths(env) -> np.ndarray:
    """Half widths (m) of the hole's opening along x and y, read from the compiled wall geoms."""
    m = env.scene.model
    walls = [g for g in range(m.ngeom) if m.geom_bodyid[g] == m.body("hole").id]
    assert len(walls) == 4
    inner = np.full(2, np.inf)
    for g in walls:
        pos, size = m.geom_pos[g], m.geom_size[g]
        axis = int(np.argmax(np.abs(pos[:2])))  # the wall's offset axis
        inner[axis] = min(inner[axis], abs(pos[axis]) - size[axis])
        other = 1 - axis
        assert abs(pos[other]) + size[other] >= env.task.config.hole_half_width_m, "walls leave a gap"
    return inner


def test_clearance_as_built() -> None:
    env = make_env("peg_insert")
    m = env.scene.model
    peg_half = m.geom_size[m.geom("peg").id][:2]
    clearance = _opening_half_widths(env) - peg_half
    assert np.all(clearance > 0) and np.all(clearance <= 0.005), f"clearance {clearance} m"
    np.testing.assert_allclose(clearance, env.task.config.hole_clearance_m, atol=1e-9)


def test_peg_starts_grasped_and_stays() -> None:
    env = make_env("peg_insert")
    task: PegInsert = env.task
    holes = []
    for seed in range(5):
        obs, info = env.reset(seed=seed)
        assert not info["is_success"] and obs["state"][STATE_LAYOUT.slice("gripper_opening")][0] < 0.5, (
            "gripper should start closed on the peg"
        )
        grip = env.scene.tcp_pos() - env.scene.body_pos(task.peg_body)
        for _ in range(10):
            env.step(np.zeros(ACTION_DIM, np.float32))
        drift = env.scene.tcp_pos() - env.scene.body_pos(task.peg_body) - grip
        assert np.linalg.norm(drift) < 3e-3, f"peg slipped {drift} m in the grasp"
        holes.append(task.hole_pos(env.scene)[:2])
    assert np.ptp(np.array(holes), axis=0).min() > 0.02, "hole position is not randomised"


def _place_peg(env, bottom_xy: np.ndarray, depth: float) -> None:
    """Put the peg upright with its lower end ``depth`` below the rim at ``bottom_xy`` (gripper opened)."""
    scene, task = env.scene, env.task
    scene.data.qpos[scene.finger_qpos_adr] = 0.04
    center_z = task.hole_pos(scene)[2] - depth + task.config.peg_half_length_m
    scene.set_free_body_pose("peg_joint", np.array([*bottom_xy, center_z]))
    scene.forward()


def test_success_is_depth_and_lateral() -> None:
    env = make_env("peg_insert")
    env.reset(seed=0)
    task: PegInsert = env.task
    hole = task.hole_pos(env.scene)
    off = task.config.hole_clearance_m * 0.8
    _place_peg(env, hole[:2] + np.array([off, -off]), depth=0.025)
    assert task.is_success(env.scene) and task.reward_terms(env.scene)["insert"] == 1.0
    _place_peg(env, hole[:2], depth=0.01)  # in the hole, not deep enough
    assert not task.is_success(env.scene) and 0.0 < task.reward_terms(env.scene)["insert"] < 1.0
    _place_peg(env, hole[:2] + np.array([0.06, 0.0]), depth=0.025)  # beside the hole, low enough
    assert not task.is_success(env.scene) and task.reward_terms(env.scene)["insert"] == 0.0


def test_expert_inserts() -> None:
    env = make_env("peg_insert")
    env.reset(seed=5)
    expert = make_expert(env, seed=5)
    for _ in range(env.cfg.max_episode_steps):
        _, _, terminated, truncated, info = env.step(expert.act(env.scene))
        assert all(0.0 <= v <= 1.0 for v in info["reward_terms"].values())
        if terminated or truncated:
            break
    assert info["is_success"] and env.task.depth(env.scene) >= env.task.config.insert_depth_m


def test_bad_config_names_field() -> None:
    with pytest.raises(ValueError, match="hole_clearance_m"):
        PegInsertConfig(hole_clearance_m=0.006)
    with pytest.raises(ValueError, match="insert_depth_m"):
        PegInsertConfig(insert_depth_m=0.05)
