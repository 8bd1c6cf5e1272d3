"""Deterministic evaluation on held-out seeds, with a confidence interval on the success rate."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
import torch

from robot_rl.agents.data_parallel import DataParallel
from robot_rl.envs.success import Criterion, EpisodeSuccess


class EpisodeSink(Protocol):
    """Where ``evaluate`` sends each episode as it plays: a rosbag2 recording, an evaluation panel."""

    def begin(self, obs: dict[str, np.ndarray]) -> None: ...

    def step(self, action: np.ndarray, reward: float, next_obs: dict[str, np.ndarray], *,
             infos: dict[str, Any] | None = None, terminated: bool = False, truncated: bool = False) -> None: ...

# Seed ranges never overlap: training episodes, demo recording and evaluation each get their own.
TRAIN_SEED_BASE = 0
DEMO_SEED_BASE = 500_000_000
EVAL_SEED_BASE = 1_000_000_000

Policy = Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class EvalResult:
    episodes: int
    successes: int | None
    """None: the env reports no success signal (see ``robot_rl.envs.success``), so no rate is claimed."""
    mean_return: float
    mean_length: float
    criterion: Criterion = "any"

    @property
    def success_rate(self) -> float | None:
        return None if self.successes is None else self.successes / self.episodes

    @property
    def ci95(self) -> tuple[float, float] | None:
        return None if self.successes is None else wilson_interval(self.successes, self.episodes)

    def metrics(self) -> dict[str, float]:
        """The scalars every trainer logs under ``eval/`` (no success scalars when success is unknown)."""
        out = {"return": self.mean_return, "length": self.mean_length}
        if self.successes is not None:
            lo, hi = wilson_interval(self.successes, self.episodes)
            out = {"success_rate": self.successes / self.episodes, "success_ci_low": lo, "success_ci_high": hi,
                   **out}
        return out

    def summary(self) -> str:
        tail = f"return {self.mean_return:.2f}, length {self.mean_length:.1f}"
        if self.successes is None:
            return f"success unknown (the env reports none; name its info key with --success-key), {tail}"
        lo, hi = wilson_interval(self.successes, self.episodes)
        return (
            f"success {self.successes / self.episodes:.0%} ({self.successes}/{self.episodes} at "
            f"{'the final' if self.criterion == 'final' else 'any'} step, 95% CI {lo:.0%}-{hi:.0%}), {tail}"
        )


def wilson_interval(successes: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (sensible at 0% and 100%, unlike the normal one)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def evaluate(
    policy: Policy,
    env: gym.Env,
    episodes: int,
    seed_base: int = EVAL_SEED_BASE,
    frames: list[np.ndarray] | None = None,
    record_episodes: int = 1,
    criterion: Criterion = "any",
    reset: Callable[[], None] | None = None,
    recorder: EpisodeSink | None = None,
) -> EvalResult:
    """Run ``episodes`` episodes with seeds ``seed_base + i``; an episode succeeds by ``criterion`` (at any step
    or at the final one). Append rendered frames of the first ``record_episodes`` to ``frames`` when given (env
    must have ``render_mode="rgb_array"``). ``reset`` is called at every episode start (a policy with memory).
    ``recorder``: every episode also goes into this rosbag2 recording."""
    successes: int | None = None
    returns, lengths = [], []
    for i in range(episodes):
        obs, info = env.reset(seed=seed_base + i)
        if reset is not None:
            reset()
        if recorder is not None:
            recorder.begin(obs)
        done, total, length = False, 0.0, 0
        success = EpisodeSuccess(criterion)
        while not done:
            if frames is not None and i < record_episodes:
                frames.append(env.render())
            action = policy(obs)
            obs, reward, terminated, truncated, info = env.step(action)
            if recorder is not None:
                recorder.step(action, float(reward), obs, infos={"is_success": bool(info.get("is_success"))},
                              terminated=terminated, truncated=truncated)
            total += float(reward)
            length += 1
            success.step(info)
            done = terminated or truncated
        if success.value is not None:
            successes = (successes or 0) + success.value
        returns.append(total)
        lengths.append(length)
    return EvalResult(episodes, successes, float(np.mean(returns)), float(np.mean(lengths)), criterion)


def evaluate_worlds(act: Callable[..., torch.Tensor], worlds, data_parallel: DataParallel | None = None,
                    max_steps: int = 100_000) -> EvalResult:
    """One deterministic episode in each of ``worlds`` (a batched env), from a reset with the evaluation seeds:
    success (where the worlds report it), return and length over all of them, and over every data-parallel
    replica's worlds. ``act(obs, deterministic=True)`` is a batched policy. For tasks with no single env to
    evaluate on."""
    first_world = 0 if data_parallel is None else data_parallel.rank * worlds.num_envs
    obs, _ = worlds.reset(seed=EVAL_SEED_BASE + first_world)
    n, device = worlds.num_envs, worlds.device
    done = torch.zeros(n, dtype=torch.bool, device=device)
    returns = torch.zeros(n, device=device)
    lengths = torch.zeros(n, device=device)
    succeeded, known = torch.zeros(n, dtype=torch.bool, device=device), False
    for _ in range(max_steps):
        with torch.no_grad():
            obs, reward, terminated, truncated, infos = worlds.step(act(obs, deterministic=True))
        running = ~done
        returns += torch.where(running, reward, 0.0)
        lengths += running.float()
        success = infos.get("final_info", infos).get("is_success")
        if success is not None:
            known = True
            succeeded |= running & success.bool()
        done |= terminated | truncated
        if bool(done.all()):
            break
    sums = torch.stack([done.sum(), succeeded.sum(), returns[done].sum(), lengths[done].sum()]).double()
    if data_parallel is not None:
        data_parallel.sum_(sums)
    episodes, successes, total_return, total_length = sums.tolist()
    episodes = max(int(episodes), 1)
    return EvalResult(episodes, int(successes) if known else None, total_return / episodes,
                      total_length / episodes)
