"""What both ends must agree on, compared at handshake: task, observation space, action space, contract."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.spaces import describe_space
from robot_rl.envs.wrappers import action_scale_of
from robot_rl.training.base_policy import base_policy_digest
from robot_rl.training.env_factory import EnvConfig


def classifier_digest(path: str | os.PathLike[str] | None) -> str | None:
    """A reward classifier's identity for the handshake: the first 16 hex digits of its file's SHA-256."""
    return None if path is None else hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def run_spec(env: gym.Env, config: EnvConfig, intervention_mode: str) -> dict[str, Any]:
    """``env_spec`` of the env ``config`` built, rewarded as ``config`` says, with the base policy's identity
    when a residual is learned over one (compared at the handshake: a residual is only meaningful over the base
    it is trained with, and the two ends may name one file by different paths)."""
    digest = classifier_digest(config.reward_classifier)
    spec = env_spec(env, config.name, config.dense_reward, intervention_mode, digest)
    if config.base_policy is not None:
        sha = config.base_policy_sha256 or base_policy_digest(config.base_policy)
        spec["base_policy"] = {"sha256": sha[:16]} if sha else {"name": config.base_policy,
                                                                "noise": config.base_noise}
    return spec


def env_spec(env: gym.Env, task: str, dense_reward: bool = False, intervention_mode: str = "hil",
             classifier: str | None = None) -> dict[str, Any]:
    """JSON-able description of what the env emits and accepts, and how it rewards (a normalised JSON round
    trip): actor and learner must agree on all of it. ``classifier``: ``classifier_digest`` of the reward
    classifier, when one gives the reward."""
    space = env.action_space
    if not isinstance(space, gym.spaces.Box):
        raise ValueError(f"the env's action space must be a Box, got {space}")
    contract = getattr(env.unwrapped, "contract", None)
    spec = {
        "task": task,
        "observation_space": describe_space(env.observation_space),  # type: ignore[arg-type]
        "action_space": {
            "shape": list(space.shape),
            "low": np.asarray(space.low, np.float64).tolist(),
            "high": np.asarray(space.high, np.float64).tolist(),
            "scale": None if (scale := action_scale_of(env)) is None else list(scale),  # what [-1, 1] spans
        },
        "contract": contract.to_dict() if contract is not None else None,
        "reward": {"dense": bool(dense_reward), "intervention_mode": intervention_mode, "classifier": classifier},
    }
    return json.loads(json.dumps(spec))


def spec_diff(actor: Any, learner: Any, path: str = "spec") -> list[str]:
    """Human-readable differences ``path: actor X != learner Y`` (empty when the specs agree)."""
    if isinstance(actor, Mapping) and isinstance(learner, Mapping):
        out: list[str] = []
        for key in sorted(set(actor) | set(learner), key=str):
            sub = f"{path}[{key!r}]" if path.endswith("space") else f"{path}.{key}"
            if key not in actor:
                out.append(f"{sub}: missing on the actor (learner has {learner[key]!r})")
            elif key not in learner:
                out.append(f"{sub}: missing on the learner (actor has {actor[key]!r})")
            else:
                out.extend(spec_diff(actor[key], learner[key], sub))
        return out
    if actor != learner:
        return [f"{path}: actor {actor!r} != learner {learner!r}"]
    return []
