"""Jump-start RL (JSRL): a guide policy acts for the first h steps of each training episode, then hands over
to the learner; as the learner improves, h shrinks, so the learner starts from ever earlier states.

``curriculum``: h starts at the episode horizon and drops by horizon / ``stages`` (and at least to the combined
episodes' mean length) each time an evaluation of the combined policy (guide for h steps, then the learner,
both deterministic) is as good as the best combined evaluation so far, within ``tolerance``: the learner has
caught up with the states the guide used to carry it through. A learner that cannot evaluate (a real arm's)
judges the training episodes that started at the current h instead, as many as an evaluation has.
``random``: h is drawn uniformly from [0, horizon] for every episode (JSRL-random), no evaluation needed.
The run's reported evaluation is always of the learned policy alone. The guide is a base policy of any kind
(``robot_rl.training.base_policy``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import gymnasium as gym
import numpy as np

from robot_rl.training.base_policy import BasePolicy


@dataclass(frozen=True)
class GuideConfig:
    """``--guide.policy BASE``: jump-start the learner with a guide policy."""

    policy: str | None = None
    """The guide: ``expert``, a TorchScript ``FILE.pt``, a run folder (``robot-rl train-bc``) or ``module:attr``."""
    noise: float = 0.0
    """Action noise std of an ``expert`` guide."""
    schedule: Literal["curriculum", "random"] = "curriculum"
    """How h (the guide's steps per episode) moves: down a curriculum, or drawn per episode."""
    stages: int = 10
    """Curriculum: h drops by horizon / stages at each stage."""
    tolerance: float = 0.05
    """Curriculum: the combined policy moves on when its success is at most this far below its best so far
    (one episode of 20 evaluation episodes: the noise of the evaluation itself)."""
    horizon: int | None = None
    """Steps per episode the guide may take at most; default: the env's time limit."""
    policy_sha256: str | None = None
    """SHA-256 of the guide's file, recorded when a run starts (a changed file is refused on resume)."""

    def __post_init__(self) -> None:
        if self.schedule not in ("curriculum", "random"):
            raise ValueError(f"GuideConfig.schedule must be 'curriculum' or 'random', got {self.schedule!r}")
        if self.stages < 1:
            raise ValueError(f"GuideConfig.stages must be >= 1, got {self.stages}")
        if not 0 <= self.tolerance <= 1:
            raise ValueError(f"GuideConfig.tolerance must be in [0, 1], got {self.tolerance}")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"GuideConfig.horizon must be >= 1 or None, got {self.horizon}")
        if not (math.isfinite(self.noise) and self.noise >= 0):
            raise ValueError(f"GuideConfig.noise must be a finite number >= 0, got {self.noise}")


def episode_horizon(env: gym.Env) -> int | None:
    """The env's time limit in steps (a gymnasium ``TimeLimit``, a robot_rl task's, or an env's own
    ``max_episode_steps``, as the ROS 2 arm env states it), None if it has none."""
    spec = getattr(env, "spec", None)
    if spec is not None and spec.max_episode_steps:
        return int(spec.max_episode_steps)
    cfg = getattr(env.unwrapped, "cfg", None)
    steps = getattr(cfg, "max_episode_steps", None) or getattr(env.unwrapped, "max_episode_steps", None)
    return int(steps) if steps else None


def guide_horizon(config: GuideConfig, env: gym.Env, env_name: str) -> int:
    """The most steps per episode the guide may take: ``config.horizon``, else the env's time limit."""
    horizon = config.horizon or episode_horizon(env)
    if horizon is None:
        raise ValueError(f"--guide.policy {config.policy!r}: {env_name!r} has no time limit; give --guide.horizon")
    return horizon


