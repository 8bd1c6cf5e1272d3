"""``EnvConfig``, the one description of a run's environment and reward source, and the env it builds: a
robot_rl task, any gymnasium env on the learner's dict convention, or a user's ``module:function`` env factory
(a real arm's contract env, tests)."""

from __future__ import annotations

import dataclasses
import importlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import gymnasium as gym
import numpy as np

from robot_rl.envs.action_history import ActionHistoryObservation, check_action_history
from robot_rl.envs.success import Criterion, SuccessSignal, default_criterion
from robot_rl.envs.wrappers import DictObservation, LearnerActionBox
from robot_rl.rewards.state_check import check_classifier_reward
from robot_rl.training.base_policy import BaseActionObservation, load_base_policy


@dataclass(frozen=True)
class EnvConfig:
    """Which environment a run trains, evaluates or acts in, and where its reward comes from. ``robot-rl train``,
    ``learner`` and ``actor`` nest this one config, so their defaults cannot disagree (its flags carry no
    prefix: ``--task``, ``--obs``; ``--train.task`` under ``learner``)."""

    task: str = "reach"
    """A robot_rl task (reach, pick_cube, peg_insert, push) or a gymnasium id with Box/Dict observations; an env
    another package registers is named ``module:EnvId`` (``gymnasium_robotics:PointMaze_UMaze-v3``), which
    imports the module first."""
    obs: Literal["state", "pixels"] = "state"
    """Observation mode of robot_rl tasks: privileged state, or proprio + camera images."""
    image_size: int = 64
    """Camera image side (px) in pixel mode."""
    cameras: tuple[str, ...] = ("front", "wrist")
    dense_reward: bool = False
    """Add the task's weighted shaping terms to the sparse success reward (robot_rl tasks)."""
    randomization: str = "none"
    """Domain randomisation of robot_rl tasks, drawn per episode (per world with ``--num-envs``): a preset,
    ``none`` or ``robust`` (friction, masses, damping, controller gains, camera pose, observation noise, latency;
    ``robot_rl.sim.config.RANDOMIZATION_PRESETS``), or a JSON object of ``RandomizationConfig`` fields over one,
    e.g. ``'{"preset": "robust", "joint_damping_scale": [1, 8]}'`` (``randomization_config``)."""
    env_factory: str | None = None
    """``module:function`` returning a gymnasium env with dict observations, instead of ``task`` (real robots,
    tests). Actor and learner must describe the same observation/action spaces."""
    env_kwargs: str = "{}"
    """JSON object of keyword arguments for ``env_factory``, or for ``gymnasium.make`` of a gymnasium ``task``."""
    action_scale: str = ""
    """Envs from elsewhere: the half-range, in the env's own action units, that the learner's [-1, 1] spans
    around the centre of the env's action box; one JSON number or a list with one per dimension (0 fixes a
    dimension at its centre). Empty: the env's whole box. For an env whose box is far wider than a sensible step
    (e.g. target displacements in metres within [-1, 1]): ``--action-scale '[0.03, 0.03, 0.03, 0, 0, 0, 0.5]'``.
    Demo, base and guide policies then act in the new [-1, 1]."""
    success_key: str | None = None
    """The info key a non-robot_rl env reports success under; default: the first of is_success, success,
    succeed, solved that it reports (none: success is shown as unknown, never as 0%)."""
    success_criterion: Literal["auto", "any", "final"] = "auto"
    """An episode succeeds if success held at ``any`` step or at the ``final`` one; ``auto``: final for
    goal-conditioned envs (Fetch, mazes: how their users report it), any for the rest."""
    base_policy: str | None = None
    """A frozen base policy whose action every observation carries as ``base_action``, for a residual learner
    (``--preset residual``): ``expert``, a TorchScript ``FILE.pt``, a run folder or ``module:attr``
    (``robot_rl.training.base_policy``)."""
    base_noise: float = 0.0
    """Action noise std of an ``expert`` base (a deliberately weaker base)."""
    base_policy_sha256: str | None = None
    """SHA-256 of the base's file, recorded when a run starts: a run whose base file changed is refused."""
    action_history: int = 0
    """Observe the last N actions the arm was sent (``previous_actions``, newest first): the commands still in
    flight on an arm whose commands act late (``robot_rl.envs.action_history``). 0: none."""
    reward_classifier: Path | None = None
    """Sparse reward from this trained success classifier (``robot-rl train-classifier``) instead of the task's;
    with actors it is computed on the actor (the handshake compares the file's digest on both ends)."""
    classifier_threshold: float | None = None
    """Override the classifier's validation-chosen threshold."""
    classifier_state_checks: tuple[str, ...] = ()
    """Conditions ANDed with the classifier's success, each ``field:index:low:high`` over the contract state,
    e.g. ``tcp_pos:2:0.06:inf`` (gripper above 6 cm), as HIL-SERL does on real tasks."""

    def __post_init__(self) -> None:
        if self.success_key == "":
            raise ValueError("EnvConfig.success_key must name an info key, got ''")
        if self.env_factory is not None and ":" not in self.env_factory:
            raise ValueError(
                f"EnvConfig.env_factory must look like 'package.module:function', got {self.env_factory!r}")
        try:
            kwargs = json.loads(self.env_kwargs)
        except ValueError as e:
            raise ValueError(f"EnvConfig.env_kwargs must be a JSON object, got {self.env_kwargs!r} ({e})") from e
        if not isinstance(kwargs, dict):
            raise ValueError(f"EnvConfig.env_kwargs must be a JSON object, got {self.env_kwargs!r}")
        parse_action_scale(self.action_scale)
        check_action_history(self.action_history, "EnvConfig.action_history")
        if not (np.isfinite(self.base_noise) and self.base_noise >= 0):
            raise ValueError(f"EnvConfig.base_noise must be a finite number >= 0, got {self.base_noise}")
        if self.base_noise > 0 and self.base_policy is None:
            raise ValueError(f"EnvConfig.base_noise={self.base_noise} is set without a base policy (--base-policy)")
        check_classifier_reward("EnvConfig", self.reward_classifier, self.classifier_threshold,
                                self.classifier_state_checks)

    @property
    def robot_rl_task(self) -> bool:
        """This env is one of our simulated tasks (with a scripted expert), not a gymnasium id or a factory's."""
        return self.env_factory is None and is_robot_rl_task(self.task)

    @property
    def name(self) -> str:
        """What the handshake calls this env: the factory when one builds it, else the task."""
        return self.env_factory or self.task


