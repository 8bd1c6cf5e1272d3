"""Every registered task against the contract, plus determinism, clipping, randomisation and config errors."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.envs.conformance import check_conformance
from robot_rl.envs.contract import ACTION_DIM, STATE_LAYOUT, image_key
from robot_rl.sim import TASKS, make_env, make_expert
from robot_rl.sim.config import SIM_ARM_SAFETY, ArmEnvConfig, RandomizationConfig

ALL_TASKS = sorted(TASKS)


@pytest.mark.parametrize("task", ALL_TASKS)
@pytest.mark.parametrize("obs_mode", ["state", "pixels"])
def test_every_task_resets_and_steps(task: str, obs_mode: str) -> None:
    env = make_env(task, obs_mode=obs_mode, image_size=64)
    obs, _ = env.reset(seed=1)
    for _ in range(5):
        obs, reward, *_ = env.step(env.action_space.sample())
        for key, value in obs.items():
            assert value.shape == env.observation_space[key].shape
            assert value.dtype == env.observation_space[key].dtype
            assert np.all(np.isfinite(value))
        assert np.isfinite(reward)
    if obs_mode == "pixels":
        assert set(obs) == {"state", image_key("front"), image_key("wrist")}
        assert obs[image_key("front")].std() > 5, "front camera image is blank"
    else:
        assert "privileged" in obs and obs["privileged"].size == sum(
            f.size for f in env.task.privileged_layout
        )
    env.close()


@pytest.mark.parametrize("task", ALL_TASKS)
def test_conformance(task: str) -> None:
    check_conformance(make_env(task), steps=15)


def test_conformance_pixels() -> None:
    env = make_env("reach", obs_mode="pixels", image_size=64, cameras=("wrist",))
    check_conformance(env, steps=5)


@pytest.mark.parametrize("task", ALL_TASKS)
def test_gymnasium_make(task: str) -> None:
    env = gym.make(TASKS[task].gym_id, obs_mode="state")
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


@pytest.mark.parametrize("task", ALL_TASKS)
def test_deterministic_under_seed(task: str) -> None:
    def rollout() -> list[np.ndarray]:
        env = make_env(task)
        obs, _ = env.reset(seed=7)
        rng = np.random.default_rng(3)
        out = [obs["state"].copy()]
        for _ in range(10):
            obs, *_ = env.step(rng.uniform(-1, 1, ACTION_DIM).astype(np.float32))
            out.append(np.concatenate([obs["state"], obs.get("privileged", np.zeros(0, np.float32))]))
        return out

    for a, b in zip(rollout(), rollout()):
        np.testing.assert_array_equal(a, b)


def test_different_seeds_differ() -> None:
    env = make_env("reach")
    a, _ = env.reset(seed=0)
    b, _ = env.reset(seed=1)
    assert not np.allclose(a["privileged"], b["privileged"])


def test_workspace_clipping_keeps_tcp_inside_box() -> None:
    env = make_env("reach")
    env.reset(seed=0)
    high = np.asarray(env.cfg.safety.workspace_high_m)
    push_up = np.zeros(ACTION_DIM, np.float32)
    push_up[[0, 2]] = 1.0
    clipped_any = False
    for _ in range(40):
        obs, _, _, _, info = env.step(push_up)
        clipped_any |= info["safety_clipped"]
    tcp = obs["state"][STATE_LAYOUT.slice("tcp_pos")]
    assert clipped_any
    assert np.all(tcp <= high + 0.01), f"TCP {tcp} left the workspace box {high}"
    down = np.zeros(ACTION_DIM, np.float32)
    down[2] = -1.0
    for _ in range(40):
        obs, *_ = env.step(down)
    assert obs["state"][STATE_LAYOUT.slice("tcp_pos")][2] >= env.cfg.safety.workspace_low_m[2] - 0.01


def test_tilt_is_limited() -> None:
    env = make_env("reach")
    env.reset(seed=0)
    roll = np.zeros(ACTION_DIM, np.float32)
    roll[3] = 1.0
    for _ in range(30):
        env.step(roll)
    z_axis = env.scene.tcp_mat()[:, 2]
    tilt = np.arccos(np.clip(-z_axis[2], -1, 1))
    assert tilt <= env.cfg.safety.max_tilt_rad + 0.05


def test_gripper_latch() -> None:
    env = make_env("reach")
    env.reset(seed=0)
    act = np.zeros(ACTION_DIM, np.float32)
    act[6] = -1.0
    for _ in range(5):
        obs, *_ = env.step(act)
    closed = obs["state"][STATE_LAYOUT.slice("gripper_opening")][0]
    act[6] = 0.0  # between thresholds: keep the last command
    for _ in range(5):
        obs, *_ = env.step(act)
    assert closed < 0.1 and obs["state"][STATE_LAYOUT.slice("gripper_opening")][0] < 0.1
    act[6] = 1.0
    for _ in range(5):
        obs, *_ = env.step(act)
    assert obs["state"][STATE_LAYOUT.slice("gripper_opening")][0] > 0.9


def test_action_moves_tcp_by_max_step() -> None:
    env = make_env("reach")
    obs, _ = env.reset(seed=0)
    start = obs["state"][:3].copy()
    act = np.zeros(ACTION_DIM, np.float32)
    act[1] = 1.0
    for _ in range(5):
        obs, *_ = env.step(act)
    assert obs["state"][1] - start[1] == pytest.approx(5 * env.cfg.max_step_m, abs=0.02)  # tracking lag
    for _ in range(3):  # hold: the impedance controller settles onto the target
        obs, *_ = env.step(np.zeros(ACTION_DIM, np.float32))
    assert obs["state"][1] - start[1] == pytest.approx(5 * env.cfg.max_step_m, abs=0.005)


# --- domain randomisation: each hook changes what it claims to change ---------------------------------
def _env_with(**kwargs) -> object:
    cfg = dataclasses.replace(
        TASKS["reach"].config(), env=ArmEnvConfig(randomization=RandomizationConfig(**kwargs))
    )
    return make_env("reach", config=cfg)


def test_randomization_off_by_default() -> None:
    env = make_env("reach")
    friction = env.scene.model.geom_friction[:, 0].copy()
    env.reset(seed=0)
    np.testing.assert_array_equal(friction, env.scene.model.geom_friction[:, 0])


@pytest.mark.parametrize(
    ("kwargs", "read"),
    [
        ({"friction_scale": (0.5, 0.6)}, lambda m: m.geom_friction[:, 0]),
        ({"joint_damping_scale": (2.0, 3.0)}, lambda m: m.dof_damping),
        ({"actuator_gain_scale": (0.5, 0.6)}, lambda m: m.actuator_gainprm[:6, 0]),
        ({"camera_pos_jitter_m": 0.02}, lambda m: m.cam_pos[0]),
        ({"camera_rot_jitter_rad": 0.05}, lambda m: m.cam_quat[0]),
    ],
)
def test_randomization_hook_changes_model(kwargs, read) -> None:
    env = _env_with(**kwargs)
    nominal = read(env.scene.model).copy()
    env.reset(seed=0)
    first = read(env.scene.model).copy()
    env.reset(seed=1)
    second = read(env.scene.model).copy()
    assert not np.allclose(first, nominal) and not np.allclose(first, second)


def test_mass_randomization_changes_object_masses() -> None:
    cfg = (
        dataclasses.replace(
            TASKS["pick_cube"].config(),
            env=ArmEnvConfig(randomization=RandomizationConfig(mass_scale=(2.0, 3.0))),
        )
        if "pick_cube" in TASKS
        else None
    )
    if cfg is None:
        pytest.skip("pick_cube not registered")
    env = make_env("pick_cube", config=cfg)
    bodies = env.randomizer.object_bodies
    assert len(bodies) > 0
    nominal = env.scene.model.body_mass[bodies].copy()
    env.reset(seed=0)
    assert np.all(env.scene.model.body_mass[bodies] >= 2.0 * nominal - 1e-9)


def test_observation_noise() -> None:
    clean, noisy = make_env("reach"), _env_with(obs_noise_std=0.01)
    a, _ = clean.reset(seed=0)
    b, _ = noisy.reset(seed=0)
    diff = np.abs(a["state"] - b["state"])
    assert 0 < diff.mean() < 0.05


def test_action_latency_delays_motion() -> None:
    act = np.zeros(ACTION_DIM, np.float32)
    act[1] = 1.0
    moved = {}
    for latency in (0, 2):
        env = _env_with(action_latency_steps=latency)
        obs, _ = env.reset(seed=0)
        y0 = obs["state"][1]
        obs, *_ = env.step(act)
        moved[latency] = obs["state"][1] - y0
    assert moved[0] > 0.01 and abs(moved[2]) < 0.003


def first_move(env, seed: int) -> int:
    """The control step at which a constant +y action first moves the arm: the action's delay."""
    act = np.zeros(ACTION_DIM, np.float32)
    act[1] = 1.0
    obs, _ = env.reset(seed=seed)
    y0 = obs["state"][1]
    for step in range(6):
        obs, *_ = env.step(act)
        if obs["state"][1] - y0 > 0.005:
            return step
    raise AssertionError("the arm never moved")


