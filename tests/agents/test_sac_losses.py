"""The maths of the SAC/RLPD losses, pinned on hand-checkable cases (critics forced to constants)."""

from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from agent_helpers import action_space, make_batch, set_constant_critics, set_constant_head, state_space

from robot_rl.agents.config import SACConfig
from robot_rl.agents.sac import SACAgent

SMALL = SACConfig(hidden_dims=(32, 32), gripper_hidden_dims=(16,))
CRITIC_VALUES = [5.0, 3.0, 7.0, 1.0, 9.0, 4.0, 8.0, 2.0, 6.0, 10.0]


def agent_with_constant_targets(config: SACConfig = SMALL) -> SACAgent:
    agent = SACAgent(config, state_space(5), action_space(3), seed=0)
    set_constant_critics(agent.target_critic, CRITIC_VALUES[: config.num_critics])
    return agent


def next_log_prob(agent: SACAgent, batch, rng_state: torch.Tensor) -> torch.Tensor:
    """Replays the actor sample that ``td_target`` drew from ``rng_state``."""
    agent.generator.set_state(rng_state)
    noise = agent.policy_noise(len(batch))
    _, log_prob = agent.sample_action(agent.encode(batch.next_obs), batch.next_obs, noise)
    return log_prob


def test_target_is_min_over_a_random_subset_of_size_m() -> None:
    agent = agent_with_constant_targets()
    batch = make_batch(state_space(5), 3)
    subsets: list[torch.Tensor] = []
    original = agent.target_subset

    def recording() -> torch.Tensor | None:
        subsets.append(original())
        return subsets[-1]

    agent.target_subset = recording  # type: ignore[method-assign]
    seen = set()
    for _ in range(20):
        target = agent.td_target(batch)
        subset = subsets[-1]
        assert subset is not None and len(subset) == 2 and len(set(subset.tolist())) == 2
        expected_min = min(CRITIC_VALUES[i] for i in subset.tolist())
        torch.testing.assert_close(target, batch.reward + batch.discount * expected_min)
        seen.add(tuple(sorted(subset.tolist())))
    assert len(seen) > 3  # the subset is resampled every call


def test_m_equal_n_uses_all_critics() -> None:
    agent = agent_with_constant_targets(dataclasses.replace(SMALL, num_critics=2, num_min_critics=2))
    batch = make_batch(state_space(5), 3)
    assert agent.target_subset() is None
    torch.testing.assert_close(agent.td_target(batch), batch.reward + batch.discount * 3.0)


def test_termination_masks_bootstrap_and_truncation_keeps_it() -> None:
    agent = agent_with_constant_targets(dataclasses.replace(SMALL, num_critics=2, num_min_critics=2))
    batch = make_batch(state_space(5), 3, batch=4)
    batch.discount = torch.tensor([0.0, 0.99, 0.0, 0.99])  # terminated, truncated (time limit), ...
    target = agent.td_target(batch)
    torch.testing.assert_close(target[[0, 2]], batch.reward[[0, 2]])  # terminal: no bootstrap at all
    torch.testing.assert_close(target[[1, 3]], batch.reward[[1, 3]] + 0.99 * 3.0)


def test_n_step_discount_is_used_as_given() -> None:
    agent = agent_with_constant_targets(dataclasses.replace(SMALL, num_critics=2, num_min_critics=2))
    batch = make_batch(state_space(5), 3, batch=3)
    batch.reward = torch.tensor([1.0, 1.0 + 0.9 + 0.81, 0.5])  # n-step sums, folded in by the replay
    batch.discount = torch.tensor([0.9, 0.9**3, 0.0])
    expected = torch.tensor([1.0 + 0.9 * 3.0, 2.71 + 0.729 * 3.0, 0.5])
    torch.testing.assert_close(agent.td_target(batch), expected)


def test_td_targets_are_clipped_to_the_return_bounds() -> None:
    cfg = dataclasses.replace(SMALL, num_critics=2, num_min_critics=2, td_target_min=-2.0, td_target_max=0.0)
    agent = agent_with_constant_targets(cfg)  # every target critic says 3
    batch = make_batch(state_space(5), 3, batch=3)
    batch.reward = torch.tensor([-1.0, -1.0, -9.0])
    batch.discount = torch.tensor([0.0, 0.9, 0.0])
    # -1 (terminal) stays; -1 + 0.9 * 3 = 1.7 is above any return and clips to 0; -9 clips to -2.
    torch.testing.assert_close(agent.td_target(batch), torch.tensor([-1.0, 0.0, -2.0]))
    with pytest.raises(ValueError, match="td_target_min"):
        dataclasses.replace(cfg, td_target_min=1.0)


def test_entropy_backup_changes_the_target_by_alpha_log_prob() -> None:
    cfg = dataclasses.replace(SMALL, num_critics=2, num_min_critics=2, init_temperature=0.5)
    plain = agent_with_constant_targets(cfg)
    backed = agent_with_constant_targets(dataclasses.replace(cfg, backup_entropy=True))
    batch = make_batch(state_space(5), 3, discount=1.0)
    state = plain.generator.get_state()
    backed.generator.set_state(state)
    diff = backed.td_target(batch) - plain.td_target(batch)
    log_prob = next_log_prob(plain, batch, state)
    torch.testing.assert_close(diff, -0.5 * log_prob)
    assert diff.abs().min() > 0


