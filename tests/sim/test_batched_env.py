"""The batched env against the CPU env and gymnasium's own vector env: same numbers, same API, its errors."""

from __future__ import annotations

import dataclasses
import re

import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from robot_rl.envs.action_history import ActionHistoryObservation
from robot_rl.envs.conformance import check_conformance
from robot_rl.envs.contract import ACTION_DIM
from robot_rl.sim import TASKS, make_env
from robot_rl.sim.batched import BatchedEnvConfig, SingleWorldEnv, WarpConfig, make_batched_env
from robot_rl.sim.config import RANDOMIZATION_PRESETS, RandomizationConfig
from robot_rl.training.env_factory import EnvConfig, make_env_from_config, randomization_config

SHORT = {"max_episode_steps": 8}  # episodes end inside the tested horizon, so auto-reset is covered


def actions(steps: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-1.2, 1.2, (steps, n, ACTION_DIM)).astype(np.float32)


def numpy_tree(value):
    if isinstance(value, dict):
        return {k: numpy_tree(v) for k, v in value.items()}
    return value.numpy() if isinstance(value, torch.Tensor) else value


def assert_same_obs(ours: dict, theirs: dict, rows=slice(None), atol: float = 1e-7) -> None:
    """Same keys, same values: the batched maths runs in float64 like the CPU env's, in another order."""
    assert set(ours) == set(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key].numpy()[rows], theirs[key][rows], rtol=0, atol=atol, err_msg=key)


@pytest.mark.parametrize("task", sorted(TASKS))
def test_every_task_steps_exactly_like_gymnasiums_vector_env_of_cpu_envs(task: str) -> None:
    """The same obs (to float32 rounding), rewards, flags, infos and final observations over 20 steps with
    same-step resets: the threads backend's worlds are CPU envs' MuJoCo data, stepped under the batched gate."""
    n, steps = 3, 20
    ours = make_batched_env(task, BatchedEnvConfig(num_envs=n, num_threads=2), **SHORT)
    peer = SyncVectorEnv([lambda: make_env(task, **SHORT)] * n, autoreset_mode=AutoresetMode.SAME_STEP)
    assert ours.single_observation_space == peer.single_observation_space
    assert ours.single_action_space == peer.single_action_space
    assert ours.observation_space == peer.observation_space and ours.action_space == peer.action_space
    assert ours.metadata["autoreset_mode"] == peer.metadata["autoreset_mode"]

    obs, infos = ours.reset(seed=7)
    peer_obs, peer_infos = peer.reset(seed=7)
    assert_same_obs(obs, peer_obs)
    np.testing.assert_array_equal(infos["is_success"].numpy(), peer_infos["is_success"])
    resets = 0
    for t, a in enumerate(actions(steps, n)):
        obs, rewards, terminated, truncated, infos = ours.step(torch.from_numpy(a))
        peer_obs, peer_rewards, peer_terminated, peer_truncated, peer_infos = peer.step(a)
        assert_same_obs(obs, peer_obs)
        np.testing.assert_allclose(rewards.numpy(), peer_rewards.astype(np.float32), atol=1e-6, err_msg=f"step {t}")
        np.testing.assert_array_equal(terminated.numpy(), peer_terminated)
        np.testing.assert_array_equal(truncated.numpy(), peer_truncated)
        for key in ("is_success", "safety_clipped", "intervention"):
            np.testing.assert_array_equal(infos[key].numpy(), peer_infos[key], err_msg=f"step {t} {key}")
        ended = peer_terminated | peer_truncated
        assert ("final_obs" in infos) == bool(ended.any())
        if ended.any():
            resets += 1
            np.testing.assert_array_equal(infos["_final_obs"].numpy(), ended)
            for i in np.flatnonzero(ended):
                assert_same_obs(
                    {k: v[i : i + 1] for k, v in infos["final_obs"].items()},
                    {k: v[None] for k, v in peer_infos["final_obs"][i].items()},
                )
                final_info = numpy_tree(infos["final_info"])
                assert final_info["is_success"][i] == peer_infos["final_info"]["is_success"][i]
                for name, value in peer_infos["final_info"]["reward_terms"].items():
                    assert final_info["reward_terms"][name][i] == pytest.approx(value[i], abs=1e-6)
            # Where no world ended the final observation is the returned one: the true next obs of every row.
            assert_same_obs(
                {k: v[~ended] for k, v in infos["final_obs"].items()}, {k: v[~ended] for k, v in peer_obs.items()}
            )
    assert resets >= 2
    ours.close()
    peer.close()


