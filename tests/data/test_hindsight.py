"""Hindsight relabelling: future goals of the sample's own episode, rewards recomputed by the env, the mode
resolved per env, and a goal-conditioned env that learns with it on a tiny budget."""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from goal_env import PointGoalEnv

from robot_rl.data.hindsight import GoalRewards, goal_rewards_for
from robot_rl.data.replay import ReplayBuffer, ReplayConfig

BOX = gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)
SPACE = gym.spaces.Dict({"observation": BOX, "achieved_goal": BOX, "desired_goal": BOX})
UNSET = 99.0  # the recorded desired goal's second coordinate: any other value was relabelled
GAMMA = 0.9


def exact_reward(achieved, desired, info):
    return np.where(np.all(np.asarray(achieved) == np.asarray(desired), axis=-1), 1.0, 0.0)


def frame(ep: int, t: int) -> dict[str, np.ndarray]:
    """Episode ``ep`` at step ``t``: achieved goal (ep, t); desired goal (ep, UNSET), never reached."""
    pos = np.array([ep, t], np.float32)
    return {"observation": pos, "achieved_goal": pos.copy(), "desired_goal": np.array([ep, UNSET], np.float32)}


def buffer(fraction: float, n_step: int = 3, seed: int = 0) -> ReplayBuffer:
    config = ReplayConfig(capacity=1000, n_step=n_step, gamma=GAMMA)
    return ReplayBuffer(SPACE, 1, config, seed=seed, goals=GoalRewards(exact_reward, fraction))


def add_steps(replay: ReplayBuffer, ep: int, steps: range, length: int, stream: str) -> None:
    """Steps ``steps`` of episode ``ep`` (``length`` steps in all, truncated at the end) into ``stream``."""
    for t in steps:
        replay.add(frame(ep, t), np.zeros(1), 0.0, frame(ep, t + 1), False, t + 1 == length, stream=stream)


def fill(replay: ReplayBuffer) -> None:
    """Two actors' episodes interleaved step by step; the second actor's third episode stays open."""
    for ep in range(2):
        for t in range(10):
            add_steps(replay, ep, range(t, t + 1), 10, "a")
            add_steps(replay, 10 + ep, range(t, t + 1), 10, "b")
    add_steps(replay, 12, range(0, 6), 10, "b")  # open: frames (12, 0..5) written, (12, 6) pending


def test_relabelled_goals_come_from_later_frames_of_the_same_episode_and_rewards_follow():
    replay = buffer(fraction=0.8)
    fill(replay)
    batch = replay.sample(4000)
    obs, nxt = batch.obs["achieved_goal"].numpy(), batch.next_obs
    goal = batch.obs["desired_goal"].numpy()
    relabelled = goal[:, 1] != UNSET
    assert 0.75 < relabelled.mean() < 0.85
    np.testing.assert_array_equal(goal, nxt["desired_goal"].numpy())  # the pair keeps one goal
    np.testing.assert_array_equal(goal[:, 0], obs[:, 0])  # never another episode or actor
    ep, t, g = obs[relabelled, 0], obs[relabelled, 1], goal[relabelled, 1]
    assert np.all(g > t)  # strictly later than the sampled frame
    assert np.all(g[ep < 12] <= 10) and np.all(g[ep == 12] <= 5)  # an open episode: only what is written
    assert set(np.unique(g[ep < 12] - t[ep < 12])) == set(range(1, 11))  # every offset occurs
    # the n-step return counts, for each step of the window, whether its next frame reached the new goal
    for row in np.flatnonzero(relabelled)[:200]:
        e, s, target = obs[row, 0], obs[row, 1], goal[row, 1]
        end = 10 if e < 12 else 6
        window = range(int(s), min(int(s) + 3, end))
        expected = sum(GAMMA**k * float(s + k + 1 == target) for k, _ in enumerate(window))
        assert batch.reward[row].item() == pytest.approx(expected, abs=1e-6)
    assert np.all(batch.reward.numpy()[~relabelled] == 0.0)  # the recorded goal was never reached


def test_future_goal_is_uniform_over_the_rest_of_the_episode():
    replay = buffer(fraction=1.0, n_step=1)
    add_steps(replay, 0, range(0, 10), 10, "")
    start = np.flatnonzero(replay._frames["achieved_goal"][:, 1] == 2)[:1]  # step 2 of the episode
    later = replay._episode_index.later_records(np.repeat(start, 16000), replay._rng)
    picks = replay._frames["achieved_goal"][later, 1]
    counts = np.bincount(picks.astype(int), minlength=11)[3:]  # frames 3..10
    assert counts.sum() == 16000 and np.all(np.abs(counts - 2000) < 200)


def assert_goals_later_in_own_episode(batch) -> np.ndarray:
    obs, goal = batch.obs["achieved_goal"].numpy(), batch.obs["desired_goal"].numpy()
    relabelled = goal[:, 1] != UNSET
    np.testing.assert_array_equal(goal[:, 0], obs[:, 0])
    assert np.all(goal[relabelled, 1] > obs[relabelled, 1])
    return relabelled


