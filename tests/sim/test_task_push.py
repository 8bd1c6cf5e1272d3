"""push: the y -> -y mirror symmetry the module documents holds in the scene, the dynamics and the expert."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.envs.contract import ACTION_DIM, image_key
from robot_rl.envs.geometry import matrix_to_rot6d, rotvec_to_matrix
from robot_rl.sim import make_env, make_expert
from robot_rl.sim.env import ArmEnv
from robot_rl.sim.tasks.push import (
    ACTION_MIRROR_SIGN,
    PRIVILEGED_MIRROR_SIGN,
    STATE_MIRROR_SIGN,
    Push,
    PushConfig,
)

M = np.array([1.0, -1.0, 1.0])
ARM_JOINT_SIGN = np.array(
    [-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0]
)  # joints 1, 3, 5, 7 turn about in-plane axes


def _mirror_quat(q: np.ndarray) -> np.ndarray:
    return q * np.array([1.0, -1.0, 1.0, -1.0])  # (w, x, y, z) of M R M


def _mirror_into(src: ArmEnv, dst: ArmEnv) -> None:
    """Write the y-mirror image of ``src``'s full state (physics + env target/latch) into ``dst``."""
    s, d = src.scene, dst.scene
    d.data.qpos[:], d.data.qvel[:] = s.data.qpos, s.data.qvel
    qa, qv = s.arm_qpos_adr, s.arm_dof_adr
    arm = s.data.qpos[qa] * ARM_JOINT_SIGN
    arm[6] = np.pi / 2 - s.data.qpos[qa[6]]  # the hand sits at -45 deg on link 7: mirror about +45 deg
    d.data.qpos[qa], d.data.qvel[qv] = arm, s.data.qvel[qv] * ARM_JOINT_SIGN
    j = s.model.joint("block_joint").id
    a, v = s.model.jnt_qposadr[j], s.model.jnt_dofadr[j]
    d.data.qpos[a : a + 3], d.data.qpos[a + 3 : a + 7] = (
        M * s.data.qpos[a : a + 3],
        _mirror_quat(s.data.qpos[a + 3 : a + 7]),
    )
    d.data.qvel[v : v + 3], d.data.qvel[v + 3 : v + 6] = (
        M * s.data.qvel[v : v + 3],
        -M * s.data.qvel[v + 3 : v + 6],
    )
    d.data.mocap_pos[:] = s.data.mocap_pos * M
    d.data.mocap_quat[:] = [_mirror_quat(q) for q in s.data.mocap_quat]
    d.data.ctrl[:] = s.data.ctrl
    s.data.qacc_warmstart[:] = d.data.qacc_warmstart[:] = 0.0
    # The env's own state: impedance target, gripper latch, F/T tare (private, but this test is about them).
    dst._target_pos, dst._target_mat = M * src._target_pos, np.diag(M) @ src._target_mat @ np.diag(M)
    dst._gripper_open = src._gripper_open
    d._wrench_bias = s._wrench_bias * np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    s.forward()
    d.forward()


def test_sign_vectors_mirror_rotations() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        mat = rotvec_to_matrix(rng.normal(size=3))
        mirrored = np.diag(M) @ mat @ np.diag(M)
        np.testing.assert_allclose(matrix_to_rot6d(mirrored), matrix_to_rot6d(mat) * STATE_MIRROR_SIGN[3:9])
        # Axis-angle actions: exp(M-mirrored rotvec) == M exp(rotvec) M.
        rv = rng.normal(size=3) * 0.3
        np.testing.assert_allclose(
            rotvec_to_matrix(rv * ACTION_MIRROR_SIGN[3:6]),
            np.diag(M) @ rotvec_to_matrix(rv) @ np.diag(M),
            atol=1e-12,
        )
    for sign in (STATE_MIRROR_SIGN, ACTION_MIRROR_SIGN, PRIVILEGED_MIRROR_SIGN):
        assert set(np.unique(sign)) <= {-1.0, 1.0}
    assert ACTION_MIRROR_SIGN.tolist() == [1, -1, 1, -1, 1, -1, 1]


