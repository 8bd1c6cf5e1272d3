"""``ClassifierConfig``: the reward classifier's model and training settings (no torch import here)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from robot_rl.agents.config import SACConfig


@dataclass(frozen=True)
class ClassifierConfig:
    """Model and training settings (encoder fields mean what they mean in ``SACConfig``)."""

    image_keys: tuple[str, ...] = ()
    """Observation keys fed to the classifier (default: every ``images/<camera>`` key of the data)."""
    image_encoder: Literal["cnn", "resnet18"] = "cnn"
    resnet_weights_path: str | None = None
    cnn_channels: tuple[int, ...] = (32, 32, 32, 32)
    cnn_strides: tuple[int, ...] = (2, 2, 2, 1)
    spatial_embedding_features: int = 8
    image_latent_dim: int = 64
    hidden_dim: int = 256
    dropout: float = 0.1
    lr: float = 3e-4
    steps: int = 600
    """Gradient steps, each on a balanced batch (half success, half failure frames)."""
    batch_size: int = 64
    augmentation_pad: int = 4
    """DrQ random shift (px) applied to training batches."""
    val_fraction: float = 0.2
    """Episodes held out to choose the threshold."""
    test_fraction: float = 0.2
    """Episodes held out to report accuracy and the confusion matrix (never used to fit or choose)."""
    max_false_positive_rate: float | None = None
    """Threshold rule on validation frames. None: best balanced accuracy. A rate (e.g. 0.0): the threshold
    recalling the most success frames with at most that share of failure frames called success (a false
    positive pays the policy for a failure; see ``choose_threshold``)."""
    seed: int = 0
    torch_threads: int = 1

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "hidden_dim", "image_latent_dim", "torch_threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"ClassifierConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.batch_size < 2:
            raise ValueError(f"ClassifierConfig.batch_size must be >= 2 (balanced halves), got {self.batch_size}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"ClassifierConfig.dropout must be in [0, 1), got {self.dropout}")
        if not self.lr > 0:
            raise ValueError(f"ClassifierConfig.lr must be > 0, got {self.lr}")
        if self.augmentation_pad < 0:
            raise ValueError(f"ClassifierConfig.augmentation_pad must be >= 0, got {self.augmentation_pad}")
        for name in ("val_fraction", "test_fraction"):
            if not 0.0 < getattr(self, name) < 0.5:
                raise ValueError(f"ClassifierConfig.{name} must be in (0, 0.5), got {getattr(self, name)}")
        fpr = self.max_false_positive_rate
        if fpr is not None and not 0.0 <= fpr < 1.0:
            raise ValueError(f"ClassifierConfig.max_false_positive_rate must be in [0, 1) or None, got {fpr}")
        self.encoder_config()  # validates the encoder fields with SACConfig's messages

    def encoder_config(self) -> SACConfig:
        return SACConfig(
            image_encoder=self.image_encoder, resnet_weights_path=self.resnet_weights_path,
            cnn_channels=self.cnn_channels, cnn_strides=self.cnn_strides, image_pooling="spatial_embedding",
            spatial_embedding_features=self.spatial_embedding_features, image_latent_dim=self.image_latent_dim,
            normalize_observations=False,
        )
