"""Observation encoder: dict observation -> flat feature vector [B, F].

- Image keys (``images/<camera>``, or any uint8 rank-3 Box) go through a per-camera backbone (a small CNN from
  scratch, or a ResNet-18 loaded from a local file), a pooling head (SERL's learned spatial embedding or
  flatten), then Linear + LayerNorm + tanh.
- Every other key is flattened and concatenated in sorted key order ("proprio"). With cameras it passes
  through Linear + LayerNorm + tanh; without cameras the raw concatenation is the feature (no parameters).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from robot_rl.agents.config import SACConfig
from robot_rl.envs.contract import is_image_key

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def is_image_space(key: str, space: gym.Space) -> bool:
    """A contract image key, or any uint8 Box of shape [H, W, C]."""
    return isinstance(space, gym.spaces.Box) and (
        is_image_key(key) or (space.dtype == np.uint8 and len(space.shape) == 3)
    )


def split_keys(space: gym.spaces.Dict) -> tuple[list[str], list[str]]:
    """Returns (image keys, non-image keys), each sorted."""
    if not isinstance(space, gym.spaces.Dict):
        raise TypeError(f"observation_space must be a gymnasium.spaces.Dict, got {type(space).__name__}")
    images = sorted(k for k, s in space.spaces.items() if is_image_space(k, s))
    others = sorted(k for k in space.spaces if k not in images)
    for key in others:
        if not isinstance(space.spaces[key], gym.spaces.Box):
            kind = type(space.spaces[key]).__name__
            raise TypeError(f"observation_space[{key!r}] must be a Box, got {kind}")
    return images, others


class SmallCNN(nn.Module):
    """3x3 valid convs with ReLU: uint8-derived float [B, 3, H, W] in [0, 1] -> [B, C, h, w]."""

    def __init__(self, channels: tuple[int, ...], strides: tuple[int, ...], in_channels: int = 3) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        for out, stride in zip(channels, strides):
            layers += [nn.Conv2d(in_channels, out, 3, stride), nn.ReLU()]
            in_channels = out
        self.net = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x - 0.5)


class BasicBlock(nn.Module):
    """ResNet basic block; parameter names follow torchvision so its state_dicts load unchanged."""

    def __init__(self, inp: int, out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inp, out, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(out)
        self.conv2 = nn.Conv2d(out, out, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(out)
        self.downsample: nn.Module | None = None
        if stride != 1 or inp != out:
            self.downsample = nn.Sequential(nn.Conv2d(inp, out, 1, stride, bias=False), nn.BatchNorm2d(out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(y)) + identity)


class ResNet18(nn.Module):
    """ResNet-18 trunk without pooling/fc: ImageNet-normalised [B, 3, H, W] -> [B, 512, H/32, W/32].

    BatchNorm always uses its running statistics (``train()`` keeps the module in eval mode).
    """

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths, inp = (64, 128, 256, 512), 64
        for i, width in enumerate(widths):
            stride = 1 if i == 0 else 2
            blocks = nn.Sequential(BasicBlock(inp, width, stride), BasicBlock(width, width, 1))
            self.add_module(f"layer{i + 1}", blocks)
            inp = width
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def train(self, mode: bool = True) -> ResNet18:
        return super().train(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


def load_resnet18(path: str | Path) -> ResNet18:
    """Build a ResNet-18 trunk and load a local torchvision-layout state_dict (``fc.*`` keys are ignored)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(
            f"ResNet-18 weights file not found: {str(path)!r} (SACConfig.resnet_weights_path); weights are "
            "never downloaded: save a torchvision resnet18 state_dict there with torch.save"
        )
    state = torch.load(path, map_location="cpu", weights_only=True)
    if isinstance(state, dict) and "state_dict" in state:
        state = state["state_dict"]
    state = {k: v for k, v in state.items() if not k.startswith("fc.")}
    model = ResNet18()
    model.load_state_dict(state, strict=True)
    return model


