"""Where an env reports success, and when an episode counts as a success.

The contract's key is ``info["is_success"]``. Other libraries use other keys (Meta-World ``success``, some
suites ``succeed`` or ``solved``); ``SuccessSignal`` copies the one it finds (or the one named) into
``is_success`` so training logs, evaluation and ``robot-rl eval`` read one key. An env that reports none leaves
``is_success`` absent: its success is *unknown*, never 0%.

Criterion: ``any`` counts an episode whose success held at any step; ``final`` only one that ends in success.
They agree on envs that end the episode at success (every robot_rl task). Goal-conditioned envs
(gymnasium-robotics Fetch, mazes) run to their time limit and are reported by their users at the final step
(the HER paper, SB3), so ``auto`` picks ``final`` for them and ``any`` elsewhere (Meta-World reports any step).
"""

from __future__ import annotations

import logging
from typing import Any, Literal

import gymnasium as gym

from robot_rl.envs.wrappers import find_wrapper

SUCCESS_KEYS = ("is_success", "success", "succeed", "solved")
"""Info keys read as success when none is named, first match wins."""
Criterion = Literal["any", "final"]

log = logging.getLogger(__name__)


class SuccessSignal(gym.Wrapper):
    """Puts the env's success into ``info["is_success"]`` (bool): from ``key`` when given (an error names the
    keys the info has when it is missing), else from the first of ``SUCCESS_KEYS`` the env reports. With no
    such key, ``is_success`` stays absent and one warning says so."""

    def __init__(self, env: gym.Env, key: str | None = None) -> None:
        super().__init__(env)
        self.key = key
        self.found: str | None = key
        self._warned = False

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        return obs, self._mark(dict(info), at_reset=True)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = self._mark(dict(info), at_reset=False)
        if (terminated or truncated) and self.found is None and not self._warned:
            self._warned = True
            log.warning("success unknown: the env's info has none of %s (keys: %s); name its key with "
                        "--success-key", ", ".join(SUCCESS_KEYS), ", ".join(sorted(info)) or "none")
        return obs, reward, terminated, truncated, info

    def _mark(self, info: dict[str, Any], at_reset: bool) -> dict[str, Any]:
        if self.found is None:
            self.found = next((k for k in SUCCESS_KEYS if k in info), None)
        if self.found in info:
            info["is_success"] = bool(info[self.found])
        elif self.key is not None and not at_reset:  # many envs report success only from their first step on
            raise KeyError(f"--success-key {self.key!r}: the env's step info has no such key "
                           f"(it has: {', '.join(sorted(info)) or 'none'})")
        return info


def success_reported(env: gym.Env) -> bool:
    """Whether ``env`` has reported its success so far (a robot_rl task always does; an env from elsewhere once
    ``SuccessSignal`` has found its key)."""
    signal = find_wrapper(env, SuccessSignal)
    return signal is None or signal.found is not None


def is_goal_env(env: gym.Env) -> bool:
    """A goal-conditioned env in gymnasium-robotics' sense: dict observations with ``achieved_goal`` and
    ``desired_goal`` and a vectorised ``compute_reward(achieved_goal, desired_goal, info)``."""
    space = env.observation_space
    keys = set(space.spaces) if isinstance(space, gym.spaces.Dict) else set()
    return {"achieved_goal", "desired_goal"} <= keys and compute_reward_of(env) is not None


def compute_reward_of(env: gym.Env) -> Any:
    """``env``'s ``compute_reward``, the outermost wrapper's that defines one (a wrapper that changes the reward
    changes it for relabelled goals too), or None."""
    try:
        found = env.get_wrapper_attr("compute_reward")
    except AttributeError:
        return None
    return found if callable(found) else None


def default_criterion(env: gym.Env) -> Criterion:
    """``final`` for goal-conditioned envs, ``any`` for everything else (see the module docstring)."""
    return "final" if is_goal_env(env) else "any"


class EpisodeSuccess:
    """One episode's success under a criterion, from the ``info`` of each step; ``value`` None: unknown."""

    def __init__(self, criterion: Criterion) -> None:
        self.criterion = criterion
        self.value: bool | None = None

    def step(self, info: dict[str, Any]) -> None:
        if "is_success" not in info:
            return
        now = bool(info["is_success"])
        self.value = now if self.criterion == "final" or self.value is None else (self.value or now)