def test_actor_loss_uses_the_ensemble_mean() -> None:
    cfg = dataclasses.replace(SMALL, init_temperature=0.2)
    agent = SACAgent(cfg, state_space(5), action_space(3), seed=0)
    set_constant_critics(agent.critic, CRITIC_VALUES)  # mean 5.5, min 1
    batch = make_batch(state_space(5), 3)
    state = agent.generator.get_state()
    loss, metrics = agent.actor_loss(batch)
    agent.generator.set_state(state)
    _, log_prob = agent.sample_action(agent.encode(batch.obs), batch.obs, agent.policy_noise(len(batch)))
    torch.testing.assert_close(loss, (0.2 * log_prob).mean() - 5.5)
    torch.testing.assert_close(metrics["entropy"], -log_prob.mean())


def test_critic_loss_is_mean_squared_td_error_over_ensemble_and_batch() -> None:
    agent = agent_with_constant_targets(dataclasses.replace(SMALL, num_critics=2, num_min_critics=2))
    set_constant_critics(agent.critic, [1.0, 2.0])
    batch = make_batch(state_space(5), 3)
    target = batch.reward + batch.discount * 3.0
    loss, _ = agent.critic_loss(batch)
    torch.testing.assert_close(loss, ((1.0 - target) ** 2 + (2.0 - target) ** 2).mean() / 2)


def test_temperature_loss_pushes_alpha_toward_the_entropy_target() -> None:
    agent = SACAgent(SMALL, state_space(5), action_space(4), seed=0)
    assert agent.target_entropy == -2.0
    low_entropy = torch.full((8,), 5.0)  # log pi high -> entropy below target -> alpha must grow
    agent.temperature_loss(low_entropy).backward()
    assert agent.log_alpha.grad is not None and agent.log_alpha.grad < 0


def discrete_agent() -> SACAgent:
    cfg = dataclasses.replace(SMALL, gripper="discrete", num_critics=2, num_min_critics=2)
    return SACAgent(cfg, state_space(5), action_space(7), seed=0)


def test_gripper_target_is_double_dqn_with_grasp_penalty() -> None:
    agent = discrete_agent()
    assert agent.gripper_q is not None and agent.target_gripper_q is not None
    set_constant_head(agent.gripper_q, [1.0, 2.0, 3.0])  # online argmax: open (2)
    set_constant_head(agent.target_gripper_q, [10.0, 0.0, -5.0])  # target max would be 10 at close
    batch = make_batch(state_space(5), 7, batch=4)
    batch.discount = torch.tensor([0.9, 0.9, 0.0, 0.9])
    features = agent.encode_batch(batch)
    no_penalty = agent.gripper_td_target(batch, features)
    torch.testing.assert_close(no_penalty, batch.reward + batch.discount * -5.0)
    batch.extras["grasp_penalty"] = torch.tensor([-0.02, 0.0, -0.02, 0.0])
    with_penalty = agent.gripper_td_target(batch, features)
    torch.testing.assert_close(with_penalty, no_penalty + batch.extras["grasp_penalty"])


def test_gripper_loss_regresses_the_stored_action_class() -> None:
    agent = discrete_agent()
    assert agent.gripper_q is not None and agent.target_gripper_q is not None
    set_constant_head(agent.gripper_q, [1.0, 2.0, 3.0])
    set_constant_head(agent.target_gripper_q, [0.0, 0.0, 0.0])
    batch = make_batch(state_space(5), 7, batch=3)
    batch.action[:, -1] = torch.tensor([-0.9, 0.1, 0.7])  # close, stay, open
    loss, _ = agent.gripper_loss(batch)
    q_taken = torch.tensor([1.0, 2.0, 3.0])
    torch.testing.assert_close(loss, (q_taken - batch.reward).square().mean())


@pytest.mark.parametrize("num_critics", [10, 2])
def test_critic_sees_only_the_sac_action_dims(num_critics: int) -> None:
    cfg = dataclasses.replace(SMALL, gripper="discrete", num_critics=num_critics)
    agent = SACAgent(cfg, state_space(5), action_space(7), seed=0)
    assert agent.sac_dim == 6 and agent.critic.linears[0].weight.shape[1] == 5 + 6
    batch = make_batch(state_space(5), 7)
    agent.generator.manual_seed(0)
    loss_a, _ = agent.critic_loss(batch)
    batch.action[:, -1] = -batch.action[:, -1]  # the gripper column is the DQN head's business
    agent.generator.manual_seed(0)
    loss_b, _ = agent.critic_loss(batch)
    assert torch.isfinite(loss_a) and torch.equal(loss_a, loss_b)


def test_fixed_exploration_std_samples_at_that_std_with_no_entropy_term() -> None:
    cfg = dataclasses.replace(SMALL, exploration_std=0.3, init_temperature=0.2)
    agent = SACAgent(cfg, state_space(5), action_space(3), seed=0)
    batch = make_batch(state_space(5), 3)
    features = agent.encode(batch.obs)
    mean, log_std = agent.actor.distribution(features)
    torch.testing.assert_close(log_std, torch.full_like(mean, math.log(0.3)))
    noise = agent.policy_noise(len(batch))
    action, _ = agent.sample_action(features, batch.obs, noise)
    torch.testing.assert_close(action, torch.tanh(mean + 0.3 * noise))  # action_space(3) is [-1, 1]
    set_constant_critics(agent.critic, CRITIC_VALUES)
    loss, _ = agent.actor_loss(batch)
    torch.testing.assert_close(loss, torch.tensor(-5.5))  # -mean Q only: alpha is 0
    log_alpha = agent.log_alpha.detach().clone()
    metrics = agent.update(lambda: make_batch(state_space(5), 3))
    assert metrics["alpha"] == 0.0 and "temperature_loss" not in metrics
    torch.testing.assert_close(agent.log_alpha.detach(), log_alpha)  # the temperature is not learned


def test_exploration_std_must_be_positive() -> None:
    with pytest.raises(ValueError, match="exploration_std"):
        SACConfig(exploration_std=0.0)
