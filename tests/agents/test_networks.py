"""Fused critic ensemble, tanh-Gaussian actor and gripper class mapping."""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from robot_rl.agents.networks import (
    EnsembleMLP,
    TanhGaussianActor,
    gripper_action_to_class,
    gripper_class_to_action,
    mlp,
)


def separate_mlps(ens: EnsembleMLP, layer_norm: bool, activation: str) -> list[nn.Sequential]:
    """N ordinary MLPs holding copies of the ensemble members' weights."""
    nets = []
    for i in range(ens.num):
        in_dim = ens.linears[0].weight.shape[1]
        hidden = [lin.weight.shape[2] for lin in ens.linears]
        net = mlp(in_dim, hidden, ens.out_dim, layer_norm, activation)
        linears = [m for m in net if isinstance(m, nn.Linear)]
        norms = [m for m in net if isinstance(m, nn.LayerNorm)]
        with torch.no_grad():
            for lin, src in zip(linears, [*ens.linears, ens.head]):
                lin.weight.copy_(src.weight[i].T)
                lin.bias.copy_(src.bias[i, 0])
            for norm, src in zip(norms, ens.norms or []):
                norm.weight.copy_(src.weight[i, 0])
                norm.bias.copy_(src.bias[i, 0])
        nets.append(net)
    return nets


@pytest.mark.parametrize(("layer_norm", "activation"), [(True, "relu"), (False, "tanh"), (True, "gelu")])
def test_fused_ensemble_matches_separate_mlps(layer_norm: bool, activation: str) -> None:
    torch.manual_seed(0)
    ens = EnsembleMLP(5, 9, (32, 16), 1, layer_norm, activation)
    with torch.no_grad():  # non-trivial LayerNorm affine parameters
        for norm in ens.norms or []:
            norm.weight.uniform_(0.5, 1.5)
            norm.bias.uniform_(-0.5, 0.5)
    nets = separate_mlps(ens, layer_norm, activation)
    x = torch.randn(11, 9)
    expected = torch.stack([net(x).squeeze(-1) for net in nets])
    torch.testing.assert_close(ens(x), expected, rtol=1e-5, atol=1e-5)
    index = torch.tensor([3, 0])
    torch.testing.assert_close(ens(x, index), expected[index], rtol=1e-5, atol=1e-5)


def test_fused_ensemble_gradients_match_separate_mlps() -> None:
    torch.manual_seed(1)
    ens = EnsembleMLP(3, 6, (16, 16), 1, True, "relu")
    nets = separate_mlps(ens, True, "relu")
    x = torch.randn(7, 6)
    ens(x).square().sum().backward()
    sum(net(x).square().sum() for net in nets).backward()
    for i, net in enumerate(nets):
        torch.testing.assert_close(net[0].weight.grad, ens.linears[0].weight.grad[i].T, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(net[-1].bias.grad, ens.head.bias.grad[i, 0], rtol=1e-4, atol=1e-5)


def test_ensemble_members_are_initialised_independently() -> None:
    ens = EnsembleMLP(4, 8, (16,), 1)
    w = ens.linears[0].weight
    assert not torch.equal(w[0], w[1])
    assert w.abs().max() <= 1 / math.sqrt(8)


def test_detached_params_pass_gradients_to_inputs_only() -> None:
    ens = EnsembleMLP(3, 4, (8,), 1)
    x = torch.randn(5, 4, requires_grad=True)
    ens(x, detach_params=True).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    assert all(p.grad is None for p in ens.parameters())


def test_bfloat16_hidden_layers_track_float32_and_train_float32_params() -> None:
    torch.manual_seed(2)
    ens = EnsembleMLP(4, 9, (64, 64), 1, True, "relu")
    mixed = EnsembleMLP(4, 9, (64, 64), 1, True, "relu", compute_dtype=torch.bfloat16)
    mixed.load_state_dict(ens.state_dict())
    x = torch.randn(32, 9)
    exact, approx = ens(x), mixed(x)
    assert approx.dtype == torch.float32  # the head runs in float32
    assert not torch.equal(exact, approx)  # the hidden layers really ran in bfloat16
    torch.testing.assert_close(approx, exact, rtol=0.05, atol=0.05)
    approx.square().sum().backward()
    assert all(p.dtype == torch.float32 and p.grad is not None and p.grad.dtype == torch.float32
               for p in mixed.parameters())


def test_bfloat16_actor_keeps_float32_outputs_and_state_dict_keys() -> None:
    exact = make_actor()
    mixed = make_actor(compute_dtype=torch.bfloat16)
    assert mixed.state_dict().keys() == exact.state_dict().keys()
    x = torch.randn(16, 6)
    (m1, s1), (m2, s2) = exact.distribution(x), mixed.distribution(x)
    assert m2.dtype == s2.dtype == torch.float32 and not torch.equal(m1, m2)
    torch.testing.assert_close(m2, m1, rtol=0.05, atol=0.05)
    torch.testing.assert_close(s2, s1, rtol=0.05, atol=0.05)


def make_actor(
    low: float = -1.0, high: float = 1.0, dim: int = 3, compute_dtype: torch.dtype = torch.float32
) -> TanhGaussianActor:
    torch.manual_seed(0)
    lo, hi = torch.full((dim,), low), torch.full((dim,), high)
    return TanhGaussianActor(6, dim, (32, 32), False, "relu", -5.0, 2.0, lo, hi, compute_dtype)


@pytest.mark.parametrize(("low", "high"), [(-1.0, 1.0), (-2.0, 2.0), (0.0, 4.0)])
def test_actor_log_prob_matches_torch_distributions(low: float, high: float) -> None:
    actor = make_actor(low, high)
    x = torch.randn(64, 6)
    action, log_prob = actor.sample(x, torch.randn(64, 3, generator=torch.Generator().manual_seed(3)))
    assert action.shape == (64, 3) and log_prob.shape == (64,)
    assert (action >= low).all() and (action <= high).all()
    mean, log_std = actor.distribution(x)
    scale, bias = (high - low) / 2, (high + low) / 2
    dist = torch.distributions.TransformedDistribution(
        torch.distributions.Normal(mean, log_std.exp()),
        [torch.distributions.TanhTransform(), torch.distributions.AffineTransform(bias, scale)],
    )
    y = ((action - bias) / scale).clamp(-1 + 1e-6, 1 - 1e-6)
    expected = dist.log_prob(y * scale + bias).sum(-1)
    torch.testing.assert_close(log_prob, expected, rtol=1e-3, atol=1e-3)


def test_actor_log_std_is_bounded_and_deterministic_is_tanh_mean() -> None:
    actor = make_actor()
    x = torch.randn(16, 6) * 100
    mean, log_std = actor.distribution(x)
    assert (log_std >= -5.0).all() and (log_std <= 2.0).all()
    torch.testing.assert_close(actor.deterministic(x), torch.tanh(mean))


def test_gripper_class_mapping_uses_contract_thresholds() -> None:
    g = torch.tensor([-1.0, -0.5, -0.49, 0.0, 0.49, 0.5, 1.0])
    assert gripper_action_to_class(g).tolist() == [0, 0, 1, 1, 1, 2, 2]
    assert gripper_class_to_action(torch.tensor([0, 1, 2])).tolist() == [-1.0, 0.0, 1.0]
