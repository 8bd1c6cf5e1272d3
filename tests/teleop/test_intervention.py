"""InterventionWrapper + TransitionRouter: flags, executed actions, buffers, and exactly where RLIF's -1 lands."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from robot_rl.data.replay import ReplayBuffer, ReplayConfig
from robot_rl.data.routing import RLIFLabeler, TransitionRouter, rlif_rewards, takeover_steps
from robot_rl.data.transition import EXTRAS, Transition
from robot_rl.teleop.base import Buttons, MockTeleop, TeleopCommand
from robot_rl.teleop.intervention import InterventionConfig, InterventionWrapper

HUMAN = np.array([0.0, 0.5, 0.0, 0.0, 0.0, 0.0, -1.0], np.float32)
POLICY = np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], np.float32)


class CountEnv(gym.Env):
    """obs["state"] = [t, last action dx]; reward = 1 on every step (a stand-in task reward); T steps."""

    def __init__(self, length: int = 20, terminate_at: int = -1) -> None:
        self.observation_space = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (2,), np.float32)})
        self.action_space = gym.spaces.Box(-1.0, 1.0, (7,), np.float32)
        self.length, self.terminate_at = length, terminate_at
        self.executed: list[np.ndarray] = []

    def _obs(self, dx: float = 0.0) -> dict[str, np.ndarray]:
        return {"state": np.array([self.t, dx], np.float32)}

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return self._obs(), {"intervention": False, "safety_clipped": False, "is_success": False}

    def step(self, action):
        self.executed.append(np.asarray(action).copy())
        self.t += 1
        terminated = self.t == self.terminate_at
        info = {"intervention": False, "safety_clipped": False, "is_success": terminated}
        return self._obs(float(action[0])), 1.0, terminated, self.t >= self.length and not terminated, info


def human_at(steps: set[int], length: int = 20, **buttons_at: int) -> MockTeleop:
    commands = []
    for t in range(length):
        buttons = Buttons(**{name: t == at for name, at in buttons_at.items()})
        commands.append(TeleopCommand(active=t in steps, action=HUMAN if t in steps else np.zeros(7), buttons=buttons))
    return MockTeleop(commands)


def rollout(env: gym.Env, router: TransitionRouter | None = None) -> list[tuple]:
    obs, _ = env.reset(seed=0)
    steps = []
    done = False
    while not done:
        next_obs, reward, terminated, truncated, info = env.step(POLICY)
        executed = info["intervention_action"] if info["intervention"] else POLICY
        steps.append((reward, terminated, truncated, info))
        if router is not None:
            router.add(Transition(obs, executed, reward, next_obs, terminated, truncated,
                                  {"intervention": info["intervention"], "grasp_penalty": 0.0}))
        obs, done = next_obs, terminated or truncated
    return steps


def buffers(env: gym.Env) -> tuple[ReplayBuffer, ReplayBuffer]:
    cfg = ReplayConfig(capacity=100)
    return (ReplayBuffer(env.observation_space, 7, cfg, EXTRAS), ReplayBuffer(env.observation_space, 7, cfg, EXTRAS))


def test_flags_and_executed_actions() -> None:
    inner = CountEnv()
    env = InterventionWrapper(inner, human_at({3, 4, 10}))
    steps = rollout(env)
    flags = [s[3]["intervention"] for s in steps]
    assert flags == [t in {3, 4, 10} for t in range(20)]
    assert [t for t, s in enumerate(steps) if s[3]["takeover"]] == [3, 10]
    for t, (_, _, _, info) in enumerate(steps):
        np.testing.assert_array_equal(inner.executed[t], HUMAN if t in {3, 4, 10} else POLICY)
        np.testing.assert_array_equal(info["policy_action"], POLICY)
        assert ("intervention_action" in info) == (t in {3, 4, 10})
    stats = steps[-1][3]["intervention_stats"]
    assert stats == {"steps": 20.0, "intervention_steps": 3.0, "takeovers": 2.0, "intervention_rate": 0.15}
    assert env.device.proposed and len(env.device.proposed) == 20 and env.device.resets == 1


def test_rlif_minus_one_lands_on_the_last_policy_step_before_takeover() -> None:
    env = InterventionWrapper(CountEnv(), human_at({7, 8, 9, 10}), InterventionConfig(mode="rlif"))
    online, demo = buffers(env)
    router = TransitionRouter(online, demo, interventions_to_demo=True, rlif_penalty=-1.0)
    steps = rollout(env, router)
    # the env saw no takeover-related end and no task reward reached the learner
    assert not any(term or trunc for _, term, trunc, _ in steps[:-1])
    assert all(r == 0.0 for r, *_ in steps) and steps[7][3]["task_reward"] == 1.0
    rewards = online.arrays["reward"][:20]
    expected = np.zeros(20, np.float32)
    expected[6] = -1.0  # exactly transition 6 (s6, a6, s7); the expert steps 7..10 stay 0
    np.testing.assert_array_equal(rewards, expected)
    assert not online.arrays["terminated"][:21].any()
    np.testing.assert_array_equal(online.arrays["extras/intervention"][:20], [7 <= t <= 10 for t in range(20)])
    # the demo buffer holds the expert segment only, with RLIF rewards (0)
    assert demo.arrays["is_step"].sum() == 4 and not demo.arrays["reward"][:5].any()
    np.testing.assert_array_equal(rlif_rewards(np.arange(20) >= 7) , expected)


def test_rlif_success_is_a_truncation_and_takeover_at_step_zero_penalises_nothing() -> None:
    env = InterventionWrapper(CountEnv(terminate_at=5), human_at({0, 1}), InterventionConfig(mode="rlif"))
    online, _ = buffers(env)
    router = TransitionRouter(online, None, rlif_penalty=-1.0)
    steps = rollout(env, router)
    assert len(steps) == 5 and steps[-1][2] and not steps[-1][1]  # truncated, not terminated
    assert not online.arrays["reward"].any() and not online.arrays["terminated"].any()
    assert takeover_steps(np.array([True, True, False, True])).tolist() == [3]


def test_intervention_segments_go_to_online_and_demo_buffers() -> None:
    env = InterventionWrapper(CountEnv(), human_at({7, 8, 9, 10, 17, 18, 19}))
    online, demo = buffers(env)
    router = TransitionRouter(online, demo, interventions_to_demo=True)
    steps = rollout(env, router)
    assert len(online) == 20 and online.arrays["reward"][:20].sum() == 20.0  # hil keeps the task reward
    is_step = demo.arrays["is_step"]
    assert is_step.sum() == 7 and len(demo) == 7
    # two demo episodes: 4 steps + final record, 3 steps + final record (closed by the env's truncation)
    np.testing.assert_array_equal(is_step[:9], [1, 1, 1, 1, 0, 1, 1, 1, 0])
    np.testing.assert_array_equal(demo.arrays["frames/state"][:5, 0], [7, 8, 9, 10, 11])
    np.testing.assert_array_equal(demo.arrays["action"][0], HUMAN)
    assert demo.arrays["extras/intervention"][is_step].all()
    assert steps[-1][3]["intervention_stats"]["takeovers"] == 2.0

    online2, demo2 = buffers(env)
    rollout(env, TransitionRouter(online2, demo2, interventions_to_demo=False))
    assert len(online2) == 20 and len(demo2) == 0


def test_router_flush_closes_open_segments() -> None:
    env = CountEnv()
    online, demo = buffers(env)
    router = TransitionRouter(online, demo, rlif_penalty=-1.0)
    obs = {"state": np.zeros(2, np.float32)}
    nxt = {"state": np.ones(2, np.float32)}
    router.add(Transition(obs, HUMAN, 0.0, nxt, False, False, {"intervention": True, "grasp_penalty": 0.0}))
    assert online.num_records == 0  # held back one step (its reward may still change)
    router.flush()
    assert online.episode_open and not demo.episode_open and len(demo) == 1
    online.end_episode()
    assert len(online) == 1


def test_operator_buttons_end_episodes() -> None:
    env = InterventionWrapper(CountEnv(), human_at(set(), success=4))
    steps = rollout(env)
    assert len(steps) == 5 and steps[-1][1] and steps[-1][0] == 1.0 and steps[-1][3]["is_success"]
    assert steps[-1][3]["operator"] == "success"
    env = InterventionWrapper(CountEnv(), human_at(set(), failure=2))
    steps = rollout(env)
    assert len(steps) == 3 and steps[-1][2] and not steps[-1][1] and steps[-1][3]["operator"] == "failure"
    env = InterventionWrapper(CountEnv(), human_at(set(), reset=2), InterventionConfig(buttons_end_episode=False))
    assert len(rollout(env)) == 20


def test_pause_blocks_until_pressed_again() -> None:
    pause = TeleopCommand(buttons=Buttons(pause=True))
    device = MockTeleop([pause, TeleopCommand(), TeleopCommand(), pause, TeleopCommand(active=True, action=HUMAN)])
    sleeps: list[float] = []
    env = InterventionWrapper(CountEnv(), device, sleep=sleeps.append)
    env.reset()
    _, _, _, _, info = env.step(POLICY)
    assert len(sleeps) == 3 and not env.paused and info["intervention"]  # the command after resuming


def test_labeler_is_a_one_step_delay() -> None:
    lab = RLIFLabeler(-1.0)
    o = {"state": np.zeros(2, np.float32)}

    def tr(intervention: bool, done: bool = False) -> Transition:
        return Transition(o, POLICY, 0.0, o, False, done, {"intervention": intervention})

    assert lab.push(tr(False)) == []
    out = lab.push(tr(True))
    assert [t.reward for t in out] == [-1.0]
    out = lab.push(tr(True, done=True))
    assert [t.reward for t in out] == [0.0, 0.0] and lab.flush() == []


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="mode"):
        InterventionConfig(mode="dagger")  # type: ignore[arg-type]


def test_pacing_holds_the_step_rate() -> None:
    now = [0.0]
    sleeps: list[float] = []

    def sleep(dt: float) -> None:
        sleeps.append(dt)
        now[0] += dt

    env = InterventionWrapper(CountEnv(), MockTeleop([]), InterventionConfig(pace_hz=10.0), sleep=sleep,
                              clock=lambda: now[0])
    env.reset()
    for _ in range(3):
        env.step(POLICY)
        now[0] += 0.02  # the env and policy take 20 ms
    assert sleeps == pytest.approx([0.08, 0.08])  # first step at once, then 100 ms apart
