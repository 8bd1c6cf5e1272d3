"""Record episodes (scripted expert or a teleop device) into the demo format of ``robot_rl.data.demos``."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np

from robot_rl.data.demos import DemoMeta, DemoWriter
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import INFO_KEYS
from robot_rl.envs.success import success_reported
from robot_rl.training.evaluate import DEMO_SEED_BASE

if TYPE_CHECKING:
    from robot_rl.training.base_policy import BasePolicy


def rollout_episode(env: gym.Env, act: Callable[[dict[str, np.ndarray]], np.ndarray], seed: int) -> Episode:
    """Run one episode with ``act`` and return it as an ``Episode`` (executed actions, contract infos)."""
    obs, info = env.reset(seed=seed)
    observations = {k: [v] for k, v in obs.items()}
    actions, rewards = [], []
    infos: dict[str, list[bool]] = {k: [] for k in INFO_KEYS}
    terminated = truncated = False
    while not (terminated or truncated):
        action = np.asarray(act(obs), dtype=np.float32)
        obs, reward, terminated, truncated, info = env.step(action)
        executed = info.get("intervention_action", action) if info.get("intervention") else action
        actions.append(np.asarray(executed, np.float32))
        rewards.append(float(reward))
        for k in INFO_KEYS:
            infos[k].append(bool(info.get(k, False)))
        for k, v in obs.items():
            observations[k].append(v)
    return Episode(
        observations={k: np.stack(v) for k, v in observations.items()},
        actions=np.stack(actions),
        rewards=np.asarray(rewards, np.float32),
        terminated=bool(terminated),
        truncated=bool(truncated),
        infos={k: np.asarray(v, bool) for k, v in infos.items()},
    )


@dataclass
class RecordStats:
    recorded: int = 0
    kept: int = 0
    successes: int = 0
    total_steps: int = 0


def demo_summary(stats: RecordStats, wanted: int, noise_std: float, policy: str | None = None) -> str:
    """One log line on recorded demos (by the scripted expert, or ``policy``): how many were kept, and a loud
    note when fewer than ``wanted``."""
    by = "scripted expert" if policy is None else f"{policy!r}"
    line = f"{stats.kept} {by} demos ({stats.successes}/{stats.recorded} attempts succeeded)"
    if stats.kept < wanted:
        line += (f"; ONLY {stats.kept} of the {wanted} asked for: the {by} with demo_noise {noise_std} rarely "
                 "succeeds on this task")
        if policy is not None and noise_std > 0:
            line += (" (the noise is a std in the learner's [-1, 1], which spans the env's whole action box unless "
                     "--action-scale narrows it: lower --demo-noise, or narrow the box)")
    return line


def record_scripted_demos(
    env: gym.Env,
    task: str,
    episodes: int,
    out: Path | None,
    noise_std: float = 0.0,
    seed: int = 0,
    keep_failed: bool = False,
    on_episode: Callable[[int, Episode, bool], None] | None = None,
    attempts_per_demo: int = 10,
) -> tuple[list[Episode], RecordStats]:
    """Roll out the task's scripted expert until ``episodes`` episodes are kept (a noisy expert fails some),
    at most ``attempts_per_demo * episodes`` times; write kept ones to ``out`` when given. Fewer kept than
    asked shows in the returned stats (``kept``), which callers report."""
    from robot_rl.sim import make_expert

    sim_env = env.unwrapped
    writer = DemoWriter(out, DemoMeta.for_env(task, env)) if out is not None else None

    def one_episode(i: int) -> Episode:
        episode_seed = DEMO_SEED_BASE + seed * 10_000 + i
        expert = make_expert(sim_env, noise_std=noise_std, seed=episode_seed)
        return rollout_episode(env, lambda _obs: expert.act(sim_env.scene), episode_seed)

    return _record(one_episode, episodes, attempts_per_demo * episodes, writer, keep_failed, on_episode)


def record_policy_demos(
    env: gym.Env,
    task: str,
    policy: BasePolicy,
    episodes: int,
    out: Path | None,
    noise_std: float = 0.0,
    seed: int = 0,
    keep_failed: bool = False,
    on_episode: Callable[[int, Episode, bool], None] | None = None,
    attempts_per_demo: int = 10,
) -> tuple[list[Episode], RecordStats]:
    """``record_scripted_demos`` with any policy in place of the task's expert (``load_base_policy``: a user's
    controller, a trained run, a TorchScript file), so an env from another library gets demos too. Gaussian
    noise of std ``noise_std`` (env action units, clipped into the action box) is added to every action. An env
    that reports no success is refused unless ``keep_failed``: its failures could not be dropped."""
    writer = DemoWriter(out, DemoMeta.for_env(task, env)) if out is not None else None
    box = env.action_space
    assert isinstance(box, gym.spaces.Box)

    def one_episode(i: int) -> Episode:
        episode_seed = DEMO_SEED_BASE + seed * 10_000 + i
        rng = np.random.default_rng(episode_seed)
        policy.reset()

        def act(obs: dict[str, np.ndarray]) -> np.ndarray:
            action = np.asarray(policy(obs), np.float32)
            if noise_std > 0:
                action = np.clip(action + rng.normal(0.0, noise_std, action.shape), box.low, box.high)
            return action

        episode = rollout_episode(env, act, episode_seed)
        if not keep_failed and not success_reported(env):
            raise ValueError(f"demos for {task!r}: the env reports no success, so failed episodes cannot be told "
                             "apart; name its info key with --success-key, or keep every episode (record-demos "
                             "--keep-failed)")
        return episode

    return _record(one_episode, episodes, attempts_per_demo * episodes, writer, keep_failed, on_episode)


def record_demos(
    env: gym.Env,
    task: str,
    episodes: int,
    out: Path | None,
    policy: str | None = None,
    noise_std: float = 0.0,
    seed: int = 0,
    **options: Any,
) -> tuple[list[Episode], RecordStats]:
    """Demos by the task's scripted expert (``policy`` None or ``expert``), else by the policy ``policy`` names
    (``load_base_policy``); ``options`` as ``record_scripted_demos`` takes them."""
    from robot_rl.training.base_policy import EXPERT, load_base_policy

    if policy in (None, EXPERT):
        return record_scripted_demos(env, task, episodes, out, noise_std=noise_std, seed=seed, **options)
    return record_policy_demos(env, task, load_base_policy(policy, env, seed=seed), episodes, out,
                               noise_std=noise_std, seed=seed, **options)


def record_teleop_demos(
    env: gym.Env,
    task: str,
    device: Any,
    episodes: int,
    out: Path | None,
    seed: int = 0,
    keep_failed: bool = False,
    on_episode: Callable[[int, Episode, bool], None] | None = None,
    on_step: Callable[[int, dict[str, np.ndarray]], None] | None = None,
) -> tuple[list[Episode], RecordStats]:
    """Record ``episodes`` episodes driven by a teleop ``device`` (a connected ``Teleoperator``) in the same
    format as scripted demos. The policy is "hold still": the arm moves only while the human acts (HIL-SERL's
    ``record_demos``). An episode ends at the env's time limit / success or on the operator's success, failure
    or reset button. Human devices are paced at the env's control rate; ``on_step(t, obs)`` shows progress."""
    from robot_rl.teleop.intervention import InterventionConfig, InterventionWrapper

    pace_hz = float(env.metadata.get("render_fps", 10)) if device.realtime else 0.0
    wrapped = InterventionWrapper(env, device, InterventionConfig(pace_hz=pace_hz))
    writer = DemoWriter(out, DemoMeta.for_env(task, env)) if out is not None else None
    hold = np.zeros(env.action_space.shape, np.float32)  # arm still, gripper latch kept

    def one_episode(i: int) -> Episode:
        return rollout_episode(wrapped, _HoldStill(hold, on_step), DEMO_SEED_BASE + seed * 10_000 + i)

    return _record(one_episode, episodes, episodes, writer, keep_failed, on_episode)


