"""Deterministic evaluation on held-out seeds, with a confidence interval on the success rate."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

# Seed ranges never overlap: training episodes, demo recording and evaluation each get their own.
TRAIN_SEED_BASE = 0
DEMO_SEED_BASE = 500_000_000
EVAL_SEED_BASE = 1_000_000_000

Policy = Callable[[dict[str, np.ndarray]], np.ndarray]


@dataclass(frozen=True)
class EvalResult:
    episodes: int
    successes: int
    mean_return: float
    mean_length: float

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes

    @property
    def ci95(self) -> tuple[float, float]:
        return wilson_interval(self.successes, self.episodes)

    def metrics(self) -> dict[str, float]:
        """The scalars every trainer logs under ``eval/``."""
        lo, hi = self.ci95
        return {
            "success_rate": self.success_rate,
            "success_ci_low": lo,
            "success_ci_high": hi,
            "return": self.mean_return,
            "length": self.mean_length,
        }

    def summary(self) -> str:
        lo, hi = self.ci95
        return (
            f"success {self.success_rate:.0%} ({self.successes}/{self.episodes}, 95% CI {lo:.0%}-{hi:.0%}), "
            f"return {self.mean_return:.2f}, length {self.mean_length:.1f}"
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
) -> EvalResult:
    """Run ``episodes`` episodes with seeds ``seed_base + i``; append rendered frames of the first
    ``record_episodes`` to ``frames`` when given (env must have ``render_mode="rgb_array"``)."""
    successes, returns, lengths = 0, [], []
    for i in range(episodes):
        obs, info = env.reset(seed=seed_base + i)
        done, total, length, success = False, 0.0, 0, False
        while not done:
            if frames is not None and i < record_episodes:
                frames.append(env.render())
            obs, reward, terminated, truncated, info = env.step(policy(obs))
            total += float(reward)
            length += 1
            success |= bool(info.get("is_success", False))
            done = terminated or truncated
        successes += success
        returns.append(total)
        lengths.append(length)
    return EvalResult(episodes, successes, float(np.mean(returns)), float(np.mean(lengths)))