def test_the_action_history_is_the_single_env_wrappers_through_same_step_resets() -> None:
    n, k = 3, 2
    ours = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=n, num_threads=2, action_history=k), **SHORT)
    peer = SyncVectorEnv([lambda: ActionHistoryObservation(make_env("pick_cube", **SHORT), k)] * n,
                         autoreset_mode=AutoresetMode.SAME_STEP)
    assert ours.single_observation_space == peer.single_observation_space
    obs, _ = ours.reset(seed=7)
    peer_obs, _ = peer.reset(seed=7)
    assert_same_obs(obs, peer_obs)
    for a in actions(20, n):  # beyond the box: both hold the clipped action
        obs, _, terminated, truncated, infos = ours.step(torch.from_numpy(a))
        peer_obs, *_, peer_infos = peer.step(a)
        assert_same_obs(obs, peer_obs)
        for i in np.flatnonzero(terminated.numpy() | truncated.numpy()):
            np.testing.assert_array_equal(infos["final_obs"]["previous_actions"][i].numpy(),
                                          peer_infos["final_obs"][i]["previous_actions"])
            assert not obs["previous_actions"][i].any()
    ours.close()
    peer.close()


def test_results_do_not_depend_on_the_number_of_threads() -> None:
    runs = []
    for threads in (1, 2, 4):
        env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=5, num_threads=threads), **SHORT)
        assert env.physics.num_threads == threads
        obs, _ = env.reset(seed=0)
        trace = [obs["state"].clone()]
        for a in actions(12, 5, seed=1):
            obs, rewards, *_ = env.step(a)
            trace += [obs["state"].clone(), rewards.clone()]
        runs.append(trace)
        env.close()
    for other in runs[1:]:
        assert all(torch.equal(x, y) for x, y in zip(runs[0], other, strict=True))


def test_resetting_a_subset_leaves_the_other_worlds_bit_identical() -> None:
    n = 4
    env = make_batched_env("push", BatchedEnvConfig(num_envs=n, num_threads=2, autoreset=False))
    reference = make_batched_env("push", BatchedEnvConfig(num_envs=n, num_threads=2, autoreset=False))
    env.reset(seed=3)
    reference.reset(seed=3)
    plan = actions(10, n, seed=2)
    for a in plan[:5]:
        before, *_ = env.step(a)
        reference.step(a)
    mask = np.array([True, False, True, False])
    obs, _ = env.reset(options={"reset_mask": mask})
    assert_same_obs({k: v[~mask] for k, v in obs.items()}, {k: v.numpy()[~mask] for k, v in before.items()})
    assert not torch.equal(obs["state"][mask], before["state"][mask])
    for a in plan[5:]:
        obs, *_ = env.step(a)
        ref_obs, *_ = reference.step(a)
        assert torch.equal(obs["state"][~mask], ref_obs["state"][~mask])
        assert torch.equal(obs["privileged"][~mask], ref_obs["privileged"][~mask])
    # A torch bool mask is taken too; a mask that selects nothing or has the wrong shape is refused.
    env.reset(options={"reset_mask": torch.tensor([False, True, False, False])})
    with pytest.raises(ValueError, match="selects no world"):
        env.reset(options={"reset_mask": np.zeros(n, bool)})
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        env.reset(options={"reset_mask": np.ones(3, bool)})
    env.close()
    reference.close()


def test_without_autoreset_an_ended_world_must_be_reset_before_stepping_on() -> None:
    env = make_batched_env("reach", BatchedEnvConfig(num_envs=2, num_threads=1, autoreset=False), max_episode_steps=2)
    env.reset(seed=0)
    env.step(env.actions)
    _, _, _, truncated, infos = env.step(env.actions)
    assert truncated.all() and "final_obs" not in infos
    with pytest.raises(RuntimeError, match=r"world\(s\) \[0, 1\] ended"):
        env.step(env.actions)
    env.reset(options={"reset_mask": np.array([True, True])})
    env.step(env.actions)
    env.close()


