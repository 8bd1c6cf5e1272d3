"""Small spaces, random batches and constant-output critics for the agent tests."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from robot_rl.agents.networks import EnsembleMLP
from robot_rl.data.batch import Batch


def state_space(dim: int = 5) -> gym.spaces.Dict:
    return gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)})


def pixel_space(size: int = 64, state_dim: int = 4, cameras: tuple[str, ...] = ("front",)) -> gym.spaces.Dict:
    spaces: dict[str, gym.spaces.Space] = {"state": gym.spaces.Box(-np.inf, np.inf, (state_dim,), np.float32)}
    for cam in cameras:
        spaces[f"images/{cam}"] = gym.spaces.Box(0, 255, (size, size, 3), np.uint8)
    return gym.spaces.Dict(spaces)


def action_space(dim: int = 7) -> gym.spaces.Box:
    return gym.spaces.Box(-1.0, 1.0, (dim,), np.float32)


def random_obs(space: gym.spaces.Dict, batch: int, gen: torch.Generator) -> dict[str, torch.Tensor]:
    obs = {}
    for key, sub in space.spaces.items():
        if sub.dtype == np.uint8:
            obs[key] = torch.randint(0, 256, (batch, *sub.shape), generator=gen, dtype=torch.uint8)
        else:
            obs[key] = torch.randn((batch, *sub.shape), generator=gen)
    return obs


def make_batch(
    space: gym.spaces.Dict, action_dim: int, batch: int = 8, seed: int = 0, discount: float = 0.99
) -> Batch:
    """A random batch; the discount is the same for every transition."""
    gen = torch.Generator().manual_seed(seed)
    return Batch(
        obs=random_obs(space, batch, gen),
        action=torch.rand((batch, action_dim), generator=gen) * 2 - 1,
        reward=torch.randn((batch,), generator=gen),
        discount=torch.full((batch,), discount),
        next_obs=random_obs(space, batch, gen),
    )


def set_constant_critics(critic: EnsembleMLP, values: list[float]) -> None:
    """Make critic i output ``values[i]`` for every input (zero head weights, bias = value)."""
    with torch.no_grad():
        critic.head.weight.zero_()
        critic.head.bias.copy_(torch.tensor(values).view(-1, 1, 1))


def set_constant_head(net: nn.Sequential, values: list[float]) -> None:
    """Make an ``mlp`` output ``values`` for every input."""
    last = net[-1]
    assert isinstance(last, nn.Linear)
    with torch.no_grad():
        last.weight.zero_()
        last.bias.copy_(torch.tensor(values))