class SpatialEmbedding(nn.Module):
    """SERL's learned spatial embedding: [B, C, h, w] -> [B, C * F], F learned h*w kernels per channel."""

    def __init__(self, channels: int, height: int, width: int, num_features: int) -> None:
        super().__init__()
        kernel = torch.randn(channels, height * width, num_features) / np.sqrt(height * width)
        self.kernel = nn.Parameter(kernel)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.einsum("bcp,cpf->bcf", x.flatten(2), self.kernel).flatten(1)


class CameraEncoder(nn.Module):
    """uint8 [B, H, W, 3] -> float [B, latent]: backbone -> pooling -> Linear -> LayerNorm -> tanh."""

    def __init__(self, backbone: nn.Module, frozen: bool, height: int, width: int, config: SACConfig) -> None:
        super().__init__()
        self.backbone = backbone
        self.frozen = frozen
        self.compute_dtype = getattr(torch, config.precision)
        with torch.no_grad():
            c, h, w = backbone(torch.zeros(1, 3, height, width)).shape[1:]
        if config.image_pooling == "spatial_embedding":
            self.pool: nn.Module = SpatialEmbedding(c, h, w, config.spatial_embedding_features)
            pooled = c * config.spatial_embedding_features
        else:
            self.pool = nn.Flatten()
            pooled = c * h * w
        latent = config.image_latent_dim
        self.proj = nn.Sequential(nn.Linear(pooled, latent), nn.LayerNorm(latent))

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        x = image.permute(0, 3, 1, 2).float().div_(255.0)
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen), self._autocast(x):
            x = self.backbone(x)
        return torch.tanh(self.proj(self.pool(x.float())))

    def _autocast(self, x: torch.Tensor) -> torch.autocast:
        """The backbone's convolutions in ``SACConfig.precision`` (bfloat16 about halves them on CPUs with
        AVX512-BF16); weights stay float32, the pooled features and everything after them are float32."""
        enabled = self.compute_dtype != torch.float32
        return torch.autocast(x.device.type, dtype=self.compute_dtype, enabled=enabled)


def _drop_frozen(module: ObservationEncoder, state: dict[str, Any], prefix: str, meta: Any) -> None:
    for key in module._frozen_keys:
        state.pop(prefix + key, None)


def _fill_frozen(module: ObservationEncoder, state: dict[str, Any], prefix: str, *args: Any) -> None:
    for key, value in module._frozen_state().items():
        state.setdefault(prefix + key, value)


