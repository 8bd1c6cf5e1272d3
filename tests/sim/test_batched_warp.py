"""The MuJoCo Warp backend (on Warp's CPU device here): the same trajectories as the CPU env from the same
state, per-world resets and randomisation, the action tensor, and its errors. Warp compiles its kernels once
(about a minute on two cores) and caches them on disk; the tests share one xdist worker for that reason."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
import torch
from test_batched_env import check_in_place_actions

from robot_rl.envs.conformance import check_conformance
from robot_rl.sim import TASKS, make_env, make_expert
from robot_rl.sim.batched import BatchedEnvConfig, SingleWorldEnv, WarpConfig, make_batched_env
from robot_rl.sim.config import RandomizationConfig

pytest.importorskip("mujoco_warp")
pytestmark = pytest.mark.xdist_group("warp")


def warp_env(task: str, n: int, pool: int = 8, **overrides):
    return make_batched_env(task, BatchedEnvConfig(num_envs=n, backend="warp", seed=0,
                                                   warp=WarpConfig(device="cpu", start_pool=pool)), **overrides)


HORIZON = {"reach": 10, "pick_cube": 25, "peg_insert": 25, "push": 15}
"""Control steps compared per task, from the CPU env's reset, under the scripted expert (reach succeeds in
about 7, pick_cube lifts at about 23). Push stops before the pusher meets the block: there MuJoCo Warp's
box-box collision returns fewer contact points than MuJoCo C's and the block turns differently (see
docs/benchmarks.md)."""
STATE_ATOL, PRIVILEGED_ATOL = 1e-2, 2e-4
"""Float32 physics against float64: positions agree to ~3e-6 m, the wrench (N, in stiff contact) to ~5e-3
(measured: docs/benchmarks.md)."""


@pytest.mark.parametrize("task", sorted(TASKS))
def test_trajectories_agree_with_the_cpu_env_from_the_same_state(task: str) -> None:
    cpu = [make_env(task, max_episode_steps=100) for _ in range(2)]
    for i, env in enumerate(cpu):
        env.reset(seed=20 + i)
    batched = warp_env(task, 2, max_episode_steps=100)
    batched.reset(seed=0)
    obs = batched.start_from([0, 1], cpu)
    first = [env._observation() for env in cpu]
    np.testing.assert_allclose(obs["state"].numpy(), np.stack([o["state"] for o in first]), atol=1e-6)
    experts = [make_expert(env) for env in cpu]
    for t in range(HORIZON[task]):
        actions = np.stack([x.act(env.scene) for x, env in zip(experts, cpu)])
        want = [env.step(a) for env, a in zip(cpu, actions)]
        obs, rewards, terminated, _, infos = batched.step(torch.from_numpy(actions))
        obs, infos = infos.get("final_obs", obs), infos.get("final_info", infos)
        for key, atol in (("state", STATE_ATOL), ("privileged", PRIVILEGED_ATOL)):
            np.testing.assert_allclose(obs[key].numpy(), np.stack([w[0][key] for w in want]), atol=atol,
                                       err_msg=f"{task} step {t} {key}")
        np.testing.assert_array_equal(infos["is_success"].numpy(), [w[4]["is_success"] for w in want])
        np.testing.assert_allclose(rewards.numpy(), [w[1] for w in want], atol=1e-4)
        if any(w[2] or w[3] for w in want):
            assert terminated.numpy().tolist() == [w[2] for w in want]
            break
    batched.close()


def test_resetting_a_subset_leaves_the_other_worlds_bit_identical() -> None:
    env, reference = warp_env("pick_cube", 3), warp_env("pick_cube", 3)
    env.reset(seed=3)
    reference.reset(seed=3)
    plan = np.random.default_rng(2).uniform(-1, 1, (8, 3, 7)).astype(np.float32)
    for a in plan[:4]:
        before, *_ = env.step(a)
        reference.step(a)
    mask = np.array([False, True, False])
    obs, _ = env.reset(options={"reset_mask": mask})
    assert torch.equal(obs["state"][~mask], before["state"][~mask])
    for a in plan[4:]:
        obs, *_ = env.step(a)
        ref_obs, *_ = reference.step(a)
        assert torch.equal(obs["state"][~mask], ref_obs["state"][~mask])
        assert torch.equal(obs["privileged"][~mask], ref_obs["privileged"][~mask])
    env.close()
    reference.close()


def test_randomisation_is_drawn_per_world_inside_its_range() -> None:
    randomization = RandomizationConfig(friction_scale=(0.5, 1.5), mass_scale=(0.8, 1.2),
                                        joint_damping_scale=(0.9, 1.1), actuator_gain_scale=(0.7, 1.3))
    n = 6
    env = warp_env("pick_cube", n, pool=32, randomization=randomization)
    env.reset(seed=11)
    nominal = make_env("pick_cube").scene.model
    fields = env.physics.model_fields
    cube = nominal.body("cube").id
    scales = {
        "friction": fields["geom_friction"][:, :, 0].numpy() / nominal.geom_friction[:, 0],
        "mass": fields["body_mass"][:, cube].numpy() / nominal.body_mass[cube],
        "damping": fields["dof_damping"][:, 0].numpy() / nominal.dof_damping[0],
        "gain": fields["actuator_gainprm"][:, 0, 0].numpy() / nominal.actuator_gainprm[0, 0],
    }
    for name, (low, high) in zip(scales, ((0.5, 1.5), (0.8, 1.2), (0.9, 1.1), (0.7, 1.3)), strict=True):
        values = np.asarray(scales[name]).reshape(n, -1)[:, 0]
        assert np.all(values >= low - 1e-5) and np.all(values <= high + 1e-5), name
        assert len(np.unique(values.round(6))) == n, f"{name}: worlds drew the same scale"
    env.close()


def test_a_torch_write_to_the_action_tensor_is_what_the_next_step_executes() -> None:
    plan = np.random.default_rng(4).uniform(-1, 1, (4, 2, 7)).astype(np.float32)
    check_in_place_actions(warp_env("reach", 2), warp_env("reach", 2), plan)


def test_one_world_passes_the_conformance_check() -> None:
    world = SingleWorldEnv(make_batched_env("reach", BatchedEnvConfig(
        num_envs=1, backend="warp", autoreset=False, warp=WarpConfig(device="cpu", start_pool=4))))
    check_conformance(world, steps=6)
    world.close()


def test_missing_warp_is_refused_with_the_install_command(monkeypatch) -> None:
    real_import = builtins.__import__

    def no_warp(name, *args, **kwargs):
        if name in ("mujoco_warp", "warp"):
            raise ImportError(f"No module named '{name}'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_warp)
    with pytest.raises(ImportError, match=r"needs MuJoCo Warp .*pip install 'robot_rl\[warp\]'"):
        make_batched_env("reach", BatchedEnvConfig(num_envs=2, backend="warp"))


def test_a_mismatched_mujoco_warp_is_refused_naming_both_versions(monkeypatch) -> None:
    import mujoco_warp

    monkeypatch.setattr(mujoco_warp, "__version__", "0.0.1")
    with pytest.raises(ImportError, match=r"found mujoco-warp 0\.0\.1 with mujoco 4\."):
        make_batched_env("reach", BatchedEnvConfig(num_envs=2, backend="warp"))
