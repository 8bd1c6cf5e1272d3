"""The device replay of parallel worlds computes the n-step transitions the host ReplayBuffer computes from the
same steps, keeps every world's own episodes, and saves and loads what it holds."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from robot_rl.data.device_replay import DeviceReplay
from robot_rl.data.replay import ReplayBuffer, ReplayConfig

SPACE = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (3,), np.float32)})
EXTRAS = {"intervention": torch.bool, "grasp_penalty": torch.float32}


def rollout(num_worlds: int, steps: int, seed: int = 0):
    """Random episodes per world (lengths 1-6, some terminated, some truncated), as a vector env gives them:
    per vector step (obs, action, reward, true next obs, terminated, ended)."""
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(num_worlds, 3)).astype(np.float32)
    left = rng.integers(1, 7, num_worlds)
    out = []
    for _ in range(steps):
        action = rng.uniform(-1, 1, (num_worlds, 2)).astype(np.float32)
        reward = rng.normal(size=num_worlds).astype(np.float32)
        nxt = rng.normal(size=(num_worlds, 3)).astype(np.float32)
        left -= 1
        ended = left == 0
        terminated = ended & (rng.random(num_worlds) < 0.5)
        out.append((obs, action, reward, nxt, terminated, ended))
        obs = np.where(ended[:, None], rng.normal(size=(num_worlds, 3)).astype(np.float32), nxt)  # auto-reset
        left = np.where(ended, rng.integers(1, 7, num_worlds), left)
    return out


@pytest.mark.parametrize("n_step", [1, 3])
def test_n_step_transitions_equal_the_host_replays_on_the_same_steps(n_step: int) -> None:
    worlds, steps = 4, 30
    config = ReplayConfig(capacity=worlds * 40, n_step=n_step, gamma=0.9)
    device = DeviceReplay(SPACE, 2, worlds, config, EXTRAS, "cpu")
    host = ReplayBuffer(SPACE, 2, ReplayConfig(capacity=1000, n_step=n_step, gamma=0.9),
                        extras_keys=["intervention", "grasp_penalty"])
    record = {}  # (vector step, world) -> the host record of that step
    for t, (obs, action, reward, nxt, terminated, ended) in enumerate(rollout(worlds, steps)):
        device.add({"state": torch.from_numpy(obs)}, torch.from_numpy(action), torch.from_numpy(reward),
                   {"state": torch.from_numpy(nxt)}, torch.from_numpy(terminated), torch.from_numpy(ended))
        for w in range(worlds):
            record[t, w] = host._ptr
            host.add({"state": obs[w]}, action[w], float(reward[w]), {"state": nxt[w]}, bool(terminated[w]),
                     bool(ended[w] and not terminated[w]), {"intervention": False, "grasp_penalty": 0.0},
                     stream=str(w))
    assert len(device) == (steps - (n_step - 1)) * worlds
    # The host replay writes a step's next observation with the stream's next step; compare the starts whose
    # windows both have complete (all but the newest vector step).
    t = torch.arange(steps - n_step).repeat_interleave(worlds)
    w = torch.arange(worlds).repeat(steps - n_step)
    ours = device.gather(t, w)
    theirs = host.gather(np.array([record[int(a), int(b)] for a, b in zip(t, w)]))
    for name in ("action", "reward", "discount"):
        np.testing.assert_allclose(getattr(ours, name).numpy(), getattr(theirs, name).numpy(), rtol=1e-6,
                                   err_msg=name)
    np.testing.assert_array_equal(ours.obs["state"].numpy(), theirs.obs["state"].numpy())
    np.testing.assert_array_equal(ours.next_obs["state"].numpy(), theirs.next_obs["state"].numpy())
    assert set(ours.extras) == set(theirs.extras)
    if n_step > 1:  # windows of every kind: full, cut by termination (discount 0), cut by truncation
        d = ours.discount.numpy()
        assert (d == 0).any() and np.isclose(d, 0.9**n_step).any() and (d > 0.9**n_step + 1e-6).any()


def test_the_ring_keeps_the_newest_steps_and_samples_only_complete_windows() -> None:
    worlds, config = 3, ReplayConfig(capacity=3 * 8, n_step=3, gamma=0.5)
    replay = DeviceReplay(SPACE, 2, worlds, config, EXTRAS, "cpu", seed=1)
    with pytest.raises(ValueError, match="no sampleable transition yet"):
        replay.sample(4)
    steps = rollout(worlds, 20, seed=2)
    for obs, action, reward, nxt, terminated, ended in steps:
        replay.add({"state": torch.from_numpy(obs)}, torch.from_numpy(action), torch.from_numpy(reward),
                   {"state": torch.from_numpy(nxt)}, torch.from_numpy(terminated), torch.from_numpy(ended))
    assert len(replay) == (8 - 2) * worlds
    batch = replay.sample(256)
    kept = np.concatenate([s[0] for s in steps[12:18]])  # starts: steps 12..17 (18, 19 wait for their window)
    found = batch.obs["state"].numpy()
    assert all(np.isclose(kept, row).all(axis=1).any() for row in found)
    assert not any(np.isclose(np.concatenate([s[0] for s in steps[18:]]), row).all(axis=1).any() for row in found)


def test_save_and_load_restore_the_buffer_and_its_draws(tmp_path) -> None:
    replay = DeviceReplay(SPACE, 2, 2, ReplayConfig(capacity=40, n_step=2), EXTRAS, "cpu", seed=3)
    for obs, action, reward, nxt, terminated, ended in rollout(2, 25, seed=4):
        replay.add({"state": torch.from_numpy(obs)}, torch.from_numpy(action), torch.from_numpy(reward),
                   {"state": torch.from_numpy(nxt)}, torch.from_numpy(terminated), torch.from_numpy(ended))
    replay.save(tmp_path / "replay.pt")
    copy = DeviceReplay(SPACE, 2, 2, ReplayConfig(capacity=40, n_step=2), EXTRAS, "cpu", seed=99)
    copy.load(tmp_path / "replay.pt")
    a, b = replay.sample(64), copy.sample(64)
    assert torch.equal(a.obs["state"], b.obs["state"]) and torch.equal(a.reward, b.reward)
    other = DeviceReplay(SPACE, 2, 4, ReplayConfig(capacity=40, n_step=2), EXTRAS, "cpu")
    with pytest.raises(ValueError, match="a replay of 2 worlds x 20 steps does not fit this run's 4 worlds x 10"):
        other.load(tmp_path / "replay.pt")


def test_a_capacity_too_small_for_the_worlds_is_refused_with_the_size_that_fits() -> None:
    with pytest.raises(ValueError, match=r"leaves 1 steps per world; it needs >= n_step \+ 1 = 4 .* at least 4096"):
        DeviceReplay(SPACE, 2, 1024, ReplayConfig(capacity=1024 + 500, n_step=3), EXTRAS, "cpu")


def test_ending_the_episodes_stops_windows_at_the_newest_step_and_bootstraps_there() -> None:
    """What a trainer does before new episodes start in every world (a resume, an evaluation on the worlds): no
    n-step window runs from the old episodes into the new ones."""
    replay = DeviceReplay(SPACE, 2, 2, ReplayConfig(capacity=40, n_step=3, gamma=0.5), EXTRAS, "cpu")
    running = torch.zeros(2, dtype=torch.bool)

    def add(value: float) -> None:
        state = {"state": torch.full((2, 3), value)}
        replay.add(state, torch.zeros(2, 2), torch.ones(2), {"state": torch.full((2, 3), value + 1)}, running,
                   running)

    for value in (0.0, 1.0):
        add(value)
    replay.end_episodes()
    for value in (10.0, 11.0):
        add(value)
    batch = replay.gather(torch.tensor([0, 0]), torch.tensor([0, 1]))
    torch.testing.assert_close(batch.reward, torch.full((2,), 1.5))  # two steps, not three: 1 + 0.5
    torch.testing.assert_close(batch.discount, torch.full((2,), 0.25))  # a time limit: bootstrapped
    torch.testing.assert_close(batch.next_obs["state"], torch.full((2, 3), 2.0))  # from the old episode's end