def is_robot_rl_task(name: str) -> bool:
    try:
        from robot_rl.sim import TASKS
    except ImportError:  # the sim extra is not installed: only gymnasium ids can work
        return False
    return name in TASKS


def _known_tasks() -> str:
    try:
        from robot_rl.sim import TASKS
    except ImportError:
        return "none available: install the sim extra, pip install 'robot_rl[sim]'"
    return ", ".join(sorted(TASKS))


def make_training_env(
    task: str,
    obs: str = EnvConfig.obs,
    image_size: int = EnvConfig.image_size,
    cameras: tuple[str, ...] = EnvConfig.cameras,
    render_mode: str | None = None,
    dense_reward: bool = False,
    terminate_on_success: bool = True,
    randomization: str = EnvConfig.randomization,
    env_factory: str | None = None,
    env_kwargs: str = "{}",
    success_key: str | None = None,
    action_scale: str = "",
) -> gym.Env:
    """``task`` is a robot_rl task name or a gymnasium id; the result emits flat dict observations.
    ``terminate_on_success`` False: a robot_rl task runs on after success (a gymnasium env keeps its own rules).
    ``env_factory`` (``module:function``, called with the JSON object ``env_kwargs``) replaces the task; a
    gymnasium id gets ``env_kwargs`` as ``gymnasium.make`` keywords. Envs from elsewhere report success in
    ``info["is_success"]`` through ``SuccessSignal`` (``success_key`` names their key) and act in [-1, 1]
    through ``LearnerActionBox`` (``action_scale`` narrows the box it spans)."""
    scale = parse_action_scale(action_scale)
    if env_factory is not None:
        env = _from_factory(env_factory, env_kwargs, render_mode)
        return SuccessSignal(LearnerActionBox(env, scale, f"env_factory {env_factory!r}"), success_key)
    if is_robot_rl_task(task):
        from robot_rl.sim import make_env

        if scale is not None:
            raise ValueError(f"action_scale={action_scale!r} applies to envs from elsewhere; {task!r} is a robot_rl "
                             "task with its own action limits")

        return make_env(
            task,
            obs_mode=obs,
            image_size=image_size,
            cameras=cameras,
            render_mode=render_mode,
            dense_reward=dense_reward,
            terminate_on_success=terminate_on_success,
            randomization=randomization_config(randomization),
        )
    if obs != "state" or dense_reward or randomization != EnvConfig.randomization:
        raise ValueError(f"obs={obs!r} / dense_reward / randomization={randomization!r} apply to robot_rl tasks "
                         f"only; {task!r} brings its own")
    try:
        env = gym.make(task, **_make_kwargs(env_kwargs, render_mode))
    except gym.error.Error as err:
        hint = ("" if ":" in task else "; an env registered by another package is named module:EnvId, e.g. "
                f"gymnasium_robotics:{task}")
        raise ValueError(
            f"task {task!r} is neither a robot_rl task ({_known_tasks()}) nor a registered gymnasium id "
            f"({err}){hint}"
        ) from err
    except ModuleNotFoundError as err:
        raise ValueError(f"task {task!r}: cannot import {err.name!r} to register it ({err})") from err
    return SuccessSignal(DictObservation(LearnerActionBox(env, scale, f"task {task!r}")), success_key)


