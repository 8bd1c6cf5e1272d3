"""Behaviour cloning with action chunks: the execution maths on hand-checked cases, chunk targets masked at
episode ends, and a BC run that learns from a few demos and loads, unchanged, as a base policy."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.agents.config import SACConfig
from robot_rl.cli import main
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import BASE_ACTION
from robot_rl.training.base_policy import base_of
from robot_rl.training.bc import (
    BCConfig,
    ChunkedPolicy,
    ChunkNetwork,
    chunk_targets,
    load_bc_policy,
    temporal_ensemble,
    train_bc,
)
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.record import record_scripted_demos


def scripted_chunks(policy: ChunkedPolicy) -> list[int]:
    """Replace the network by one whose t-th prediction is [[10^t], [2 * 10^t], [3 * 10^t]] (k = 3, A = 1)."""
    calls: list[int] = []

    def predict(obs):
        t = len(calls)
        calls.append(t)
        return np.array([[1.0], [2.0], [3.0]]) * 10**t

    policy.predict = predict  # type: ignore[method-assign]
    return calls


def stub_network() -> ChunkNetwork:
    """A real network of chunk 3 on a 1-D state (its predictions are replaced by ``scripted_chunks``)."""
    box = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    return ChunkNetwork(gym.spaces.Dict({"state": box}), box, 3, (8,), SACConfig())


def test_temporal_ensemble_weights_the_oldest_prediction_of_a_step_most():
    chunks = [np.array([[1.0], [2.0], [3.0]]), np.array([[10.0], [20.0], [30.0]]),
              np.array([[100.0], [200.0], [300.0]])]
    # the step after the third prediction reads row 2 of the first, row 1 of the second, row 0 of the third
    assert temporal_ensemble(chunks, 0.0)[0] == pytest.approx((3 + 20 + 100) / 3)
    assert temporal_ensemble(chunks, math.log(2))[0] == pytest.approx((3 + 10 + 25) / 1.75)
    assert temporal_ensemble(chunks[:1], 5.0)[0] == pytest.approx(1.0)


def test_open_loop_executes_each_chunk_whole_and_reset_drops_the_rest():
    policy = ChunkedPolicy(stub_network(), "open_loop", 0.0)
    calls = scripted_chunks(policy)
    assert [policy({})[0] for _ in range(5)] == [1, 2, 3, 10, 20]
    assert calls == [0, 1]
    policy.reset()  # a new episode: the half-used chunk is dropped
    assert policy({})[0] == 100 and calls == [0, 1, 2]


def test_ensemble_execution_predicts_every_step_and_keeps_the_last_k_chunks():
    policy = ChunkedPolicy(stub_network(), "ensemble", math.log(2))
    scripted_chunks(policy)
    got = [policy({})[0] for _ in range(4)]
    assert got[0] == pytest.approx(1.0)
    assert got[1] == pytest.approx((2 + 0.5 * 10) / 1.5)
    assert got[2] == pytest.approx((3 + 0.5 * 20 + 0.25 * 100) / 1.75)
    assert got[3] == pytest.approx((30 + 0.5 * 200 + 0.25 * 1000) / 1.75)  # the first chunk has run out


def test_chunk_targets_mask_steps_past_the_episode_end():
    obs = {"state": np.arange(4, dtype=np.float32)[:, None], BASE_ACTION: np.zeros((4, 1), np.float32)}
    ep = Episode(observations=obs, actions=np.array([[1.0], [2.0], [3.0]], np.float32),
                 rewards=np.zeros(3, np.float32), terminated=True, truncated=False, infos={})
    x, target, mask = chunk_targets([ep], 2)
    assert set(x) == {"state"} and x["state"][:, 0].tolist() == [0, 1, 2]  # the final frame has no action
    assert target[:, :, 0].tolist() == [[1, 2], [2, 3], [3, 3]]
    assert mask.tolist() == [[True, True], [True, True], [True, False]]


def test_bc_learns_reach_from_a_few_demos_and_its_run_is_a_base_policy(tmp_path: Path, capsys):
    env = make_env_from_config(EnvConfig(task="reach"))
    record_scripted_demos(env, "reach", 15, tmp_path / "demos", noise_std=0.1, seed=0)
    config = BCConfig(demos=tmp_path / "demos", env=EnvConfig(task="reach"), chunk=2, steps=1000,
                      hidden_dims=(64, 64), eval_episodes=10, torch_threads=1, run_dir=tmp_path / "bc")
    untrained = train_bc(dataclasses.replace(config, steps=1, run_dir=tmp_path / "untrained"), say=lambda _: None)[1]
    run, result = train_bc(config, say=lambda _: None)
    assert untrained is not None and untrained.success_rate == 0.0
    assert result is not None and result.success_rate is not None and result.success_rate >= 0.4  # 60% measured
    policy = load_bc_policy(run.path)
    based = make_env_from_config(EnvConfig(task="reach", base_policy=str(run.path)))
    wrapper = base_of(based)
    assert wrapper is not None
    obs, _ = based.reset(seed=3)
    plain = {k: v for k, v in obs.items() if k != BASE_ACTION}
    np.testing.assert_array_equal(obs[BASE_ACTION], np.clip(policy(plain), -1, 1))  # same execution state

    capsys.readouterr()
    assert main(["eval", str(run.path), "--episodes", "10"]) == 0  # the same held-out episodes, the same success
    assert f"reach (state): {result.summary()}" in capsys.readouterr().out


def test_bc_refuses_demos_of_another_task_before_claiming_a_run_folder(tmp_path: Path):
    env = make_env_from_config(EnvConfig(task="reach"))
    record_scripted_demos(env, "reach", 1, tmp_path / "demos", seed=0)
    config = BCConfig(demos=tmp_path / "demos", env=EnvConfig(task="pick_cube"), steps=1, eval_episodes=0,
                      run_dir=tmp_path / "bc")
    with pytest.raises(ValueError, match="recorded for task 'reach', this run is 'pick_cube'"):
        train_bc(config, say=lambda _: None)
    assert not (tmp_path / "bc").exists()


def test_bc_from_pixel_demos_trains_on_shifted_images_and_its_run_is_a_pixel_base(tmp_path: Path):
    pixels = EnvConfig(task="reach", obs="pixels", image_size=64)
    env = make_env_from_config(pixels)
    record_scripted_demos(env, "reach", 3, tmp_path / "demos", seed=0)
    encoder = SACConfig(cnn_channels=(8, 8), cnn_strides=(2, 2), image_latent_dim=16, proprio_latent_dim=8)
    said: list[str] = []
    config = BCConfig(demos=tmp_path / "demos", env=pixels, chunk=2, steps=200, batch_size=64, hidden_dims=(32,),
                      encoder=encoder, eval_episodes=0, torch_threads=1, run_dir=tmp_path / "bc")
    run, _ = train_bc(config, say=said.append)
    losses = [float(line.rsplit("loss ", 1)[1]) for line in said if "loss" in line]
    assert losses[-1] < 0.5 * losses[0]
    policy = load_bc_policy(run.path)
    assert sorted(policy.network.encoder.image_keys) == ["images/front", "images/wrist"]
    based = make_env_from_config(dataclasses.replace(pixels, base_policy=str(run.path)))
    obs, _ = based.reset(seed=3)
    plain = {k: v for k, v in obs.items() if k != BASE_ACTION}
    np.testing.assert_array_equal(obs[BASE_ACTION], np.clip(policy(plain), -1, 1))
    # the shifts are drawn: the same run without them ends elsewhere
    unshifted = dataclasses.replace(config, encoder=dataclasses.replace(encoder, image_augmentation=False),
                                    run_dir=tmp_path / "plain")
    other = load_bc_policy(train_bc(unshifted, say=lambda _: None)[0].path)
    assert not np.array_equal(policy(plain), other(plain))
