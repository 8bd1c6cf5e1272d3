"""Binary success classifier on camera images, built on the learner's encoder (``ObservationEncoder``).

Architecture (HIL-SERL's ``reward_classifier`` with our encoder family): per-camera backbone (small CNN or
ResNet-18) -> spatial embedding -> Linear + LayerNorm + tanh, concatenated over cameras -> Linear(hidden)
-> Dropout -> LayerNorm -> ReLU -> Linear(1) = success logit.

Saved as one ``torch.save`` file: config, observation space, threshold (chosen on validation frames),
held-out report, weights. ``load_classifier`` rebuilds it; nothing else is needed to use it.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn

from robot_rl.agents.encoders import ObservationEncoder
from robot_rl.data.spaces import describe_space, space_from_description
from robot_rl.rewards.config import ClassifierConfig
from robot_rl.utils.atomic import atomic_write

FORMAT = "robot_rl.reward_classifier"
FORMAT_VERSION = 1


class SuccessClassifier(nn.Module):
    """obs ``{images/<cam>: uint8 [B, H, W, 3]}`` -> success logit [B]."""

    def __init__(self, space: gym.spaces.Dict, config: ClassifierConfig) -> None:
        super().__init__()
        self.config = config
        self.space = space
        self.encoder = ObservationEncoder(space, config.encoder_config())
        if not self.encoder.image_keys:
            raise ValueError(f"SuccessClassifier needs image keys, got observation keys {list(space.spaces)}")
        h = config.hidden_dim
        self.head = nn.Sequential(
            nn.Linear(self.encoder.out_dim, h), nn.Dropout(config.dropout), nn.LayerNorm(h), nn.ReLU(), nn.Linear(h, 1)
        )

    @property
    def keys(self) -> list[str]:
        return list(self.space.spaces)

    def forward(self, obs: Mapping[str, torch.Tensor]) -> torch.Tensor:
        return self.head(self.encoder(dict(obs))).squeeze(-1)

    @torch.no_grad()
    def predict_proba(self, obs: Mapping[str, np.ndarray], batch_size: int = 256) -> np.ndarray:
        """Success probability float [N] for a batch of observations (extra keys are ignored)."""
        was_training = self.training
        self.eval()
        n = len(obs[self.keys[0]])
        out = []
        for start in range(0, n, batch_size):
            batch = {k: torch.as_tensor(np.asarray(obs[k][start : start + batch_size])) for k in self.keys}
            out.append(torch.sigmoid(self(batch)).numpy())
        self.train(was_training)
        return np.concatenate(out) if out else np.zeros(0, np.float32)


@dataclass
class LoadedClassifier:
    model: SuccessClassifier
    threshold: float
    report: dict[str, Any]

    def probability(self, obs: Mapping[str, np.ndarray]) -> float:
        """Success probability of one observation (``{key: array}`` without a batch dim)."""
        return float(self.model.predict_proba({k: np.asarray(obs[k])[None] for k in self.model.keys})[0])


def save_classifier(path: str | os.PathLike[str], model: SuccessClassifier, threshold: float,
                    report: dict[str, Any]) -> None:
    payload = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "config": dataclasses.asdict(model.config),
        "space": describe_space(model.space), "threshold": float(threshold), "report": report,
        "state_dict": model.state_dict(),
    }
    atomic_write(path, lambda f: torch.save(payload, f))


def load_classifier(path: str | os.PathLike[str]) -> LoadedClassifier:
    try:
        payload = torch.load(path, map_location="cpu", weights_only=False)
    except (OSError, RuntimeError, pickle.UnpicklingError, EOFError) as err:
        raise ValueError(f"{path}: cannot read reward classifier ({err})") from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} file (robot-rl train-classifier writes them)")
    cfg = payload["config"]
    for key in ("image_keys", "cnn_channels", "cnn_strides"):
        cfg[key] = tuple(cfg[key])
    model = SuccessClassifier(space_from_description(payload["space"]), ClassifierConfig(**cfg))
    model.load_state_dict(payload["state_dict"])
    model.eval()
    return LoadedClassifier(model, float(payload["threshold"]), dict(payload["report"]))