def test_goals_stay_in_their_episode_as_the_ring_overwrites_and_old_episodes_are_forgotten():
    config = ReplayConfig(capacity=57, n_step=2, gamma=GAMMA)  # not a multiple of the 11 records per episode
    replay = ReplayBuffer(SPACE, 1, config, seed=1, goals=GoalRewards(exact_reward, 1.0))
    for ep in range(40):
        add_steps(replay, ep, range(0, 10), 10, "a")
        if ep % 3 == 0:  # a whole episode now and then, between the streamed ones
            replay.add_episode(replay.episodes()[-1])
        assert_goals_later_in_own_episode(replay.sample(300))
    assert len(replay._episode_index.records) <= 57 // 11 + 2  # episodes with a record in the ring


def test_a_loaded_buffer_draws_the_same_relabelled_batches(tmp_path):
    replay = buffer(fraction=0.8)
    fill(replay)
    replay.save(tmp_path / "replay.npz")
    restored = buffer(fraction=0.8, seed=7)
    restored.load(tmp_path / "replay.npz")
    for _ in range(3):
        a, b = replay.sample(256), restored.sample(256)
        for key in a.obs:
            np.testing.assert_array_equal(a.obs[key].numpy(), b.obs[key].numpy())
        np.testing.assert_array_equal(a.reward.numpy(), b.reward.numpy())
    add_steps(replay, 12, range(6, 10), 10, "b")  # the open episode goes on in both
    add_steps(restored, 12, range(6, 10), 10, "b")
    a, b = replay.sample(256), restored.sample(256)
    np.testing.assert_array_equal(a.obs["desired_goal"].numpy(), b.obs["desired_goal"].numpy())
    assert assert_goals_later_in_own_episode(b).any()


def test_fraction_zero_keeps_every_recorded_goal():
    replay = buffer(fraction=0.0)
    fill(replay)
    assert np.all(replay.sample(500).obs["desired_goal"].numpy()[:, 1] == UNSET)


def test_the_mode_is_resolved_per_env():
    goal_env, plain_env = PointGoalEnv(), gym.make("Pendulum-v1")
    auto = goal_rewards_for(ReplayConfig(), goal_env)
    assert auto is not None and auto.fraction == ReplayConfig().hindsight_fraction
    assert goal_rewards_for(ReplayConfig(), plain_env) is None
    assert goal_rewards_for(ReplayConfig(hindsight="off"), goal_env) is None
    with pytest.raises(ValueError, match="PendulumEnv is not goal-conditioned"):
        goal_rewards_for(ReplayConfig(hindsight="on"), plain_env, "--replay.hindsight")
    with pytest.raises(ValueError, match="hindsight_fraction"):
        ReplayConfig(hindsight_fraction=1.5)
    with pytest.raises(ValueError, match="'achieved_goal' and 'desired_goal'"):
        ReplayBuffer(gym.spaces.Dict({"state": BOX}), 1, goals=auto)


class ShiftedReward(gym.Wrapper):
    """A user's reward change on a goal env: the env's rewards + 1, for relabelled goals too."""

    def compute_reward(self, achieved, desired, info):
        return self.env.unwrapped.compute_reward(achieved, desired, info) + 1.0


def test_relabelled_rewards_come_from_the_outermost_compute_reward():
    env = PointGoalEnv()
    far, near = np.array([[0.0, 0.0]]), np.array([[5.0, 5.0]])
    inner = goal_rewards_for(ReplayConfig(), env).rewards(far, near)
    wrapped = goal_rewards_for(ReplayConfig(), gym.wrappers.RecordEpisodeStatistics(ShiftedReward(env)))
    np.testing.assert_array_equal(wrapped.rewards(far, near), inner + 1.0)


def test_a_non_vectorised_compute_reward_is_named():
    scalar = GoalRewards(lambda a, d, info: 0.0)
    with pytest.raises(ValueError, match="vectorised"):
        scalar.rewards(np.zeros((4, 2)), np.zeros((4, 2)))


def train_point_goal(run_dir, hindsight: str) -> float:
    from robot_rl.training.config import TrainConfig
    from robot_rl.training.env_factory import EnvConfig
    from robot_rl.training.loop import Trainer

    base = TrainConfig()
    cfg = dataclasses.replace(
        base, env=EnvConfig(env_factory="goal_env:make_point_goal"), total_env_steps=800, learning_starts=200,
        eval_every=800, eval_episodes=20, progress=False, video="off", torch_threads=1, seed=0, run_dir=run_dir,
        replay=dataclasses.replace(base.replay, hindsight=hindsight),
        agent=dataclasses.replace(base.agent, utd_ratio=4))
    trainer = Trainer(cfg)
    trainer.run()
    return trainer.last_eval.success_rate


def test_a_goal_env_learns_with_relabelling_on_a_tiny_budget(tmp_path, capsys):
    """800 env steps (40 episodes): relabelled, the point reaches its goal on held-out seeds; the same run
    without relabelling has seen almost no reward and has not learned to. The log says which it was."""
    assert train_point_goal(tmp_path / "her", "auto") >= 0.8
    assert "hindsight relabelling: 80% of sampled transitions" in capsys.readouterr().out
    assert train_point_goal(tmp_path / "plain", "off") <= 0.3
    assert "hindsight relabelling" not in capsys.readouterr().out