class RunningNorm(nn.Module):
    """Running per-feature mean / std of the non-image observation (parallel Welford merge of batches),
    applied as ``clip((x - mean) / max(std, min_std))``. Identity until the first ``update``.

    Positions in metres, forces in newtons and goal offsets of a few centimetres differ by orders of
    magnitude; without this the actor barely sees a 3 cm goal offset. Statistics are buffers, so they are
    checkpointed and shipped to actors with the policy weights.
    """

    def __init__(self, dim: int, min_std: float = 1e-2, clip: float = 10.0) -> None:
        super().__init__()
        self.min_std, self.clip = min_std, clip
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("mean", torch.zeros(dim, dtype=torch.float64))
        self.register_buffer("var", torch.ones(dim, dtype=torch.float64))

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Merge the statistics of a batch x [B, dim]."""
        x = x.detach().to(torch.float64)
        n = float(x.shape[0])
        if n == 0:
            return
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        total = self.count + n
        delta = batch_mean - self.mean
        if self.count == 0:
            self.mean.copy_(batch_mean)
            self.var.copy_(batch_var)
        else:
            self.mean.add_(delta * (n / total))
            self.var.copy_((self.var * self.count + batch_var * n + delta.square() * self.count * n / total) / total)
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        std = self.var.sqrt().clamp_min(self.min_std).to(x.dtype)
        return ((x - self.mean.to(x.dtype)) / std).clamp(-self.clip, self.clip)


class ObservationEncoder(nn.Module):
    """Observation dict -> features [B, out_dim] (see module docstring); ``frozen_modules`` may be shared."""

    def __init__(self, observation_space: gym.spaces.Dict, config: SACConfig) -> None:
        super().__init__()
        self.image_keys, self.state_keys = split_keys(observation_space)
        spaces = observation_space.spaces
        self.state_dim = int(sum(np.prod(spaces[k].shape) for k in self.state_keys))
        self.cameras = nn.ModuleDict()
        self.proprio: nn.Module | None = None
        self._frozen: list[nn.Module] = []
        self.normalizer = RunningNorm(self.state_dim) if config.normalize_observations and self.state_dim else None
        if not self.image_keys:
            self.out_dim = self.state_dim
            return
        shared: nn.Module | None = None
        if config.image_encoder == "resnet18" and config.freeze_backbone:
            shared = load_resnet18(config.resnet_weights_path).requires_grad_(False)  # type: ignore[arg-type]
            self._frozen.append(shared)
        for key in self.image_keys:
            h, w, c = spaces[key].shape
            if c != 3:
                raise ValueError(f"observation_space[{key!r}] must be [H, W, 3] RGB, got {spaces[key].shape}")
            if shared is not None:
                backbone: nn.Module = shared
            elif config.image_encoder == "resnet18":
                backbone = load_resnet18(config.resnet_weights_path)  # type: ignore[arg-type]
            else:
                backbone = SmallCNN(config.cnn_channels, config.cnn_strides)
            self.cameras[self._name(key)] = CameraEncoder(backbone, shared is not None, h, w, config)
        self.out_dim = len(self.image_keys) * config.image_latent_dim
        # The frozen backbone is rebuilt from its weights file: keep it out of checkpoints and actor weights.
        self._frozen_keys = list(self._frozen_state())
        self.register_state_dict_post_hook(_drop_frozen)
        self.register_load_state_dict_pre_hook(_fill_frozen)
        if self.state_dim:
            d = config.proprio_latent_dim
            self.proprio = nn.Sequential(nn.Linear(self.state_dim, d), nn.LayerNorm(d), nn.Tanh())
            self.out_dim += d

    def _frozen_state(self) -> dict[str, torch.Tensor]:
        return {
            f"cameras.{name}.backbone.{key}": value
            for name, cam in self.cameras.items()
            if cam.frozen
            for key, value in cam.backbone.state_dict().items()
        }

    @staticmethod
    def _name(key: str) -> str:
        return key.replace("/", "__").replace(".", "_")

    @property
    def has_parameters(self) -> bool:
        """False for state-only observations: the encoder is a fixed concatenation."""
        return bool(self.image_keys)

    def frozen_modules(self) -> list[nn.Module]:
        """Modules never trained (frozen pretrained backbone); target copies may share them."""
        return list(self._frozen)

    def shared_modules(self) -> list[nn.Module]:
        """Modules the target encoder shares with this one instead of copying (frozen backbone, normaliser)."""
        return self.frozen_modules() + ([self.normalizer] if self.normalizer is not None else [])

    def update_normalizer(self, obs: dict[str, torch.Tensor]) -> None:
        if self.normalizer is not None:
            self.normalizer.update(self.flatten_state(obs))

    def proprio_input(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Flattened non-image observation, normalised when enabled: float32 [B, state_dim]."""
        x = self.flatten_state(obs)
        return x if self.normalizer is None else self.normalizer(x)

    def flatten_state(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """Non-image keys in sorted order, each flattened: -> float32 [B, state_dim]."""
        parts = [obs[k].reshape(obs[k].shape[0], -1).float() for k in self.state_keys]
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=-1)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """obs: ``{key: [B, ...]}`` (images uint8 [B, H, W, 3]) -> float32 [B, out_dim]."""
        if not self.image_keys:
            return self.proprio_input(obs)
        feats = [self.cameras[self._name(k)](obs[k]) for k in self.image_keys]
        if self.proprio is not None:
            feats.append(self.proprio(self.proprio_input(obs)))
        return feats[0] if len(feats) == 1 else torch.cat(feats, dim=-1)
