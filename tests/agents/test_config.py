"""SACConfig: RLPD/SERL defaults and field-naming validation errors."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from robot_rl.agents.config import SACConfig


def test_defaults_follow_rlpd_serl() -> None:
    c = SACConfig()
    assert (c.num_critics, c.num_min_critics, c.tau, c.hidden_dims) == (10, 2, 0.005, (256, 256))
    assert c.critic_layer_norm and not c.backup_entropy
    assert c.actor_lr == c.critic_lr == c.temperature_lr == c.gripper_lr == 3e-4
    assert c.augmentation_pad == 4


def test_every_field_has_a_docstring() -> None:
    source = inspect.getsource(SACConfig)
    for f in dataclasses.fields(SACConfig):
        after = source.split(f"    {f.name}:", 1)[1].splitlines()[1].strip()
        assert after.startswith('"""'), f"field {f.name} has no docstring"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("num_critics", 0),
        ("num_min_critics", 11),
        ("num_min_critics", 0),
        ("hidden_dims", ()),
        ("hidden_dims", (256, -1)),
        ("tau", 0.0),
        ("tau", 1.5),
        ("utd_ratio", 0),
        ("actor_lr", -1e-3),
        ("critic_lr", float("nan")),
        ("init_temperature", 0.0),
        ("gripper", "binary"),
        ("gripper_epsilon", 1.5),
        ("max_grad_norm", 0.0),
        ("log_std_min", 3.0),
        ("cnn_strides", (2, 2)),
        ("augmentation_pad", -1),
        ("image_pooling", "avg"),
        ("target_entropy", float("inf")),
    ],
)
def test_invalid_values_name_the_field(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=rf"SACConfig\.{field}\b") as info:
        SACConfig(**{field: value})
    assert repr(value) in str(info.value)


def test_resnet_needs_a_weights_path() -> None:
    with pytest.raises(ValueError, match="resnet_weights_path"):
        SACConfig(image_encoder="resnet18")
