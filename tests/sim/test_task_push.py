"""push: the y -> -y mirror symmetry the module documents holds in the scene, the dynamics and the expert."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.data.symmetry import Elements, LayoutTransform
from robot_rl.envs.contract import ACTION_DIM, ACTION_LAYOUT, STATE_LAYOUT, Layout, image_key
from robot_rl.envs.geometry import matrix_to_rot6d, rotvec_to_matrix
from robot_rl.sim import make_env, make_expert
from robot_rl.sim.symmetry import transfer
from robot_rl.sim.tasks.push import PRIVILEGED_LAYOUT, Push, PushConfig

M = np.array([1.0, -1.0, 1.0])
MIRROR = Elements.mirror(90.0)
ROT6D_SIGN = (1, -1, 1, -1, 1, -1)  # (R00, R10, R20, R01, R11, R21) of M R M with M = diag(1, -1, 1)


def _signs(layout: Layout, flips: dict[str, tuple[int, ...]]) -> np.ndarray:
    sign = np.ones(layout.dim, np.float32)
    for name, pattern in flips.items():
        sign[layout.slice(name)] = pattern
    return sign


# Worked out by hand: positions, linear velocities and forces flip y; pseudovectors flip x and z.
STATE_MIRROR_SIGN = _signs(STATE_LAYOUT, {"tcp_pos": (1, -1, 1), "tcp_rot6d": ROT6D_SIGN, "tcp_linvel": (1, -1, 1),
                                          "tcp_angvel": (-1, 1, -1), "wrench_force": (1, -1, 1),
                                          "wrench_torque": (-1, 1, -1)})
ACTION_MIRROR_SIGN = _signs(ACTION_LAYOUT, {"translation": (1, -1, 1), "rotation": (-1, 1, -1)})
PRIVILEGED_MIRROR_SIGN = _signs(Layout(PRIVILEGED_LAYOUT), {"block_pos": (1, -1, 1), "block_rot6d": ROT6D_SIGN,
                                                            "goal_pos": (1, -1), "block_minus_tcp": (1, -1, 1),
                                                            "goal_minus_block": (1, -1)})


def _mirror_into(src, dst) -> None:
    assert transfer(src, dst, MIRROR)


def test_the_kind_rules_give_the_hand_worked_mirror_signs() -> None:
    rng = np.random.default_rng(0)
    for layout, sign in ((STATE_LAYOUT, STATE_MIRROR_SIGN), (ACTION_LAYOUT, ACTION_MIRROR_SIGN),
                         (Layout(PRIVILEGED_LAYOUT), PRIVILEGED_MIRROR_SIGN)):
        values = torch.as_tensor(rng.normal(size=(1, layout.dim)))
        moved = LayoutTransform(layout, "test")(values, MIRROR)
        np.testing.assert_allclose(moved.numpy(), values.numpy() * sign, atol=1e-6)


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
