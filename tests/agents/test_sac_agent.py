"""SACAgent mechanics: UTD loop, targets, acting, pixels, hooks, checkpoints."""

from __future__ import annotations

import copy
import dataclasses
import io

import gymnasium as gym
import numpy as np
import pytest
import torch
from agent_helpers import action_space, make_batch, pixel_space, state_space

from robot_rl.agents.config import SACConfig
from robot_rl.agents.sac import SACAgent
from robot_rl.data.batch import Batch

SMALL = SACConfig(hidden_dims=(32, 32), gripper_hidden_dims=(16,), image_latent_dim=16, proprio_latent_dim=8)
PIXEL = dataclasses.replace(SMALL, cnn_channels=(8, 8, 8, 8), num_critics=2)


def sampler(space: gym.spaces.Dict, action_dim: int, seed: int = 0):
    """A deterministic stream of random batches, counting how often it was called."""
    calls = [0]

    def sample() -> Batch:
        calls[0] += 1
        return make_batch(space, action_dim, batch=8, seed=seed + calls[0])

    return sample, calls


def params(module: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in module.parameters()]


def test_update_runs_utd_critic_updates_then_one_actor_update() -> None:
    agent = SACAgent(dataclasses.replace(SMALL, utd_ratio=3), state_space(5), action_space(3))
    sample, calls = sampler(state_space(5), 3)
    metrics = agent.update(sample)
    assert calls[0] == 3 and agent.num_critic_updates == 3 and agent.num_actor_updates == 1
    for key in ("critic_loss", "actor_loss", "alpha", "entropy", "q_mean", "q_max", "temperature_loss"):
        assert isinstance(metrics[key], float) and np.isfinite(metrics[key])


def test_polyak_target_update_after_each_critic_step() -> None:
    cfg = dataclasses.replace(SMALL, tau=0.1, utd_ratio=1)
    agent = SACAgent(cfg, state_space(5), action_space(3))
    target_before = params(agent.target_critic)
    batch = agent.prepare_batch(make_batch(state_space(5), 3))
    agent.update_critic(batch)
    online = agent.critic.parameters()
    for t_old, t_new, o in zip(target_before, agent.target_critic.parameters(), online):
        torch.testing.assert_close(t_new, t_old + 0.1 * (o.detach() - t_old))


