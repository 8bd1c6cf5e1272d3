"""Glue between ``TrainConfig`` and the human-in-the-loop pieces, used by ``Trainer`` and the CLI.

``wrap_training_env`` puts the intervention wrapper (``--teleop``) and the reward-classifier wrapper
(``--reward-classifier``) around the training env (never around the evaluation env: evaluation measures the
policy alone against the task's true success). ``make_router`` decides where each transition is stored.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.episode import Episode
from robot_rl.data.routing import StepBuffer, TransitionRouter
from robot_rl.envs.wrappers import find_wrapper
from robot_rl.teleop import make_teleop
from robot_rl.teleop.base import Teleoperator
from robot_rl.teleop.corrector import no_scripted_corrector
from robot_rl.teleop.intervention import InterventionConfig, InterventionWrapper

RLIF_PENALTY = -1.0


def wrap_training_env(env: gym.Env, cfg: Any, device: Teleoperator | None = None) -> gym.Env:
    """``cfg`` is a ``TrainConfig``; ``device`` overrides ``cfg.teleop`` (tests, the ROS actor)."""
    reward = cfg.env
    if reward.reward_classifier is not None:
        from robot_rl.rewards.wrapper import wrap_with_classifier

        env = wrap_with_classifier(env, reward.reward_classifier, reward.classifier_threshold,
                                   reward.classifier_state_checks)
    if device is None and cfg.teleop != "none":
        device = make_teleop(cfg.teleop, cfg.corrector)
    return with_teleop(env, device, cfg.intervention_mode) if device is not None else env


def check_rlif_has_device(cfg: Any) -> None:
    """``robot-rl train`` in RLIF mode needs a device here: takeovers are its only reward. (A learner serving
    remote actors does not: their devices are on the actors.)"""
    if cfg.intervention_mode == "rlif" and cfg.teleop == "none":
        raise ValueError("TrainConfig.intervention_mode='rlif' needs a teleop device (its only reward)")
    check_scripted_teleop(cfg.teleop, cfg.env.name, cfg.env.robot_rl_task)


def check_scripted_teleop(teleop: str, env_name: str, robot_rl_task: bool) -> None:
    """``--teleop scripted`` drives with a task's scripted expert, which only robot_rl tasks have."""
    if teleop == "scripted" and not robot_rl_task:
        raise ValueError(no_scripted_corrector(env_name))


STABLE_CRITICS_WITH_INTERVENTIONS = 10
"""Benchmarked (docs/benchmarks.md): with takeovers in the data, the 2-critic CPU preset's critic diverged on
one seed of three and the policy collapsed; the RLPD ensemble of 10 stayed bounded on all three."""


def few_critics_warning(cfg: Any) -> str | None:
    """Advice when interventions will train an ensemble smaller than the one benchmarked stable with them."""
    n = cfg.agent.num_critics
    if cfg.teleop == "none" or n >= STABLE_CRITICS_WITH_INTERVENTIONS:
        return None
    return (
        f"warning: --teleop {cfg.teleop} with --agent.num-critics {n}: with interventions a small critic "
        f"ensemble diverged in our benchmarks; --preset rlpd ({STABLE_CRITICS_WITH_INTERVENTIONS} critics) is advised"
    )


def with_teleop(env: gym.Env, device: Teleoperator, mode: str) -> InterventionWrapper:
    """``env`` with ``device`` able to take over (connected here if it is not yet)."""
    if not device.is_connected:
        device.connect()
    pace = float(env.metadata.get("render_fps", 10)) if device.realtime else 0.0  # a human follows the sim
    return InterventionWrapper(env, device, InterventionConfig(mode=mode, pace_hz=pace))


def teleop_device(env: gym.Env) -> Teleoperator | None:
    """The device of the outermost ``InterventionWrapper`` in ``env``'s wrapper chain, if any."""
    wrapper = find_wrapper(env, InterventionWrapper)
    return None if wrapper is None else wrapper.device


def without_teleop(env: gym.Env) -> gym.Env:
    """``env`` below its outermost wrapper when that is an ``InterventionWrapper``: where the scripted expert
    records demos (a corrector watching the expert would take over from it and mix into the demos)."""
    return env.env if isinstance(env, InterventionWrapper) else env


def routing(cfg: Any) -> dict[str, Any]:
    """``TransitionRouter`` keyword arguments from a ``TrainConfig``. Interventions may
    also come from the backend (the ROS bridge's mux) without a device here, so only the flag decides."""
    return {
        "interventions_to_demo": cfg.interventions_to_demos,
        "rlif_penalty": RLIF_PENALTY if cfg.intervention_mode == "rlif" else None,
    }


def make_router(cfg: Any, online: StepBuffer, demo: StepBuffer) -> TransitionRouter:
    return TransitionRouter(online, demo, **routing(cfg))


def prepare_demo(episode: Episode, cfg: Any) -> Episode:
    """Demos for RLIF carry no task reward (RLIF zeroes its offline data's rewards)."""
    if cfg.intervention_mode != "rlif":
        return episode
    return dataclasses.replace(episode, rewards=np.zeros_like(episode.rewards))


def episode_metrics(info: dict[str, Any]) -> dict[str, float]:
    """Per-episode intervention numbers to log (empty without a teleop device)."""
    return dict(info.get("intervention_stats", {}))