def _record(
    one_episode: Callable[[int], Episode],
    episodes: int,
    max_attempts: int,
    writer: DemoWriter | None,
    keep_failed: bool,
    on_episode: Callable[[int, Episode, bool], None] | None,
) -> tuple[list[Episode], RecordStats]:
    """Record until ``episodes`` are kept or ``max_attempts`` were recorded; keep successes (and failures if
    ``keep_failed``), write kept ones."""
    kept: list[Episode] = []
    stats = RecordStats()
    while stats.kept < episodes and stats.recorded < max_attempts:
        i = stats.recorded
        episode = one_episode(i)
        stats.recorded += 1
        stats.total_steps += len(episode)
        stats.successes += episode.success
        keep = episode.success or keep_failed
        if keep:
            kept.append(episode)
            stats.kept += 1
            if writer is not None:
                writer.write(episode)
        if on_episode is not None:
            on_episode(i, episode, keep)
    return kept, stats


class _HoldStill:
    """The "policy" of teleop recording: the zero action, with a progress hook."""

    def __init__(self, hold: np.ndarray, on_step: Callable[[int, dict], None] | None) -> None:
        self.hold, self.on_step = hold, on_step
        self.t = 0

    def __call__(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        if self.on_step is not None:
            self.on_step(self.t, obs)
        self.t += 1
        return self.hold