def test_a_latency_range_draws_each_episodes_delay_within_it() -> None:
    env = _env_with(action_latency_steps=(0, 2))
    delays = [first_move(env, seed) for seed in range(12)]
    assert set(delays) == {0, 1, 2}, delays
    assert delays == [first_move(env, seed) for seed in range(12)]  # the seed decides
    assert {first_move(_env_with(action_latency_steps=(1, 1)), s) for s in range(3)} == {1}
    with pytest.raises(ValueError, match=r"action_latency_steps must be whole steps in \[0, 10\].*\(2, 1\)"):
        RandomizationConfig(action_latency_steps=(2, 1))


# --- errors name the bad field -------------------------------------------------------------------------
def test_unknown_task_is_named() -> None:
    with pytest.raises(ValueError, match=r"'pick_cubez'.*registered tasks"):
        make_env("pick_cubez")


def test_unknown_override_is_named() -> None:
    with pytest.raises(ValueError, match="imag_size"):
        make_env("reach", imag_size=64)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"image_size": 10}, "image_size"),
        ({"obs_mode": "depth"}, "obs_mode"),
        ({"cameras": ("side",)}, "cameras"),
        ({"safety": {"control_hz": 0.0}}, "control_hz"),
        ({"safety": {"control_hz": 7.0}}, "control_hz"),
        ({"safety": {"max_step_m": -0.1}}, "max_step_m"),
        ({"safety": {"max_step_m": 0.2, "max_translation_step_m": 0.5}}, "max_step_m"),
        ({"safety": {"workspace_low_m": (1.0, 0.0, 0.0)}}, "workspace_low"),
    ],
)
def test_bad_env_config_names_field(kwargs, field) -> None:
    with pytest.raises(ValueError, match=field):
        if "safety" in kwargs:  # the limits check themselves; the sim adds its own ranges
            kwargs = {"safety": dataclasses.replace(SIM_ARM_SAFETY, **kwargs["safety"])}
        ArmEnvConfig(**kwargs)


def test_bad_randomization_names_field() -> None:
    with pytest.raises(ValueError, match="friction_scale"):
        RandomizationConfig(friction_scale=(2.0, 1.0))


def test_bad_reward_weight_names_term() -> None:
    cfg = dataclasses.replace(TASKS["reach"].config(), reward_weights={"nope": 1.0})
    with pytest.raises(ValueError, match="nope"):
        make_env("reach", config=cfg)


def test_nan_action_is_refused() -> None:
    env = make_env("reach")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="NaN"):
        env.step(np.full(ACTION_DIM, np.nan, np.float32))


def test_expert_noise_validation() -> None:
    env = make_env("reach")
    with pytest.raises(ValueError, match="noise_std"):
        make_expert(env, noise_std=-1.0)