def test_randomisation_is_drawn_per_world_inside_its_range() -> None:
    randomization = RandomizationConfig(
        friction_scale=(0.5, 1.5), mass_scale=(0.8, 1.2), joint_damping_scale=(0.9, 1.1), actuator_gain_scale=(0.7, 1.3)
    )
    n = 6
    env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=n), randomization=randomization)
    env.reset(seed=11)
    check_drawn_scales(env, randomization)
    env.close()


def check_drawn_scales(env, randomization: RandomizationConfig) -> None:
    """Every world's friction, object mass, damping and gain scales lie inside ``randomization``'s ranges, and
    the worlds drew different ones."""
    scales = {name: [] for name in ("friction_scale", "mass_scale", "joint_damping_scale", "actuator_gain_scale")}
    for world in env.physics.worlds:
        model, dr = world.scene.model, world.randomizer
        scales["friction_scale"].append(model.geom_friction[:, 0] / dr.nominal_friction)
        objects = dr.object_bodies
        scales["mass_scale"].append(model.body_mass[objects] / dr.nominal_mass[objects])
        moving = dr.nominal_damping > 0
        scales["joint_damping_scale"].append(model.dof_damping[moving] / dr.nominal_damping[moving])
        ids = dr.impedance_actuators
        scales["actuator_gain_scale"].append(model.actuator_gainprm[ids, 0] / dr.nominal_gain[ids])
    for name, values in scales.items():
        low, high = getattr(randomization, name)
        values = np.array(values)
        assert np.all(values >= low - 1e-9) and np.all(values <= high + 1e-9), name
        assert len(np.unique(values[:, 0].round(12))) == len(values), f"{name}: worlds drew the same scale"


def test_the_robust_preset_draws_inside_its_declared_ranges() -> None:
    robust = RANDOMIZATION_PRESETS["robust"]
    env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=8), randomization=robust)
    env.reset(seed=3)
    check_drawn_scales(env, robust)
    assert set(env.delay.tolist()) == set(range(robust.latency_range[0], robust.latency_range[1] + 1))
    env.close()


def test_a_randomization_spec_overrides_a_presets_ranges_in_both_envs_and_names_what_is_wrong() -> None:
    spec = '{"preset": "robust", "joint_damping_scale": [1, 8]}'
    wide = randomization_config(spec)
    assert wide == dataclasses.replace(RANDOMIZATION_PRESETS["robust"], joint_damping_scale=(1, 8))
    single = make_env_from_config(EnvConfig(task="reach", randomization=spec))
    assert single.unwrapped.cfg.randomization == wide
    single.close()
    env = make_batched_env("pick_cube", BatchedEnvConfig(num_envs=8), randomization=wide)
    env.reset(seed=3)
    check_drawn_scales(env, wide)
    env.close()
    for bad, named in [('{"damping": [1, 8]}', "unknown fields ['damping']"), ('{"mass_scale": 2}', "mass_scale"),
                       ('{"preset": "rugged"}', "'rugged'"), ("rugged", "neither a preset"), ("{1", "not valid JSON")]:
        with pytest.raises(ValueError, match=re.escape(named)):
            randomization_config(bad)


def test_a_latency_range_delays_each_worlds_actions_by_its_own_draw() -> None:
    """Every world executes the action of ``delay`` steps ago (zeros before its episode began); a fixed delay
    is the range's special case, as the CPU env has it."""
    n = 8
    env = make_batched_env("reach", BatchedEnvConfig(num_envs=n), randomization=RandomizationConfig(
        action_latency_steps=(0, 3)))
    env.reset(seed=2)
    delays = env.delay.clone()
    assert delays.min() >= 0 and delays.max() <= 3 and len(delays.unique()) > 1
    plan = actions(5, n, seed=9)
    targets = []
    for a in plan:
        before = env.target_pos.clone()
        env.step(a)
        targets.append(env.target_pos - before)
    moved = torch.stack([(t.abs().sum(dim=1) > 0) for t in targets])  # [steps, worlds]
    for w in range(n):
        first = int(moved[:, w].int().argmax())
        assert first == int(delays[w]), (w, first, int(delays[w]))
    for fixed in (0, 2):
        single = make_env("reach", randomization=RandomizationConfig(action_latency_steps=fixed))
        batched = make_batched_env("reach", BatchedEnvConfig(num_envs=1), randomization=RandomizationConfig(
            action_latency_steps=(fixed, fixed)))
        single.reset(seed=4)
        batched.reset(seed=4)
        for a in plan[:, :1]:
            obs, *_ = single.step(a[0])
            b_obs, *_ = batched.step(a)
            np.testing.assert_allclose(b_obs["state"][0].numpy(), obs["state"], atol=1e-5)
    env.close()