def randomization_config(spec: str):
    """The ``RandomizationConfig`` that ``--randomization`` names: a preset's name, or a JSON object of
    ``RandomizationConfig`` fields over a preset (``"preset"``, default ``none``), e.g.
    ``{"preset": "robust", "joint_damping_scale": [1, 8]}``. A run's config keeps the spec, so the ranges travel
    with its checkpoint."""
    from robot_rl.sim.config import RANDOMIZATION_PRESETS, RandomizationConfig

    presets = sorted(RANDOMIZATION_PRESETS)
    if not spec.lstrip().startswith("{"):
        if spec not in RANDOMIZATION_PRESETS:
            raise ValueError(f"--randomization {spec!r} is neither a preset ({presets}) nor a JSON object of "
                             "RandomizationConfig fields")
        return RANDOMIZATION_PRESETS[spec]
    try:
        fields = json.loads(spec)
    except ValueError as err:
        raise ValueError(f"--randomization {spec!r} is not valid JSON ({err})") from err
    if not isinstance(fields, dict):
        raise ValueError(f"--randomization {spec!r} must be a JSON object")
    base = fields.pop("preset", "none")
    if base not in RANDOMIZATION_PRESETS:
        raise ValueError(f"--randomization {spec!r}: preset {base!r} is not one of {presets}")
    known = {f.name for f in dataclasses.fields(RandomizationConfig)}
    if unknown := sorted(set(fields) - known):
        raise ValueError(f"--randomization {spec!r}: unknown fields {unknown}; fields: {sorted(known)}")
    fields = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}  # JSON lists are ranges
    try:
        return dataclasses.replace(RANDOMIZATION_PRESETS[base], **fields)
    except (TypeError, ValueError) as err:
        raise ValueError(f"--randomization {spec!r}: {err}") from err


def _from_factory(env_factory: str, env_kwargs: str, render_mode: str | None) -> gym.Env:
    module_name, _, func_name = env_factory.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"env_factory {env_factory!r} cannot be imported: {e}") from e
    return factory(**_make_kwargs(env_kwargs, render_mode))


def _make_kwargs(env_kwargs: str, render_mode: str | None) -> dict:
    """The JSON ``env_kwargs``, with ``render_mode`` only when one is asked for: some envs (panda-gym) refuse
    ``render_mode=None`` rather than take it as "no rendering"."""
    kwargs = json.loads(env_kwargs)
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    return kwargs


def parse_action_scale(text: str) -> np.ndarray | None:
    """``EnvConfig.action_scale`` as numbers (None when empty); a ``ValueError`` naming the text otherwise."""
    if not text:
        return None
    try:
        parsed = json.loads(text)
    except ValueError as e:
        raise ValueError(f"EnvConfig.action_scale must be a JSON number or list of numbers, got {text!r}") from e
    items = parsed if isinstance(parsed, list) else [parsed]
    if not items or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in items):
        raise ValueError(f"EnvConfig.action_scale must be a JSON number or list of numbers, got {text!r}")
    value = np.asarray(parsed, np.float64)
    if not np.all(np.isfinite(value)) or np.any(value < 0):
        raise ValueError(f"EnvConfig.action_scale must be finite numbers >= 0 (one, or one per action "
                         f"dimension), got {text!r}")
    return value


def make_env_from_config(config: EnvConfig, render_mode: str | None = None, training: bool = False) -> gym.Env:
    """The env ``config`` describes (training, evaluation, actors and ``robot-rl eval`` build it the same way).

    ``training`` with a reward classifier: a simulated task does not end on its own success, as a real arm does
    not; only the classifier ends episodes. Else a success the classifier has not yet seen would end the episode
    unrewarded (the classifier fires a frame or two after the true success when its threshold favours precision).
    """
    env = make_training_env(
        config.task,
        config.obs,
        config.image_size,
        config.cameras,
        render_mode=render_mode,
        dense_reward=config.dense_reward,
        terminate_on_success=not (training and config.reward_classifier is not None),
        randomization=config.randomization,
        env_factory=config.env_factory,
        env_kwargs=config.env_kwargs,
        success_key=config.success_key,
        action_scale=config.action_scale,
    )
    return with_observation_extras(env, config)


def with_observation_extras(env: gym.Env, config: EnvConfig) -> gym.Env:
    """``env`` with the observations ``config`` adds where the env runs: its base policy's proposal
    (``base_action``; the base sees the env's own observations) and its action history (``previous_actions``).
    Also for an env built elsewhere, as a robot's env is."""
    if config.base_policy is not None:
        base = load_base_policy(config.base_policy, env, config.base_noise, config.base_policy_sha256)
        env = BaseActionObservation(env, base, config.base_policy)
    if config.action_history:
        env = ActionHistoryObservation(env, config.action_history)
    return env


def success_criterion(config: EnvConfig, env: gym.Env) -> Criterion:
    """The criterion ``config`` asks for, ``auto`` resolved for ``env`` (see ``robot_rl.envs.success``)."""
    return default_criterion(env) if config.success_criterion == "auto" else config.success_criterion
