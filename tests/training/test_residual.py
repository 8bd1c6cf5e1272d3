"""Residual RL over a frozen base policy: the untrained residual acts exactly as its base, the correction never
leaves its bound, the base is never trained, the actor waits for the critic's warm-up, and a run rebuilds its
base and residual from its folder (refusing a base file that changed or is gone)."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from robot_rl.agents.config import SACConfig
from robot_rl.agents.policy import ActingPolicy
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import BASE_ACTION
from robot_rl.training.base_policy import base_of, base_policy_digest, with_base_actions
from robot_rl.training.config import PRESETS, TrainConfig
from robot_rl.training.core import load_run_config
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.loop import Trainer, load_agent, load_policy

SMALL = dataclasses.replace(PRESETS["residual"], hidden_dims=(32, 32), utd_ratio=2, critic_warmup_updates=0,
                            compile="off")


class LinearBase(nn.Module):
    """A fixed base on reach's state: tanh of a linear map (its weights are what must stay frozen)."""

    def __init__(self) -> None:
        super().__init__()
        self.map = nn.Linear(22, 7)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        return torch.tanh(self.map(obs["state"]))


def torchscript_base(path: Path, seed: int = 0) -> Path:
    torch.manual_seed(seed)
    with warnings.catch_warnings():  # deprecated, still what most users export
        warnings.simplefilter("ignore", DeprecationWarning)
        torch.jit.script(LinearBase()).save(str(path))
    return path


def env_config(base: str, **kw: object) -> EnvConfig:
    return EnvConfig(task="reach", base_policy=base, **kw)  # type: ignore[arg-type]


def observations(env, n: int = 5) -> list[dict[str, np.ndarray]]:
    out, (obs, _) = [], env.reset(seed=11)
    for _ in range(n):
        out.append(obs)
        obs, *_ = env.step(env.action_space.sample())
    return out


def test_the_untrained_residual_acts_exactly_as_its_base_and_scale_zero_is_the_base(tmp_path: Path) -> None:
    env = make_env_from_config(env_config(str(torchscript_base(tmp_path / "base.pt"))))
    assert env.observation_space[BASE_ACTION].shape == (7,)
    policy = ActingPolicy(SMALL, env.observation_space, env.action_space, seed=4)
    frozen = ActingPolicy(dataclasses.replace(SMALL, residual_scale=0.0), env.observation_space, env.action_space)
    blind = ActingPolicy(dataclasses.replace(SMALL, residual_observe_base=False), env.observation_space,
                         env.action_space)
    fixed_std = ActingPolicy(dataclasses.replace(SMALL, exploration_std=0.25), env.observation_space,
                             env.action_space)
    assert blind.encoder.state_dim == policy.encoder.state_dim - 7  # the composition alone reads the base
    for obs in observations(env):
        np.testing.assert_array_equal(policy.act(obs, deterministic=True), obs[BASE_ACTION])
        np.testing.assert_array_equal(fixed_std.act(obs, deterministic=True), obs[BASE_ACTION])
        np.testing.assert_array_equal(frozen.act(obs, deterministic=False), obs[BASE_ACTION])
        sampled = policy.act(obs, deterministic=False)
        assert np.all(np.abs(sampled - obs[BASE_ACTION]) <= SMALL.residual_scale + 1e-6)


def test_the_correction_stays_within_its_bound_for_any_actor_output(tmp_path: Path) -> None:
    env = make_env_from_config(env_config("expert"))
    policy = ActingPolicy(SMALL, env.observation_space, env.action_space, seed=1)
    with torch.no_grad():
        for p in policy.actor.parameters():
            p.normal_(0.0, 30.0)  # a saturated actor: r at +-1 everywhere
    rng = np.random.default_rng(0)
    obs = {k: torch.as_tensor(rng.uniform(-1, 1, (256, *s.shape)), dtype=torch.float32)
           for k, s in env.observation_space.spaces.items()}
    obs[BASE_ACTION] = torch.as_tensor(rng.uniform(-1, 1, (256, 7)), dtype=torch.float32)
    for deterministic in (True, False):
        action = policy.act_batch(obs, deterministic)
        correction = (action - obs[BASE_ACTION]).abs()
        assert correction.max() <= SMALL.residual_scale + 1e-6
        assert action.abs().max() <= 1.0  # and inside the action box
        assert correction.max() > 0.9 * SMALL.residual_scale  # the bound is reached, not just respected