class JumpStart:
    """Which steps of an episode the guide takes, and how that moves (see the module docstring)."""

    def __init__(self, guide: BasePolicy | None, config: GuideConfig, horizon: int, seed: int = 0,
                 episodes_per_judgement: int = 20) -> None:
        """``guide``: the guide acting in this process's training env (None where no training env is stepped:
        a learner fed by actor processes keeps the schedule only). ``episodes_per_judgement``: training
        episodes at one h that stand in for an evaluation (``after_episode``)."""
        self.guide, self.config, self.horizon = guide, config, horizon
        self.step_size = max(1, math.ceil(horizon / config.stages))
        self.h = horizon  # curriculum: the current stage's h
        self.best: float | None = None
        self.rng = np.random.default_rng(seed)
        self.episode_h = self.h
        self.episodes_per_judgement = episodes_per_judgement
        self.outcomes: list[tuple[float, float]] = []
        """(success, length) of the training episodes at the current h not yet judged (``after_episode``)."""

    def start_episode(self) -> int:
        """A new training episode: reset the guide and fix this episode's h (returned)."""
        if self.guide is not None:
            self.guide.reset()
        self.episode_h = int(self.rng.integers(0, self.horizon + 1)) if self.config.schedule == "random" else self.h
        return self.episode_h

    def acts(self, t: int) -> bool:
        """The guide takes step ``t`` (0-based) of the current episode."""
        return t < self.episode_h

    def after_evaluation(self, combined_success: float, combined_length: float | None = None) -> bool:
        """Curriculum: the combined policy's success (and mean episode length) at the current h; True when h
        dropped to the next stage. A stage never starts above the combined episodes' mean length: steps past
        an episode's end are no hand-over, so a guide that finishes in 40 of 100 steps is not walked down
        through 100, 90, ... 50 first."""
        if self.config.schedule != "curriculum" or self.h == 0:
            return False
        if self.best is not None and combined_success < self.best - self.config.tolerance - 1e-9:
            return False
        self.best = combined_success if self.best is None else max(self.best, combined_success)
        lower = self.h - self.step_size
        if combined_length is not None:
            lower = min(lower, int(combined_length))
        self.h = max(0, lower)
        return True

    def after_episode(self, h: int, success: float, length: float) -> bool:
        """Curriculum without evaluations: a training episode that started at ``h`` ended. Once
        ``episodes_per_judgement`` episodes at the current h are in, their mean success and length move h as
        an evaluation's would (``after_evaluation``); True when h dropped. Episodes at another h (started
        before the last drop reached their actor) do not count."""
        if self.config.schedule != "curriculum" or self.h == 0 or h != self.h:
            return False
        self.outcomes.append((float(success), float(length)))
        if len(self.outcomes) < self.episodes_per_judgement:
            return False
        success_rate, mean_length = np.mean(self.outcomes, axis=0)
        self.outcomes = []
        return self.after_evaluation(float(success_rate), float(mean_length))

    def combined(self, guide: BasePolicy, act: Callable[[dict[str, np.ndarray]], np.ndarray]
                 ) -> tuple[Callable[[dict[str, np.ndarray]], np.ndarray], Callable[[], None]]:
        """(policy, reset) of the combined policy at the current h: ``guide`` (an instance for the evaluation
        env) for the first h steps of an episode, then ``act``."""
        t = 0

        def policy(obs: dict[str, np.ndarray]) -> np.ndarray:
            nonlocal t
            t += 1
            return guide(obs) if t <= self.h else act(obs)

        def reset() -> None:
            nonlocal t
            t = 0
            guide.reset()

        return policy, reset

    def state_dict(self) -> dict[str, object]:
        return {"h": self.h, "best": self.best, "rng": self.rng.bit_generator.state, "outcomes": list(self.outcomes)}

    def load_state_dict(self, state: dict[str, object]) -> None:
        self.h, self.best = int(state["h"]), state["best"]  # type: ignore[call-overload]
        self.rng.bit_generator.state = state["rng"]
        self.outcomes = [tuple(o) for o in state.get("outcomes", [])]  # type: ignore[attr-defined, misc]
