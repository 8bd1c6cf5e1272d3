"""The explicit task registry: read it top to bottom to see every simulated task."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from robot_rl.sim.env import ArmEnv
from robot_rl.sim.tasks.base import Expert, Task, TaskConfig
from robot_rl.sim.tasks.peg_insert import PegInsert, PegInsertConfig, PegInsertExpert
from robot_rl.sim.tasks.pick_cube import PickCube, PickCubeConfig, PickCubeExpert
from robot_rl.sim.tasks.push import Push, PushConfig, PushExpert
from robot_rl.sim.tasks.reach import Reach, ReachConfig, ReachExpert


@dataclass(frozen=True)
class TaskEntry:
    config: type[TaskConfig]
    task: type[Task]
    expert: type[Expert]
    gym_id: str


TASKS: dict[str, TaskEntry] = {
    "reach": TaskEntry(ReachConfig, Reach, ReachExpert, "robot_rl/Reach-v0"),
    "pick_cube": TaskEntry(PickCubeConfig, PickCube, PickCubeExpert, "robot_rl/PickCube-v0"),
    "peg_insert": TaskEntry(PegInsertConfig, PegInsert, PegInsertExpert, "robot_rl/PegInsert-v0"),
    "push": TaskEntry(PushConfig, Push, PushExpert, "robot_rl/Push-v0"),
}


def task_entry(name: str) -> TaskEntry:
    try:
        return TASKS[name]
    except KeyError:
        raise ValueError(f"Unknown task {name!r}; registered tasks: {sorted(TASKS)}") from None


def default_config(name: str) -> TaskConfig:
    return task_entry(name).config()


def with_overrides(config: TaskConfig, **env_overrides: Any) -> TaskConfig:
    """Copy ``config`` with fields of its ``env`` (ArmEnvConfig) replaced; unknown names raise."""
    env_fields = {f.name for f in dataclasses.fields(config.env)}
    unknown = set(env_overrides) - env_fields
    if unknown:
        raise ValueError(f"Unknown env config field(s) {sorted(unknown)}; known: {sorted(env_fields)}")
    return dataclasses.replace(config, env=dataclasses.replace(config.env, **env_overrides))


def make_env(
    task: str, config: TaskConfig | None = None, render_mode: str | None = None, **env_overrides: Any
) -> ArmEnv:
    """Build the env of a registered task, e.g. ``make_env("pick_cube", obs_mode="pixels", image_size=64)``."""
    entry = task_entry(task)
    config = config if config is not None else entry.config()
    if not isinstance(config, entry.config):
        raise TypeError(f"Task {task!r} expects a {entry.config.__name__}, got {type(config).__name__}")
    return ArmEnv(entry.task(with_overrides(config, **env_overrides)), render_mode=render_mode)


def make_expert(env: ArmEnv, noise_std: float = 0.0, seed: int = 0) -> Expert:
    return task_entry(env.task.name).expert(env.task, noise_std=noise_std, seed=seed)


def register_gymnasium_envs() -> None:
    """Make every task available as ``gymnasium.make("robot_rl/<Task>-v0", **env_overrides)``."""
    for name, entry in TASKS.items():
        if entry.gym_id not in gym.registry:
            gym.register(id=entry.gym_id, entry_point="robot_rl.sim.registry:make_env", kwargs={"task": name})