def test_the_gripper_latch_has_its_own_bound_so_the_residual_can_flip_it() -> None:
    """Under the arm's 0.2 bound a base's close (-1) stays a close (<= -0.5); with the gripper's own bound of 1.5
    the residual reaches open (+0.5) from close and close from open, while the arm dims keep 0.2."""
    env = make_env_from_config(env_config("expert"))
    obs = {k: torch.zeros((2, *s.shape)) for k, s in env.observation_space.spaces.items()}
    obs[BASE_ACTION] = torch.tensor([[0.0] * 6 + [-1.0], [0.0] * 6 + [1.0]])
    for gripper_scale, reach in ((None, (-0.8, 0.8)), (1.5, (0.5, -0.5))):
        policy = ActingPolicy(dataclasses.replace(SMALL, residual_gripper_scale=gripper_scale),
                              env.observation_space, env.action_space, seed=1)
        toward = torch.tensor([[1.0], [-1.0]])  # r at its limit, toward the other latch command
        action = policy.compose(toward.expand(2, 7), obs)
        np.testing.assert_allclose(action[:, 6].numpy(), reach, atol=1e-6)
        np.testing.assert_allclose(action[:, :6].abs().numpy(), SMALL.residual_scale, atol=1e-6)
    with pytest.raises(ValueError, match="residual_gripper_scale"):
        SACConfig(residual_gripper_scale=1.5)  # without a residual


def tiny_run(run: Path, base: str, steps: int = 120, **agent: object) -> TrainConfig:
    return TrainConfig.from_preset(
        "residual", env=env_config(base), total_env_steps=steps, learning_starts=40, batch_size=32,
        eval_every=10_000, eval_episodes=1, scripted_demos=2, seed=2, torch_threads=1, progress=False,
        run_dir=run, agent=dataclasses.replace(SMALL, **agent))


def test_training_moves_the_residual_never_the_base_and_the_run_rebuilds_both(tmp_path: Path) -> None:
    base_file = torchscript_base(tmp_path / "base.pt")
    before = base_file.read_bytes()
    trainer = Trainer(tiny_run(tmp_path / "run", str(base_file)))
    trainer.run()
    assert base_file.read_bytes() == before
    base = base_of(trainer.env)
    assert base is not None
    assert not any(p.requires_grad for p in base.base.module.parameters())
    assert trainer.agent.num_actor_updates > 0
    assert load_run_config(tmp_path / "run").env.base_policy_sha256 == base_policy_digest(str(base_file))

    agent, _ = load_agent(tmp_path / "run")
    policy, cfg = load_policy(tmp_path / "run")
    env = make_env_from_config(cfg.env)
    for obs in observations(env):
        action = policy.act(obs, deterministic=True)
        np.testing.assert_array_equal(action, agent.act(obs, deterministic=True))
        np.testing.assert_array_equal(action, trainer.agent.act(obs, deterministic=True))
        assert not np.array_equal(action, obs[BASE_ACTION])  # trained: it does correct the base
    metrics = trainer.agent.update(lambda: trainer.sampler.sample(32, "cpu"))
    assert 0.0 < metrics["residual_of_bound"] <= 1.0

    # the robot's policy actor: its env has no base action; the checkpoint's base runs there and adds it
    from robot_rl.ros.actor import POLICIES, PolicyActorConfig

    robot_env = make_env_from_config(EnvConfig(task="reach"))
    on_robot = POLICIES["checkpoint"](PolicyActorConfig(policy="checkpoint", checkpoint=str(tmp_path / "run")),
                                      robot_env)
    (plain, _), (based, _) = robot_env.reset(seed=5), env.reset(seed=5)
    on_robot.reset()  # type: ignore[attr-defined]
    np.testing.assert_array_equal(on_robot.act(plain), policy.act(based, deterministic=True))

    torchscript_base(base_file, seed=1)  # another base under the same name
    with pytest.raises(ValueError, match=r"base policy .*base.pt' has changed since the run started"):
        load_policy(tmp_path / "run")
    base_file.unlink()
    with pytest.raises(FileNotFoundError, match=r"base policy .*base.pt.*no such file"):
        load_policy(tmp_path / "run")


