"""Every task's batched terms equal its CPU terms on the same states, and the scene's sensors read what the CPU
env reads from MuJoCo's data."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from robot_rl.envs.geometry import matrix_to_rot6d
from robot_rl.sim import TASKS, make_env, make_expert
from robot_rl.sim.readings import SensorLayout, WorldReadings


def visited_states(task: str, steps: int = 60):
    """Readings of the CPU env along an expert (noisy) run with resets, and the CPU terms at each state."""
    env = make_env(task, max_episode_steps=30)
    layout = SensorLayout(env.scene.model)
    expert = make_expert(env, noise_std=0.3, seed=1)
    env.reset(seed=3)
    expert.reset()
    rows, expected = [], []
    for _ in range(steps):
        _, _, terminated, truncated, _ = env.step(expert.act(env.scene))
        scene = env.scene
        d = scene.data
        rows.append((d.sensordata.copy(), d.qpos.copy(), d.mocap_pos.copy()))
        lin, ang = scene.tcp_velocity()
        expected.append({
            "privileged": env.task.privileged(scene), "terms": env.task.reward_terms(scene),
            "success": env.task.is_success(scene), "tcp_pos": scene.tcp_pos(), "tcp_mat": scene.tcp_mat(),
            "linvel": lin, "angvel": ang, "opening": scene.gripper_opening(), "wrench": scene._raw_wrench(),
        })
        if terminated or truncated:
            env.reset()
            expert.reset()
    sens, qpos, mocap = (torch.tensor(np.stack(x)) for x in zip(*rows))
    return env, WorldReadings(layout, sens, qpos, mocap), expected


@pytest.mark.parametrize("task", sorted(TASKS))
def test_batched_terms_equal_the_cpu_terms_on_the_same_states(task: str) -> None:
    env, worlds, expected = visited_states(task)
    privileged = env.task.batched_privileged(worlds).numpy()
    terms = {k: v.numpy() for k, v in env.task.batched_reward_terms(worlds).items()}
    success = env.task.batched_success(worlds).numpy()
    np.testing.assert_allclose(privileged, np.stack([e["privileged"] for e in expected]), atol=1e-12)
    for name in env.task.reward_term_names():
        np.testing.assert_allclose(terms[name], [e["terms"][name] for e in expected], atol=1e-12, err_msg=name)
    np.testing.assert_array_equal(success, [e["success"] for e in expected])
    assert 0 < success.sum() < len(success)  # the expert's run visits both outcomes
    env.close()


def test_the_sensors_read_what_the_cpu_env_reads() -> None:
    env, worlds, expected = visited_states("pick_cube", steps=40)
    np.testing.assert_array_equal(worlds.tcp_pos.numpy(), np.stack([e["tcp_pos"] for e in expected]))
    np.testing.assert_array_equal(worlds.tcp_mat.numpy(), np.stack([e["tcp_mat"] for e in expected]))
    np.testing.assert_allclose(worlds.sensor("tcp_linvel").numpy(), np.stack([e["linvel"] for e in expected]),
                               atol=1e-14)
    np.testing.assert_allclose(worlds.sensor("tcp_angvel").numpy(), np.stack([e["angvel"] for e in expected]),
                               atol=1e-14)
    np.testing.assert_allclose(worlds.gripper_opening.numpy(), [e["opening"] for e in expected], atol=1e-15)
    np.testing.assert_allclose(worlds.raw_wrench().numpy(), np.stack([e["wrench"] for e in expected]), atol=1e-9)
    rot6d = np.stack([matrix_to_rot6d(e["tcp_mat"]) for e in expected])
    np.testing.assert_array_equal(torch.cat([worlds.sensor("tcp_xaxis"), worlds.sensor("tcp_yaxis")], -1).numpy(),
                                  rot6d)
    with pytest.raises(KeyError, match="the scene has no sensor 'nope'"):
        worlds.sensor("nope")
    env.close()