def check_in_place_actions(env, peer, plan: np.ndarray) -> None:
    """Actions written into ``env.actions`` by torch are what ``env`` executes; ``peer`` gets copies."""
    env.reset(seed=5)
    peer.reset(seed=5)
    pointer = env.actions.data_ptr()
    for a in plan:
        env.actions.copy_(torch.from_numpy(a))  # e.g. a policy writing its output in place
        obs, *_ = env.step(env.actions)
        peer_obs, *_ = peer.step(a.copy())
        assert torch.equal(obs["state"], peer_obs["state"])
        assert env.actions.data_ptr() == pointer
    env.close()
    peer.close()


def test_a_torch_write_to_the_action_tensor_is_what_the_next_step_executes() -> None:
    config = BatchedEnvConfig(num_envs=3, num_threads=2)
    check_in_place_actions(make_batched_env("reach", config), make_batched_env("reach", config), actions(6, 3, seed=4))


def test_returned_tensors_are_never_written_into_again() -> None:
    env = make_batched_env("reach", BatchedEnvConfig(num_envs=2), max_episode_steps=3)
    first, _ = env.reset(seed=0)
    kept = {k: v.clone() for k, v in first.items()}
    for _ in range(4):  # through an auto-reset
        env.step(env.actions)
    env.reset(options={"reset_mask": np.array([True, False])})
    assert all(torch.equal(first[k], kept[k]) for k in kept)
    env.close()


@pytest.mark.parametrize("task", sorted(TASKS))
def test_one_world_of_the_batched_env_passes_the_conformance_check(task: str) -> None:
    world = SingleWorldEnv(make_batched_env(task, BatchedEnvConfig(num_envs=1, autoreset=False)))
    check_conformance(world, steps=12)
    world.close()


def test_bad_actions_are_refused_naming_the_world_before_any_world_moves() -> None:
    env = make_batched_env("reach", BatchedEnvConfig(num_envs=3))
    env.reset(seed=0)
    bad = np.zeros((3, ACTION_DIM), np.float32)
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"world\(s\) \[2\].*NaN"):
        env.step(bad)
    with pytest.raises(ValueError, match=r"expected shape \(3, 7\), got \(2, 7\)"):
        env.step(np.zeros((2, ACTION_DIM), np.float32))
    with pytest.raises(ValueError, match="2 seeds given for 3 worlds"):
        env.reset(seed=[1, 2])
    assert not env.steps.any()
    env.close()


@pytest.mark.parametrize("num_envs", [0, -4, 2.5, True, "8"])
def test_a_bad_number_of_worlds_is_refused_naming_it(num_envs) -> None:
    with pytest.raises(ValueError, match=f"num_envs must be a positive integer, got {num_envs!r}"):
        BatchedEnvConfig(num_envs=num_envs)


def test_an_unknown_backend_is_refused_naming_it_and_the_available_ones() -> None:
    with pytest.raises(ValueError, match=r"backend 'gpu' is unknown; available backends: \['mujoco-threads', 'warp'\]"):
        BatchedEnvConfig(backend="gpu")
    with pytest.raises(ValueError, match="num_threads must be a positive integer or None, got 0"):
        BatchedEnvConfig(num_threads=0)
    with pytest.raises(ValueError, match=r"WarpConfig\.start_pool must be a positive integer, got 0"):
        WarpConfig(start_pool=0)
    with pytest.raises(ValueError, match=r"WarpConfig\.device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got 'gpu0'"):
        WarpConfig(device="gpu0")


def test_pixel_observations_are_refused_with_the_way_out() -> None:
    with pytest.raises(ValueError, match=r"do not render cameras.*make_env"):
        make_batched_env("reach", BatchedEnvConfig(num_envs=1), obs_mode="pixels", image_size=64)


def test_gymnasiums_single_env_checker_accepts_one_world() -> None:
    from gymnasium.utils.env_checker import check_env

    world = SingleWorldEnv(make_batched_env("reach", BatchedEnvConfig(num_envs=1, autoreset=False)))
    check_env(world, skip_render_check=True)
    assert isinstance(world.batched, gym.vector.VectorEnv)
    world.close()