def test_reflected_state_gives_reflected_trajectory() -> None:
    env, mirror = make_env("push"), make_env("push")
    rng = np.random.default_rng(0)
    for seed in range(3):
        env.reset(seed=seed)
        mirror.reset(seed=seed + 100)
        _mirror_into(env, mirror)
        for _ in range(8):
            action = rng.uniform(-1, 1, ACTION_DIM).astype(np.float32)
            obs, reward, *_ = env.step(action)
            obs_m, reward_m, *_ = mirror.step(action * ACTION_MIRROR_SIGN)
            expected = obs["state"] * STATE_MIRROR_SIGN
            np.testing.assert_allclose(obs_m["state"][:9], expected[:9], atol=2e-3)  # pose, m and rot6d
            np.testing.assert_allclose(obs_m["state"][9:15], expected[9:15], atol=5e-2)  # m/s, rad/s
            np.testing.assert_allclose(obs_m["state"][15:], expected[15:], atol=0.3)  # gripper, N, N m
            np.testing.assert_allclose(
                obs_m["privileged"], obs["privileged"] * PRIVILEGED_MIRROR_SIGN, atol=2e-3
            )
            assert reward_m == pytest.approx(reward)


def test_images_mirror_left_right() -> None:
    """Cameras sit in the symmetry plane: the mirrored scene renders as the left-right flipped image."""
    env, mirror = (make_env("push", obs_mode="pixels", image_size=96) for _ in range(2))
    env.reset(seed=2)
    mirror.reset(seed=102)
    _mirror_into(env, mirror)
    still = np.zeros(ACTION_DIM, np.float32)
    obs, obs_m = env.step(still)[0], mirror.step(still)[0]
    # The front view's upper part shows the arm's links, whose shapes are not exactly mirror-symmetric.
    for camera, rows in (("wrist", slice(None)), ("front", slice(56, None))):
        image, image_m = (
            obs[image_key(camera)][rows].astype(float),
            obs_m[image_key(camera)][rows].astype(float),
        )
        flipped_error, plain_error = np.abs(image[:, ::-1] - image_m).mean(), np.abs(image - image_m).mean()
        assert flipped_error < 1.0 and flipped_error < 0.2 * plain_error, (camera, flipped_error, plain_error)


def test_expert_is_mirror_equivariant() -> None:
    env, mirror = make_env("push"), make_env("push")
    for seed in range(3):
        env.reset(seed=seed)
        mirror.reset(seed=seed + 100)
        _mirror_into(env, mirror)
        expert, expert_m = make_expert(env, seed=seed), make_expert(mirror, seed=seed)
        for _ in range(10):
            action, action_m = expert.act(env.scene), expert_m.act(mirror.scene)
            np.testing.assert_allclose(action_m, action * ACTION_MIRROR_SIGN, atol=0.05)
            env.step(action)
            mirror.step(action_m)


def test_start_and_goal_are_symmetric_and_apart() -> None:
    env = make_env("push")
    task: Push = env.task
    ys = []
    for seed in range(60):
        _, info = env.reset(seed=seed)
        block, goal = task.block_pos(env.scene), task.goal(env.scene)
        assert not info["is_success"] and task.distance(env.scene) >= task.config.min_push_distance_m - 0.005
        assert abs(block[2] - task.config.block_half_size_m[2]) < 2e-3
        ys += [block[1], goal[1]]
    assert abs(np.mean(ys)) < 0.03 and min(ys) < -0.08 and max(ys) > 0.08


def test_success_when_block_on_goal() -> None:
    env = make_env("push")
    env.reset(seed=0)
    task: Push = env.task
    goal = task.goal(env.scene)
    env.scene.set_free_body_pose("block_joint", np.array([*goal + 0.01, task.config.block_half_size_m[2]]))
    env.scene.forward()
    assert task.is_success(env.scene) and task.reward_terms(env.scene)["push"] > 0.9


def test_expert_pushes() -> None:
    env = make_env("push")
    env.reset(seed=4)
    expert = make_expert(env, seed=4)
    for _ in range(env.cfg.max_episode_steps):
        _, _, terminated, truncated, info = env.step(expert.act(env.scene))
        if terminated or truncated:
            break
    assert info["is_success"]


def test_bad_config_names_field() -> None:
    with pytest.raises(ValueError, match="xy_low"):
        PushConfig(xy_low=(0.42, -0.1), xy_high=(0.58, 0.15))
    with pytest.raises(ValueError, match="min_push_distance_m"):
        PushConfig(min_push_distance_m=1.0)
