"""``robot-rl train --num-envs N``: the many-worlds trainer runs, checkpoints and resumes, and its checkpoint acts
identically wherever a policy is loaded (evaluation, the actor process, the ROS 2 policy actor)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from robot_rl.agents.config import SACConfig
from robot_rl.training.config import ParallelConfig, TrainConfig
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.loop import load_policy
from robot_rl.training.parallel import DEVICE_REPLAY_FILE, ParallelTrainer

WORLDS = 4


def tiny(run: Path, steps: int, resume: Path | None = None, **fields) -> TrainConfig:
    fields.setdefault("env", EnvConfig(task="reach"))
    return TrainConfig(parallel=ParallelConfig(num_envs=WORLDS, backend="mujoco-threads",
                                                                            updates_per_step=2, num_threads=2),
                       total_env_steps=steps, learning_starts=40, batch_size=32, eval_every=10_000, eval_episodes=1,
                       checkpoint_every=10_000, scripted_demos=2, seed=3, torch_threads=1, progress=False, run_dir=run,
                       resume=resume, agent=SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=2), **fields)


def test_a_short_run_fills_the_device_replay_updates_and_checkpoints(tmp_path: Path) -> None:
    trainer = ParallelTrainer(tiny(tmp_path / "run", 200))
    result = trainer.run()
    assert trainer.env_steps == 200 and trainer.replay.written == 200 // WORLDS
    assert trainer.update_calls == 2 * ((200 - 40) // WORLDS + 1)  # updates_per_step per vector step from step 40
    assert trainer.episodes == 4  # reach ends at 40 steps: every world finished one episode
    assert result is not None and result.episodes == 1
    checkpoints = tmp_path / "run" / "checkpoints"
    assert (checkpoints / "latest.pt").exists() and (checkpoints / DEVICE_REPLAY_FILE).exists()
    episodes = (tmp_path / "run" / "metrics.csv").read_text()
    assert "episode" in episodes and "eval" in episodes


def test_resume_restores_the_agent_the_replay_and_the_counters(tmp_path: Path) -> None:
    first = ParallelTrainer(tiny(tmp_path / "run", 120))
    first.run()
    weights = {k: v.clone() for k, v in first.agent.state_dict()["modules"]["actor"].items()}
    second = ParallelTrainer(tiny(tmp_path / "other", 200, resume=tmp_path / "run"))
    assert (second.env_steps, second.episodes, second.updates) == (first.env_steps, first.episodes, first.updates)
    assert second.replay.written == first.replay.written
    assert torch.equal(second.replay.obs["state"], first.replay.obs["state"])
    for k, v in second.agent.state_dict()["modules"]["actor"].items():
        assert torch.equal(v, weights[k]), k
    second.run()
    assert second.env_steps == 200


def test_the_checkpoint_acts_the_same_in_evaluation_the_actor_and_the_ros_policy_actor(tmp_path: Path) -> None:
    trainer = ParallelTrainer(tiny(tmp_path / "run", 160))
    trainer.run()
    env = make_env_from_config(EnvConfig(task="reach"))
    observations = []
    obs, _ = env.reset(seed=11)
    for _ in range(5):
        observations.append(obs)
        obs, *_ = env.step(env.action_space.sample())
    batch = {k: torch.as_tensor(np.stack([o[k] for o in observations])) for k in observations[0]}
    in_training = trainer.agent.act_batch(batch, deterministic=True).numpy()  # as the trainer acts in all worlds

    policy, _ = load_policy(tmp_path / "run")  # robot-rl eval, robot-rl actor
    from robot_rl.ros.actor import POLICIES, PolicyActorConfig

    on_robot = POLICIES["checkpoint"](PolicyActorConfig(policy="checkpoint", checkpoint=str(tmp_path / "run")), env)
    for i, o in enumerate(observations):
        alone = trainer.agent.act(o, deterministic=True)
        np.testing.assert_allclose(alone, in_training[i], atol=1e-6)  # a batch of one rounds the last bit apart
        np.testing.assert_array_equal(policy.act(o, deterministic=True), alone)
        np.testing.assert_array_equal(on_robot.act(o), alone)


@pytest.mark.parametrize(("fields", "flag"), [
    ({"actors": 2}, "--actors 2"),
    ({"teleop": "scripted"}, "--teleop scripted"),
    ({"env": EnvConfig(task="reach", obs="pixels")}, "--obs pixels"),
])
def test_what_the_many_worlds_trainer_does_not_do_is_refused_naming_the_flag(tmp_path, fields, flag) -> None:
    with pytest.raises(ValueError, match=f"--num-envs 4 trains simulated worlds in one process; it does not take "
                                         f"{flag}"):
        tiny(tmp_path, 100, **fields)


def test_a_task_the_batched_simulator_does_not_have_is_refused(tmp_path: Path) -> None:
    config = tiny(tmp_path / "run", 100, env=EnvConfig(task="Pendulum-v1"))
    with pytest.raises(ValueError, match="'Pendulum-v1' is not a robot_rl task"):
        ParallelTrainer(config)


def test_init_from_carries_the_whole_agent_and_nothing_else(tmp_path: Path) -> None:
    """Pretrained on many worlds, continued on the single-env loop: every network, target, optimiser state and
    the temperature come over; the replay and the counters start empty."""
    from robot_rl.training.loop import Trainer

    source = ParallelTrainer(tiny(tmp_path / "sim", 160))
    source.run()
    single = TrainConfig(env=EnvConfig(task="reach"), total_env_steps=60, learning_starts=50, batch_size=32,
                         eval_every=10_000, eval_episodes=1, scripted_demos=2, seed=4, torch_threads=1, progress=False,
                         run_dir=tmp_path / "real", init_from=tmp_path / "sim",
                         agent=SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=2))
    continued = Trainer(single)
    theirs, ours = source.agent.state_dict(), continued.agent.state_dict()
    for name, module in theirs["modules"].items():
        for key, value in module.items():
            assert torch.equal(ours["modules"][name][key], value), f"{name}.{key}"
    assert torch.equal(ours["log_alpha"], theirs["log_alpha"])
    assert ours["optimizers"]["critic"]["state"].keys() == theirs["optimizers"]["critic"]["state"].keys()
    assert (continued.env_steps, continued.updates, len(continued.replay)) == (0, 0, 0)
    assert continued.agent.num_critic_updates == continued.agent.num_actor_updates == 0  # its own warm-up applies
    continued.run()

    slower = TrainConfig(**{**single.__dict__, "run_dir": tmp_path / "slower",
                            "agent": SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=2, actor_lr=1e-5)})
    rates = {name: [g["lr"] for g in opt.param_groups] for name, opt in Trainer(slower).agent._optimizers().items()}
    assert rates["actor"] == [1e-5] and rates["critic"] == [SACConfig().critic_lr]  # this run's rates, not theirs

    wider = TrainConfig(**{**single.__dict__, "run_dir": tmp_path / "wider",
                           "agent": SACConfig(num_critics=2, hidden_dims=(64, 64), utd_ratio=2)})
    with pytest.raises(ValueError, match=r"--init-from .*sim: its agent \(task 'reach', obs 'state', 2 critics of "
                                         r"\[32, 32\]\) does not fit this run's .*\[64, 64\]"):
        Trainer(wider)

    anchor = SACConfig(num_critics=2, hidden_dims=(32, 32), utd_ratio=2, anchor_weight=0.5)
    anchored = Trainer(TrainConfig(**{**single.__dict__, "run_dir": tmp_path / "anchored", "agent": anchor}))
    for key, value in theirs["modules"]["actor"].items():  # held near the policy it starts from
        assert torch.equal(anchored.agent.anchor.state_dict()[key], value), key
    with pytest.raises(ValueError, match=r"--agent\.anchor-weight 0\.5 holds the actor near the policy a run "
                                         r"starts from: give that run with --init-from RUN"):
        TrainConfig(**{**single.__dict__, "init_from": None, "agent": anchor})


def test_an_action_history_run_acts_the_same_in_evaluation_and_on_the_robots_actor(tmp_path: Path) -> None:
    """``--action-history 2``: the worlds, the evaluation env's wrapper and the ROS 2 actor's ``HistoryPolicy``
    (over an env without the key, as a robot's is) give the checkpoint the same ``previous_actions``."""
    history = EnvConfig(task="reach", action_history=2)
    trainer = ParallelTrainer(tiny(tmp_path / "run", 160, env=history))
    assert trainer.worlds.single_observation_space["previous_actions"].shape == (14,)
    trainer.run()
    assert trainer.replay.obs["previous_actions"][: trainer.replay.written].abs().sum() > 0
    from robot_rl.ros.actor import POLICIES, PolicyActorConfig

    wrapped, bare = make_env_from_config(history), make_env_from_config(EnvConfig(task="reach"))
    on_robot = POLICIES["checkpoint"](PolicyActorConfig(policy="checkpoint", checkpoint=str(tmp_path / "run")), bare)
    obs, _ = wrapped.reset(seed=5)
    bare_obs, _ = bare.reset(seed=5)
    on_robot.reset()
    for t in range(6):
        alone = trainer.agent.act(obs, deterministic=True)
        np.testing.assert_array_equal(on_robot.act(bare_obs), alone)
        sent = 1.5 * alone if t % 2 else alone  # beyond the box: the history holds what the arm executed
        obs, *_ = wrapped.step(sent)
        bare_obs, *_ = bare.step(sent)
        on_robot.executed(sent)
        np.testing.assert_array_equal(obs["previous_actions"][:7], np.clip(sent, -1, 1))
    from robot_rl.training.base_policy import load_base_policy

    with pytest.raises(ValueError, match=r"observes its last 2 actions .* continue it with --init-from"):
        load_base_policy(str(tmp_path / "run"), bare)  # a base does not know the actions executed
