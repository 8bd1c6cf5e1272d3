"""Symmetric sampling (RLPD / SERL): each batch is part online replay, part demo / prior replay."""

from __future__ import annotations

from typing import Protocol

import torch

from robot_rl.data.batch import Batch
from robot_rl.data.replay import ReplayBuffer


class Sampler(Protocol):
    """Where the learner's batches come from: ``MixedSampler`` over host replays here; a device-resident replay
    of many parallel worlds implements the same call."""

    def sample(self, batch_size: int, device: torch.device | str | None = None) -> Batch: ...


class MixedSampler:
    """Draw ``round(batch_size * demo_fraction)`` transitions from ``demos`` and the rest from ``online``.

    When ``demos`` is None or empty, the whole batch comes from ``online``. The returned ``Batch`` holds the
    online part first, then the demo part (``Batch.concat``); extras are kept where both buffers have them.
    """

    def __init__(
        self, online: ReplayBuffer, demos: ReplayBuffer | None = None, demo_fraction: float = 0.5
    ) -> None:
        if not 0.0 <= demo_fraction <= 1.0:
            raise ValueError(f"MixedSampler.demo_fraction must be in [0, 1], got {demo_fraction}")
        if demos is not None and (
            demos.space_description != online.space_description or demos.action_dim != online.action_dim
        ):
            raise ValueError(
                "MixedSampler: demo and online buffers differ in observation space or action dim: "
                f"{demos.space_description} / {demos.action_dim} vs "
                f"{online.space_description} / {online.action_dim}"
            )
        self.online = online
        self.demos = demos
        self.demo_fraction = demo_fraction

    def split(self, batch_size: int) -> tuple[int, int]:
        """(online count, demo count) for a batch of ``batch_size``."""
        n_demo = round(batch_size * self.demo_fraction) if self.demos is not None and len(self.demos) else 0
        return batch_size - n_demo, n_demo

    def sample(self, batch_size: int, device: torch.device | str | None = None) -> Batch:
        """One ``Batch`` of ``batch_size`` transitions: [online part; demo part]."""
        n_online, n_demo = self.split(batch_size)
        if n_online and len(self.online) == 0:
            raise ValueError("MixedSampler.sample: the online buffer holds no sampleable transition yet")
        if n_demo == 0:
            return self.online.sample(n_online, device)
        assert self.demos is not None
        if n_online == 0:
            return self.demos.sample(n_demo, device)
        return Batch.concat(self.online.sample(n_online, device), self.demos.sample(n_demo, device))
