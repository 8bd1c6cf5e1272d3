"""The conformance check every backend of the contract must pass (CPU sim, GPU sim, ROS 2 robots).

Library code, not only a test, so a user can run it against their own backend:
``check_conformance(env, steps=20)`` raises ``AssertionError`` with the first violation it finds.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import (
    ACTION_DIM,
    INFO_KEYS,
    STATE_DIM,
    ContractSpec,
    check_observation,
    is_image_key,
)


def check_conformance(env: gym.Env, steps: int = 20, seed: int = 0) -> None:
    """Reset and step ``env`` with random actions; check spaces, dtypes, info keys and bad-action refusal."""
    contract = getattr(env.unwrapped, "contract", None)
    assert isinstance(contract, ContractSpec), "env.unwrapped.contract must be a ContractSpec"
    space = env.observation_space
    assert isinstance(space, gym.spaces.Dict), f"observation_space must be a Dict, got {type(space).__name__}"
    assert space == contract.observation_space(), (
        "observation_space differs from contract.observation_space()"
    )
    assert space["state"].shape == (STATE_DIM,), f"state must be [{STATE_DIM}]"
    for key, sub in space.spaces.items():
        if is_image_key(key):
            assert sub.dtype == np.uint8 and len(sub.shape) == 3 and sub.shape[2] == 3, f"{key}: uint8 HxWx3"
        else:
            assert sub.dtype == np.float32, f"{key}: float32"
    act = env.action_space
    assert isinstance(act, gym.spaces.Box) and act.shape == (ACTION_DIM,), (
        f"action_space must be Box[{ACTION_DIM}]"
    )
    assert np.all(act.low == -1.0) and np.all(act.high == 1.0), "action bounds must be [-1, 1]"

    obs, info = env.reset(seed=seed)
    check_observation(obs, space, source="reset()")
    _check_info(info, "reset()")
    rng = np.random.default_rng(seed)
    for t in range(steps):
        obs, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, ACTION_DIM).astype(np.float32))
        check_observation(obs, space, source=f"step {t}")
        _check_info(info, f"step {t}")
        assert np.isfinite(reward), f"step {t}: reward {reward} is not finite"
        assert isinstance(terminated, bool) and isinstance(truncated, bool), f"step {t}: flags must be bool"
        if terminated or truncated:
            obs, info = env.reset()
    # Bad actions are refused, never executed.
    for bad in (np.full(ACTION_DIM, np.nan, np.float32), np.zeros(ACTION_DIM + 1, np.float32)):
        try:
            env.step(bad)
        except ValueError:
            continue
        raise AssertionError(f"env.step accepted a malformed action {bad.tolist()}")
    # Out-of-range actions are clipped and reported.
    _, _, _, _, info = env.step(np.full(ACTION_DIM, 3.0, np.float32))
    assert info["safety_clipped"], "an out-of-range action must set info['safety_clipped']"


def _check_info(info: dict, source: str) -> None:
    for key in INFO_KEYS:
        assert key in info, f"{source}: info lacks {key!r}"
        assert isinstance(info[key], (bool, np.bool_)), f"{source}: info[{key!r}] must be bool"