def test_actor_update_leaves_critics_and_encoder_alone() -> None:
    agent = SACAgent(PIXEL, pixel_space(64), action_space(3))
    critic, encoder = params(agent.critic), params(agent.encoder)
    actor = params(agent.actor)
    agent.update_actor(agent.prepare_batch(make_batch(pixel_space(64), 3)))
    assert all(torch.equal(a, b) for a, b in zip(critic, agent.critic.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(encoder, agent.encoder.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(actor, agent.actor.parameters()))
    assert all(p.grad is None for p in agent.encoder.parameters())


def test_pixel_update_trains_the_encoder_through_the_critic() -> None:
    space = pixel_space(64, cameras=("front", "wrist"))
    agent = SACAgent(dataclasses.replace(PIXEL, utd_ratio=2), space, action_space(3))
    encoder = params(agent.encoder)
    target_encoder = params(agent.target_encoder)
    sample, _ = sampler(space, 3)
    metrics = agent.update(sample)
    assert np.isfinite(metrics["critic_loss"])
    assert not all(torch.equal(a, b) for a, b in zip(encoder, agent.encoder.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(target_encoder, agent.target_encoder.parameters()))


def test_update_augments_images_and_applies_batch_transform() -> None:
    seen: list[Batch] = []

    def transform(batch: Batch) -> Batch:
        seen.append(batch)
        return dataclasses.replace(batch, reward=batch.reward + 1.0)

    space = pixel_space(64)
    agent = SACAgent(PIXEL, space, action_space(3), batch_transform=transform)
    raw = make_batch(space, 3)
    prepared = agent.prepare_batch(raw)
    assert seen and torch.equal(prepared.reward, raw.reward + 1.0)
    assert not torch.equal(prepared.obs["images/front"], raw.obs["images/front"])
    assert torch.equal(prepared.obs["state"], raw.obs["state"])
    plain = SACAgent(dataclasses.replace(PIXEL, image_augmentation=False), space, action_space(3))
    assert torch.equal(plain.prepare_batch(raw).obs["images/front"], raw.obs["images/front"])


def test_act_shapes_bounds_and_determinism() -> None:
    low, high = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)
    space = gym.spaces.Box(low, high, dtype=np.float32)
    agent = SACAgent(SMALL, state_space(3), space)
    obs = {"state": np.array([0.1, -0.2, 0.3], np.float32)}
    a = agent.act(obs, deterministic=True)
    assert a.shape == (2,) and a.dtype == np.float32
    assert np.array_equal(a, agent.act(obs, deterministic=True))
    samples = np.stack([agent.act(obs) for _ in range(50)])
    assert (samples >= low).all() and (samples <= high).all() and samples.std(0).min() > 0


def test_discrete_gripper_acts_in_minus_one_zero_one() -> None:
    cfg = dataclasses.replace(SMALL, gripper="discrete", gripper_epsilon=0.5)
    agent = SACAgent(cfg, state_space(5), action_space(7))
    obs = {"state": np.zeros(5, np.float32)}
    greedy = agent.act(obs, deterministic=True)
    assert greedy.shape == (7,) and greedy[-1] in (-1.0, 0.0, 1.0)
    grip = {float(agent.act(obs)[-1]) for _ in range(60)}
    assert grip == {-1.0, 0.0, 1.0}  # epsilon-greedy explores every class
    assert np.array_equal(agent.act(obs, deterministic=True), greedy)


def test_discrete_gripper_needs_seven_dims() -> None:
    with pytest.raises(ValueError, match=r"SACConfig\.gripper"):
        SACAgent(dataclasses.replace(SMALL, gripper="discrete"), state_space(5), action_space(4))


def test_any_action_dim_and_several_state_keys() -> None:
    space = gym.spaces.Dict(
        {"b": gym.spaces.Box(-1, 1, (2,), np.float32), "a": gym.spaces.Box(-1, 1, (3,), np.float32)}
    )
    agent = SACAgent(dataclasses.replace(SMALL, utd_ratio=1), space, action_space(1))
    sample, _ = sampler(space, 1)
    assert np.isfinite(agent.update(sample)["critic_loss"])
    assert agent.act({"a": np.zeros(3), "b": np.zeros(2)}).shape == (1,)


def test_discrete_gripper_update_trains_the_head() -> None:
    cfg = dataclasses.replace(SMALL, gripper="discrete", utd_ratio=2)
    agent = SACAgent(cfg, state_space(5), action_space(7))
    assert agent.gripper_q is not None
    head = params(agent.gripper_q)
    metrics = agent.update(sampler(state_space(5), 7)[0])
    assert np.isfinite(metrics["gripper_loss"])
    assert not all(torch.equal(a, b) for a, b in zip(head, agent.gripper_q.parameters()))


def roundtrip(state: dict) -> dict:
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


@pytest.mark.parametrize("pixels", [False, True])
def test_checkpoint_round_trip_gives_identical_actions_and_updates(pixels: bool) -> None:
    space = pixel_space(64) if pixels else state_space(5)
    cfg = dataclasses.replace(PIXEL if pixels else SMALL, gripper="discrete", utd_ratio=2)
    agent = SACAgent(cfg, space, action_space(7), seed=1)
    sample, _ = sampler(space, 7)
    for _ in range(2):
        agent.update(sample)
    saved = roundtrip(agent.state_dict())
    restored = SACAgent(cfg, space, action_space(7), seed=99)
    restored.load_state_dict(saved)
    obs = {k: v[0].numpy() for k, v in make_batch(space, 7, batch=1).obs.items()}
    for deterministic in (True, False, False):
        assert np.array_equal(agent.act(obs, deterministic), restored.act(obs, deterministic))
    sample_a, _ = sampler(space, 7, seed=50)
    sample_b, _ = sampler(space, 7, seed=50)
    assert agent.update(sample_a) == restored.update(sample_b)
    for name, module in agent._modules().items():
        other = restored._modules()[name].state_dict()
        assert all(torch.equal(v, other[k]) for k, v in module.state_dict().items()), name
    assert restored.num_critic_updates == agent.num_critic_updates == 6


def test_actor_state_dict_is_enough_to_act() -> None:
    cfg = dataclasses.replace(SMALL, gripper="discrete", utd_ratio=1)
    learner = SACAgent(cfg, state_space(5), action_space(7), seed=0)
    learner.update(sampler(state_space(5), 7)[0])
    state = roundtrip(learner.actor_state_dict())
    assert set(state) == {"encoder", "actor", "gripper_q"}
    actor = SACAgent(cfg, state_space(5), action_space(7), seed=5)
    actor.load_actor_state_dict(state)
    obs = {"state": np.linspace(-1, 1, 5, dtype=np.float32)}
    assert np.array_equal(learner.act(obs, True), actor.act(obs, True))


def test_seed_controls_initialisation_without_touching_global_rng() -> None:
    torch.manual_seed(123)
    expected = torch.rand(1)
    torch.manual_seed(123)
    a = SACAgent(SMALL, state_space(5), action_space(3), seed=7)
    assert torch.equal(torch.rand(1), expected)
    b = SACAgent(SMALL, state_space(5), action_space(3), seed=7)
    c = SACAgent(SMALL, state_space(5), action_space(3), seed=8)
    assert torch.equal(a.critic.head.weight, b.critic.head.weight)
    assert not torch.equal(a.critic.head.weight, c.critic.head.weight)


def test_gradient_clipping_bounds_the_update() -> None:
    cfg = dataclasses.replace(SMALL, max_grad_norm=1e-3, utd_ratio=1)
    agent = SACAgent(cfg, state_space(5), action_space(3))
    batch = agent.prepare_batch(make_batch(state_space(5), 3))
    batch.reward = batch.reward * 1e3
    agent.update_critic(batch)
    norm = torch.nn.utils.get_total_norm([p.grad for p in agent.critic.parameters()])
    assert norm <= 1e-3 * 1.01


def assert_same_state(a: SACAgent, b: SACAgent, tol: float = 1e-5) -> None:
    """Networks, Adam moments and step counts, and the temperature agree to ``tol``."""
    sa, sb = a.state_dict(), b.state_dict()
    for name, module in sa["modules"].items():
        for key, value in module.items():
            torch.testing.assert_close(sb["modules"][name][key], value, atol=tol, rtol=tol, msg=f"{name}.{key}")
    for name, optimizer in sa["optimizers"].items():
        assert optimizer["state"].keys() == sb["optimizers"][name]["state"].keys(), name
        for index, state in optimizer["state"].items():
            for key, value in state.items():
                other = sb["optimizers"][name]["state"][index][key]
                torch.testing.assert_close(other, value, atol=tol, rtol=tol, msg=f"{name}[{index}].{key}")
    torch.testing.assert_close(sb["log_alpha"], sa["log_alpha"], atol=tol, rtol=tol)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # emitted inside torch.compile
def test_compiled_steps_match_eager_and_share_checkpoints() -> None:
    """Every optimiser (critic + encoder, gripper head, actor, temperature), clipping and Polyak: the compiled
    steps take the eager steps' random draws and land on the same parameters and Adam state; a checkpoint
    moves between the two paths in either direction."""
    cfg = SACConfig(hidden_dims=(16, 16), num_critics=3, utd_ratio=2, gripper="discrete", max_grad_norm=0.5)
    eager = SACAgent(cfg, state_space(5), action_space(7), seed=0)
    compiled = SACAgent(dataclasses.replace(cfg, compile="on"), state_space(5), action_space(7), seed=0)
    batches = [make_batch(state_space(5), 7, seed=i) for i in range(6)]
    first, second = iter(batches), iter(batches)
    for _ in range(2):
        m_eager, m_compiled = eager.update(lambda: next(first)), compiled.update(lambda: next(second))
        assert m_eager.keys() == m_compiled.keys()
        for key, value in m_eager.items():
            assert abs(value - m_compiled[key]) <= 1e-4 * (1 + abs(value)), key
    assert_same_state(eager, compiled)
    assert compiled.num_critic_updates == 4 and compiled.num_actor_updates == 2

    resumed = SACAgent(cfg, state_space(5), action_space(7), seed=5)  # eager, from the compiled checkpoint
    resumed.load_state_dict(copy.deepcopy(compiled.state_dict()))  # state dicts share the live tensors
    compiled.load_state_dict(copy.deepcopy(eager.state_dict()))  # and the compiled agent from the eager one
    third, fourth = iter(batches[4:]), iter(batches[4:])
    resumed.update(lambda: next(third))
    compiled.update(lambda: next(fourth))
    assert_same_state(resumed, compiled)


def test_compile_without_a_cpp_compiler_fails_at_construction(monkeypatch) -> None:
    monkeypatch.setattr("shutil.which", lambda name: None)
    with pytest.raises(RuntimeError, match=r"needs a C\+\+ compiler"):
        SACAgent(dataclasses.replace(SMALL, compile="on"), state_space(5), action_space(3))


def test_auto_compiles_long_runs_where_a_compiler_is_found_and_says_why_otherwise(monkeypatch) -> None:
    """``compile="auto"`` (the default): compiled for a run long enough to earn its compile time back; eager,
    with the reason in one line, for short runs, unknown lengths (an agent loaded to act) and without a
    compiler."""
    from robot_rl.agents.compiled_steps import AUTO_COMPILE_MIN_UPDATES, compile_decision

    cpu, auto = torch.device("cpu"), SACConfig()
    assert auto.compile == "auto"
    monkeypatch.setattr("shutil.which", lambda name: f"/usr/bin/{name}")
    compiled, line = compile_decision(auto, cpu, AUTO_COMPILE_MIN_UPDATES)
    assert compiled and "compiled" in line and "20-40 s" in line
    for short in (AUTO_COMPILE_MIN_UPDATES - 1, None):
        compiled, line = compile_decision(auto, cpu, short)
        assert not compiled and "eager" in line and "--agent.compile on" in line
    assert compile_decision(dataclasses.replace(auto, compile="off"), cpu, 10**9)[0] is False
    monkeypatch.setattr("shutil.which", lambda name: None)
    compiled, line = compile_decision(auto, cpu, 10**9)
    assert not compiled and "no C++ compiler" in line
    agent = SACAgent(SMALL, state_space(5), action_space(3), planned_updates=10**9)  # falls back, does not fail
    assert agent._compiled is None and agent.compile_note == line


@pytest.mark.parametrize("native", [False, True])
def test_bfloat16_on_a_cpu_without_native_support_warns(monkeypatch, recwarn, native: bool) -> None:
    """Emulated bfloat16 made updates 13x slower on an AVX2 CPU: the user is told, not left to find out."""
    monkeypatch.setattr("robot_rl.agents.sac.cpu_has_native_bfloat16", lambda: native)
    SACAgent(dataclasses.replace(SMALL, precision="bfloat16"), state_space(5), action_space(3))
    SACAgent(SMALL, state_space(5), action_space(3))  # float32 never warns
    slow = [w for w in recwarn if "precision='bfloat16'" in str(w.message)]
    assert len(slow) == (0 if native else 1)
    if slow:
        assert "AVX512-BF16" in str(slow[0].message) and "precision='float32'" in str(slow[0].message)


def test_anchor_holds_the_actor_near_the_policy_it_started_from() -> None:
    """Fine-tuning's anchor: the same actor steps move the deterministic action away from where it started, far
    less with the anchor; it is checkpointed, and a checkpoint saved without one anchors at its own actor."""
    space, batch = state_space(5), make_batch(state_space(5), 3, batch=64, seed=3)

    def drift(weight: float) -> tuple[float, SACAgent]:
        agent = SACAgent(dataclasses.replace(SMALL, anchor_weight=weight, compile="off"), space, action_space(3))
        agent.anchor_here()
        features = agent.encode(agent.prepare_batch(batch).obs).detach()
        start = agent.actor.deterministic(features).detach()
        for _ in range(40):
            metrics = agent.update_actor(agent.prepare_batch(batch))
        assert ("anchor_distance" in metrics) == (weight > 0)
        return float((agent.actor.deterministic(features).detach() - start).square().sum(-1).mean()), agent

    free, _ = drift(0.0)
    held, anchored = drift(50.0)
    assert free > 1e-3 and held < 0.25 * free, (free, held)

    restored = SACAgent(dataclasses.replace(SMALL, anchor_weight=1.0), space, action_space(3), seed=9)
    restored.load_state_dict(anchored.state_dict())
    for key, value in anchored.anchor.state_dict().items():
        assert torch.equal(restored.anchor.state_dict()[key], value), key
    plain = SACAgent(SMALL, space, action_space(3), seed=5)
    restored.load_state_dict(plain.state_dict())  # no anchor in it: the loaded actor becomes the anchor
    for key, value in plain.actor.state_dict().items():
        assert torch.equal(restored.anchor.state_dict()[key], value), key
    with pytest.raises(ValueError, match="anchor_weight must be a finite number >= 0"):
        dataclasses.replace(SMALL, anchor_weight=-1.0)
