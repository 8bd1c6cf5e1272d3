"""The distributional (C51) critic: the projection on hand-checked cases, the TD target distribution of the
pessimistic critic, the cross-entropy loss, and a distributional agent that learns."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
from agent_helpers import action_space, make_batch, state_space
from test_sac_learning import RECIPE, point_reaching_returns

from robot_rl.agents.config import SACConfig
from robot_rl.agents.distributional import expected, project
from robot_rl.agents.sac import SACAgent

ATOMS = torch.tensor([0.0, 0.5, 1.0])
C51 = SACConfig(hidden_dims=(32, 32), num_critics=4, num_min_critics=2, critic_atoms=3, critic_v_min=0.0,
                critic_v_max=1.0)


def test_a_moved_atom_is_split_between_its_neighbours_by_closeness() -> None:
    probs = torch.tensor([[0.0, 1.0, 0.0]])
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0) + 0.25, ATOMS), torch.tensor([[0.0, 0.5, 0.5]]))
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0) + 0.125, ATOMS), torch.tensor([[0.0, 0.75, 0.25]]))


def test_an_atom_landing_on_an_atom_keeps_all_its_mass_there() -> None:
    probs = torch.tensor([[0.2, 0.3, 0.5]])
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0), ATOMS), probs)
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0) * 0 + 0.5, ATOMS), torch.tensor([[0.0, 1.0, 0.0]]))


def test_mass_beyond_the_support_goes_to_its_ends() -> None:
    probs = torch.tensor([[0.2, 0.3, 0.5]])
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0) + 5.0, ATOMS), torch.tensor([[0.0, 0.0, 1.0]]))
    torch.testing.assert_close(project(probs, ATOMS.unsqueeze(0) - 5.0, ATOMS), torch.tensor([[1.0, 0.0, 0.0]]))


def test_projection_keeps_mass_and_the_mean_inside_the_support() -> None:
    gen = torch.Generator().manual_seed(0)
    atoms = torch.linspace(-1, 1, 51)
    probs = torch.rand(64, 51, generator=gen).softmax(-1)
    reward, discount = torch.rand(64, 1, generator=gen) * 0.2 - 0.1, torch.full((64, 1), 0.8)
    moved = reward + discount * atoms
    out = project(probs, moved, atoms)
    torch.testing.assert_close(out.sum(-1), torch.ones(64))
    torch.testing.assert_close(out @ atoms, (probs * moved).sum(-1))


def set_target_logits(agent: SACAgent, logits: torch.Tensor) -> None:
    """Make target critic i output ``logits[i]`` [K] for every input."""
    head = agent.target_critic.head
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(logits.view(logits.shape[0], 1, -1))


def test_the_target_is_the_projected_distribution_of_the_subset_critic_with_the_lowest_mean() -> None:
    agent = SACAgent(C51, state_space(5), action_space(3), seed=0)
    logits = torch.tensor([[0.0, 0.0, 3.0], [3.0, 0.0, 0.0], [0.0, 3.0, 0.0], [1.0, 1.0, 1.0]])  # means differ
    set_target_logits(agent, logits)
    batch = make_batch(state_space(5), 3, discount=0.9)
    batch.reward = torch.rand(len(batch)) * 0.1
    for _ in range(10):
        state = agent.generator.get_state()
        subset = agent.draw_critic(len(batch)).target_subset  # the draws td_target takes next
        agent.generator.set_state(state)
        target = agent.td_target(batch)
        chosen = min(subset.tolist(), key=lambda i: float(expected(logits[i], ATOMS)))
        want = project(logits[chosen].softmax(-1).expand(len(batch), 3),
                       batch.reward.unsqueeze(-1) + batch.discount.unsqueeze(-1) * ATOMS, ATOMS)
        torch.testing.assert_close(target, want)


def test_critic_loss_is_the_cross_entropy_to_the_target_and_q_is_the_mean() -> None:
    agent = SACAgent(C51, state_space(5), action_space(3), seed=0)
    batch = make_batch(state_space(5), 3)
    state = agent.generator.get_state()
    loss, metrics = agent.critic_loss(batch)
    agent.generator.set_state(state)
    target = agent.td_target(batch)
    features = agent.encode(batch.obs)
    out = agent.critic(torch.cat([features, batch.action], -1))
    assert out.shape == (4, len(batch), 3)
    torch.testing.assert_close(loss, -(target * out.log_softmax(-1)).sum(-1).mean())
    torch.testing.assert_close(metrics["q_mean"], expected(out, ATOMS).mean())


@pytest.mark.slow
def test_a_distributional_agent_learns_point_reaching() -> None:
    """The scalar agent's end-to-end task with a 51-atom critic on the task's returns (-dist per step, at most
    10 steps at discount 0.9: within [-15, 0])."""
    config = dataclasses.replace(RECIPE, critic_atoms=51, critic_v_min=-15.0, critic_v_max=0.0)
    before, after = point_reaching_returns(config)
    assert after > -1.5 and after > before + 4.0, (before, after)


@pytest.mark.parametrize("field, value", [("critic_atoms", 1), ("critic_v_min", 2.0), ("critic_v_max", np.inf)])
def test_a_bad_support_is_refused_naming_the_field(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field if field != "critic_v_max" else "critic_v_min"):
        dataclasses.replace(C51, **{field: value})


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # emitted inside torch.compile
def test_the_compiled_distributional_step_matches_eager() -> None:
    from test_sac_agent import assert_same_state

    eager = SACAgent(C51, state_space(5), action_space(3), seed=0)
    compiled = SACAgent(dataclasses.replace(C51, compile="on"), state_space(5), action_space(3), seed=0)
    batches = [make_batch(state_space(5), 3, seed=i) for i in range(C51.utd_ratio * 2)]
    first, second = iter(batches), iter(batches)
    for _ in range(2):
        eager.update(lambda: next(first))
        compiled.update(lambda: next(second))
    assert_same_state(eager, compiled)
