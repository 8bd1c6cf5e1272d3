"""A synthetic success/failure image set for tests and smoke runs of the reward classifier (no simulator).

A success frame has a bright 8x8 block in the upper half of a noise background; a classifier learns it in
seconds, so tests of training, the reward wrapper and the ROS reward node stay fast.
"""

from __future__ import annotations

import numpy as np

from robot_rl.rewards.config import ClassifierConfig
from robot_rl.rewards.dataset import FrameSet

SIZE = 32
TINY_CONFIG = ClassifierConfig(cnn_channels=(8, 8, 8, 8), image_latent_dim=16, hidden_dim=32, steps=80,
                               batch_size=32, lr=1e-3, seed=0)
"""A classifier small enough to train on ``synthetic_frames`` in a few seconds on one CPU thread."""


def synthetic_image(success: bool, rng: np.random.Generator) -> np.ndarray:
    """uint8 [SIZE, SIZE, 3]: noise; with ``success`` a bright 8x8 block somewhere in the upper half."""
    img = rng.integers(0, 90, (SIZE, SIZE, 3), dtype=np.uint8)
    if success:
        r, c = rng.integers(2, 8), rng.integers(2, SIZE - 10)
        img[r : r + 8, c : c + 8] = 250
    return img


def synthetic_frames(episodes: int = 14, length: int = 10, seed: int = 0, camera: str = "front") -> FrameSet:
    """Episodes that turn successful at a random step and stay so, as ``images/<camera>`` frames."""
    rng = np.random.default_rng(seed)
    labels = np.concatenate([np.arange(length) >= rng.integers(3, length) for _ in range(episodes)])
    images = np.stack([synthetic_image(bool(y), rng) for y in labels])
    return FrameSet({f"images/{camera}": images}, labels, np.repeat(np.arange(episodes), length))