def test_the_actor_waits_for_the_critic_warm_up(tmp_path: Path) -> None:
    trainer = Trainer(tiny_run(tmp_path / "run", "expert", steps=60, critic_warmup_updates=30))
    trainer.run()  # 21 update calls of 2 critic updates: the actor starts after the 15th
    assert trainer.agent.num_critic_updates == 42
    assert trainer.agent.num_actor_updates == 42 // 2 - 15


def test_demos_without_base_actions_get_them_and_the_expert_base_refuses(tmp_path: Path) -> None:
    env = make_env_from_config(env_config(str(torchscript_base(tmp_path / "base.pt"))))
    frames = observations(env, 4)
    plain = {k: np.stack([f[k] for f in frames]) for k in frames[0] if k != BASE_ACTION}
    demo = Episode(observations=plain, actions=np.zeros((3, 7), np.float32), rewards=np.zeros(3, np.float32),
                   terminated=False, truncated=True, infos={})
    filled = with_base_actions(demo, base_of(env), "demo 0")
    np.testing.assert_allclose(filled.observations[BASE_ACTION], np.stack([f[BASE_ACTION] for f in frames]),
                               atol=1e-6)
    expert_env = make_env_from_config(env_config("expert"))
    with pytest.raises(ValueError, match=r"demo 0: .*'expert' needs the simulator"):
        with_base_actions(demo, base_of(expert_env), "demo 0")


def test_a_base_and_a_residual_come_together(tmp_path: Path) -> None:
    cfg = tiny_run(tmp_path / "run", "expert")
    with pytest.raises(ValueError, match="residual learner and a base policy go together"):
        Trainer(dataclasses.replace(cfg, agent=dataclasses.replace(cfg.agent, residual_scale=None)))
    plain = make_env_from_config(EnvConfig(task="reach"))
    with pytest.raises(ValueError, match="needs a 'base_action' observation"):
        ActingPolicy(SMALL, plain.observation_space, plain.action_space)
    with pytest.raises(ValueError, match=r"base noise 0\.3 degrades the scripted expert only"):
        make_env_from_config(env_config(str(torchscript_base(tmp_path / "b.pt")), base_noise=0.3))
    with pytest.raises(ValueError, match="gripper"):
        SACConfig(residual_scale=0.1, gripper="discrete")


def test_record_clone_and_correct_from_the_command_line_with_an_actor_process(tmp_path: Path) -> None:
    """The user's path: demos -> ``train-bc`` -> a residual over that BC run, trained by a learner with one
    actor process (the base runs in the actor, its action crosses the link as an observation)."""
    from robot_rl.cli import main

    demos, bc, run = tmp_path / "demos", tmp_path / "bc", tmp_path / "run"
    assert main(["record-demos", "--task", "reach", "--episodes", "2", "--out", str(demos)]) == 0
    assert main(["train-bc", "--demos", str(demos), "--task", "reach", "--steps", "50", "--eval-episodes", "1",
                 "--hidden-dims", "32", "32", "--torch-threads", "1", "--run-dir", str(bc)]) == 0
    assert main(["train", "--actors", "1", "--task", "reach", "--preset", "residual", "--base-policy", str(bc),
                 "--demos", str(demos), "--total-env-steps", "120", "--eval-every", "120", "--run-dir", str(run),
                 "--agent.hidden-dims", "32", "32", "--agent.utd-ratio", "1", "--agent.critic-warmup-updates", "0",
                 "--batch-size", "32", "--learning-starts", "50", "--eval-episodes", "1", "--torch-threads", "1",
                 "--no-progress"]) == 0
    cfg = load_run_config(run)
    assert cfg.env.base_policy == str(bc) and cfg.env.base_policy_sha256 == base_policy_digest(str(bc))
    policy, _ = load_policy(run)
    assert policy.residual_scale == PRESETS["residual"].residual_scale
