"""MixedSampler: symmetric online / demo batches."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from robot_rl.data.episode import Episode
from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.data.sampler import MixedSampler

SPACE = gym.spaces.Dict(
    {
        "state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32),
        "images/front": gym.spaces.Box(0, 255, (4, 4, 3), np.uint8),
    }
)
ONLINE, DEMO = 1.0, 2.0  # state[0] marks which buffer a transition came from


def filled(marker: float, episodes: int = 3, extras: tuple[str, ...] = ("intervention",), seed: int = 0):
    buf = ReplayBuffer(SPACE, 2, ReplayConfig(capacity=100), extras_keys=extras, seed=seed)
    for ep in range(episodes):
        t = 5
        buf.add_episode(
            Episode(
                observations={
                    "state": np.tile(np.array([marker, ep], np.float32), (t + 1, 1)),
                    "images/front": np.full((t + 1, 4, 4, 3), int(marker), np.uint8),
                },
                actions=np.zeros((t, 2), np.float32),
                rewards=np.full(t, marker, np.float32),
                terminated=True,
                truncated=False,
                infos={"intervention": np.full(t, marker == DEMO), "grasp_penalty": np.zeros(t, np.float32)},
            )
        )
    return buf


def test_half_and_half_from_the_right_buffers() -> None:
    sampler = MixedSampler(filled(ONLINE), filled(DEMO))
    batch = sampler.sample(256)
    assert len(batch) == 256 and sampler.split(256) == (128, 128)
    src = batch.obs["state"][:, 0]
    assert torch.all(src[:128] == ONLINE) and torch.all(src[128:] == DEMO)
    assert torch.all(batch.next_obs["state"][128:, 0] == DEMO)
    assert torch.all(batch.obs["images/front"][128:] == int(DEMO)) and torch.all(batch.reward[128:] == DEMO)
    assert torch.equal(batch.extras["intervention"], src == DEMO)


def test_all_online_without_demos() -> None:
    for demos in (None, ReplayBuffer(SPACE, 2, ReplayConfig(capacity=100), extras_keys=("intervention",))):
        batch = MixedSampler(filled(ONLINE), demos).sample(256)
        assert len(batch) == 256 and torch.all(batch.obs["state"][:, 0] == ONLINE)


@pytest.mark.parametrize(("fraction", "n_demo"), [(0.25, 64), (0.0, 0), (1.0, 256)])
def test_demo_fraction(fraction: float, n_demo: int) -> None:
    batch = MixedSampler(filled(ONLINE), filled(DEMO), demo_fraction=fraction).sample(256)
    assert int((batch.obs["state"][:, 0] == DEMO).sum()) == n_demo


def test_extras_kept_only_where_both_buffers_have_them() -> None:
    online = filled(ONLINE, extras=("intervention", "grasp_penalty"))
    batch = MixedSampler(online, filled(DEMO, extras=("intervention",))).sample(8)
    assert set(batch.extras) == {"intervention"}


def test_deterministic_for_seeds() -> None:
    a = MixedSampler(filled(ONLINE, seed=1), filled(DEMO, seed=2)).sample(64)
    b = MixedSampler(filled(ONLINE, seed=1), filled(DEMO, seed=2)).sample(64)
    assert torch.equal(a.obs["state"], b.obs["state"])


def test_errors() -> None:
    empty = ReplayBuffer(SPACE, 2, ReplayConfig(capacity=100), extras_keys=("intervention",))
    with pytest.raises(ValueError, match="online buffer"):
        MixedSampler(empty, filled(DEMO)).sample(8)
    with pytest.raises(ValueError, match="demo_fraction"):
        MixedSampler(filled(ONLINE), None, demo_fraction=1.5)
    other = gym.spaces.Dict({"state": gym.spaces.Box(-1, 1, (3,), np.float32)})
    with pytest.raises(ValueError, match="differ"):
        MixedSampler(filled(ONLINE), ReplayBuffer(other, 2, ReplayConfig(capacity=100)))
