"""Observation encoder: state-only concatenation, per-camera CNN, local ResNet-18 weights."""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
from agent_helpers import pixel_space, random_obs

from robot_rl.agents.config import SACConfig
from robot_rl.agents.encoders import ObservationEncoder, ResNet18, SmallCNN


def test_state_only_concatenates_sorted_keys_without_parameters() -> None:
    space = gym.spaces.Dict(
        {
            "zeta": gym.spaces.Box(-1, 1, (2,), np.float32),
            "alpha": gym.spaces.Box(-1, 1, (3,), np.float32),
            "mid": gym.spaces.Box(-1, 1, (2, 2), np.float64),
        }
    )
    enc = ObservationEncoder(space, SACConfig())
    assert enc.out_dim == 9 and not enc.has_parameters and not list(enc.parameters())
    obs = {k: torch.randn(4, *s.shape) for k, s in space.spaces.items()}
    expected = torch.cat([obs["alpha"], obs["mid"].reshape(4, 4), obs["zeta"]], -1).float()
    assert torch.equal(enc(obs), expected)


@pytest.mark.parametrize("size", [64, 128])
@pytest.mark.parametrize("pooling", ["spatial_embedding", "flatten"])
def test_cnn_encoder_from_scratch(size: int, pooling: str) -> None:
    space = pixel_space(size, state_dim=4, cameras=("front", "wrist"))
    config = SACConfig(image_pooling=pooling, image_latent_dim=32, proprio_latent_dim=8)  # type: ignore[arg-type]
    enc = ObservationEncoder(space, config)
    assert enc.image_keys == ["images/front", "images/wrist"] and enc.state_keys == ["state"]
    assert enc.out_dim == 2 * 32 + 8
    assert any(isinstance(m, SmallCNN) for m in enc.modules())
    feats = enc(random_obs(space, 3, torch.Generator().manual_seed(0)))
    assert feats.shape == (3, 72) and feats.dtype == torch.float32
    assert feats.abs().max() <= 1.0  # every block ends in tanh


def test_bfloat16_backbone_tracks_float32_and_keeps_float32_features_and_params() -> None:
    space = pixel_space(64, state_dim=4, cameras=("front",))
    obs = random_obs(space, 8, torch.Generator().manual_seed(0))
    torch.manual_seed(0)
    exact = ObservationEncoder(space, SACConfig())
    torch.manual_seed(0)
    mixed = ObservationEncoder(space, SACConfig(precision="bfloat16"))
    a, b = exact(obs), mixed(obs)
    assert b.dtype == torch.float32 and not torch.equal(a, b)  # the convolutions really ran in bfloat16
    assert torch.allclose(a, b, atol=0.05)
    b.sum().backward()
    params = list(mixed.parameters())
    assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32 for p in params)


def test_missing_resnet_weights_name_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "resnet18.pt"
    config = SACConfig(image_encoder="resnet18", resnet_weights_path=str(missing))
    with pytest.raises(FileNotFoundError, match=r"nowhere/resnet18\.pt"):
        ObservationEncoder(pixel_space(64), config)


def test_resnet_loads_a_local_torchvision_layout_state_dict(tmp_path: Path) -> None:
    torch.manual_seed(0)
    source = ResNet18()
    state = dict(source.state_dict())
    state["fc.weight"], state["fc.bias"] = torch.zeros(1000, 512), torch.zeros(1000)  # torchvision extras
    path = tmp_path / "resnet18.pt"
    torch.save(state, path)
    config = SACConfig(image_encoder="resnet18", resnet_weights_path=str(path), image_latent_dim=16)
    space = pixel_space(64, cameras=("front", "wrist"))
    enc = ObservationEncoder(space, config)
    backbones = {id(m) for m in enc.modules() if isinstance(m, ResNet18)}
    assert len(backbones) == 1  # frozen backbone shared by the cameras
    backbone = enc.frozen_modules()[0]
    assert torch.equal(backbone.conv1.weight, source.conv1.weight)
    assert not any(p.requires_grad for p in backbone.parameters())
    enc.train()
    assert not backbone.training  # BatchNorm keeps its running statistics
    feats = enc(random_obs(space, 2, torch.Generator().manual_seed(0)))
    assert feats.shape == (2, 2 * 16 + 64)
    feats.sum().backward()
    assert backbone.conv1.weight.grad is None


def test_frozen_backbone_stays_out_of_state_dicts(tmp_path: Path) -> None:
    path = tmp_path / "resnet18.pt"
    torch.save(ResNet18().state_dict(), path)
    config = SACConfig(image_encoder="resnet18", resnet_weights_path=str(path), image_latent_dim=16)
    enc = ObservationEncoder(pixel_space(64), config)
    state = enc.state_dict()
    assert state and not any(".backbone." in key for key in state)  # rebuilt from the weights file
    other = ObservationEncoder(pixel_space(64), config)
    other.load_state_dict(state)  # strict: the frozen keys are filled in
    obs = random_obs(pixel_space(64), 2, torch.Generator().manual_seed(0))
    assert torch.equal(enc(obs), other(obs))
