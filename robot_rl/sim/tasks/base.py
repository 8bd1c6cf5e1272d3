"""What a simulated task is: scene additions, reset, privileged observation, named reward terms, success."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from robot_rl.data.symmetry import Mirror, Rotation, SymmetryGroup, TranslationGrid
from robot_rl.envs.contract import ACTION_DIM, Field
from robot_rl.envs.geometry import matrix_to_rotvec
from robot_rl.sim.config import ArmEnvConfig

if TYPE_CHECKING:
    import torch

    from robot_rl.sim.readings import WorldReadings
    from robot_rl.sim.scene import ArmScene


BASE_AXIS_SYMMETRY = SymmetryGroup(mirror=Mirror(), rotation=Rotation(max_deg=30.0))
"""The mirror about the arm's vertical plane (y = 0) and rotations about its base axis: exact for the arm's
kinematic chain, so they hold wherever the task's own scene and start distribution have them."""
TABLETOP_SYMMETRY = dataclasses.replace(BASE_AXIS_SYMMETRY, translation=TranslationGrid(cells=3, width_m=0.1))
"""``BASE_AXIS_SYMMETRY`` and a 3 x 3 grid of planar translations up to 3.3 cm, for tasks whose objects rest
freely on the table: the impedance-controlled TCP moves alike a few cm away, but not in tight contact (an
inserted peg), where the arm's configuration matters."""


@dataclass(frozen=True)
class TaskConfig:
    """Fields every task has; each task subclasses this with its own defaults and fields."""

    env: ArmEnvConfig = field(default_factory=ArmEnvConfig)
    reward_weights: dict[str, float] = field(default_factory=dict)
    """Weight per named shaping term (used when ``env.dense_reward``); unknown names are an error."""
    symmetry: SymmetryGroup = field(default_factory=SymmetryGroup)
    """Mirrors, rotations and translations of the workspace under which the task's dynamics, reward and
    success are unchanged (``robot-rl check-symmetry`` measures it); none declared: no augmentation."""


class Task(ABC):
    """A task owns its config, its bodies in the scene and its MDP terms; the env owns the loop."""

    name: ClassVar[str]
    privileged_layout: ClassVar[tuple[Field, ...]] = ()

    def __init__(self, config: TaskConfig) -> None:
        self.config = config
        unknown = set(config.reward_weights) - set(self.reward_term_names())
        if unknown:
            raise ValueError(
                f"{type(config).__name__}.reward_weights has unknown terms {sorted(unknown)}; "
                f"known: {list(self.reward_term_names())}"
            )

    # --- scene -----------------------------------------------------------------------------------------
    def scene_xml(self) -> tuple[str, str]:
        """(worldbody XML, asset XML) added to the arm scene."""
        return "", ""

    def sensor_xml(self) -> str:
        """Sensors added to the scene for what the batched terms read (``robot_rl.sim.arm.frame_sensors`` of
        the task's objects, contact counts); the arm's own are always there."""
        return ""

    def bind(self, scene: ArmScene) -> None:  # noqa: B027 - optional hook
        """Cache ids after the scene is compiled."""

    def start_tcp_pos(self, rng: np.random.Generator) -> np.ndarray:
        """Nominal TCP start position (m); the env adds ``init_tcp_noise_m`` jitter."""
        return np.array([0.45, 0.0, 0.25])

    @abstractmethod
    def reset(self, scene: ArmScene, rng: np.random.Generator) -> None:
        """Place objects/goals for a new episode (the arm is already at its start pose)."""

    # --- MDP terms -------------------------------------------------------------------------------------
    def privileged(self, scene: ArmScene) -> np.ndarray:
        """Simulation-only task state, laid out as ``privileged_layout``."""
        return np.zeros(0)

    @classmethod
    @abstractmethod
    def reward_term_names(cls) -> tuple[str, ...]:
        """Names of the shaping terms ``reward_terms`` returns."""

    @abstractmethod
    def reward_terms(self, scene: ArmScene) -> dict[str, float]:
        """Named shaping terms, each roughly in [0, 1]; all are logged, weighted ones enter dense reward."""

    @abstractmethod
    def is_success(self, scene: ArmScene) -> bool: ...

    # --- batched twins: the MDP terms of N worlds at once (robot_rl.sim.batched), held to the ones above by
    # tests/sim/test_batched_parity.py. A task without them runs on the CPU env only.
    def batched_privileged(self, worlds: WorldReadings) -> torch.Tensor:
        """(N, P) ``privileged`` of every world."""
        if self.privileged_layout:
            raise NotImplementedError(self._no_batched_terms())
        return worlds.sensordata.new_zeros(worlds.sensordata.shape[0], 0)

    def batched_reward_terms(self, worlds: WorldReadings) -> dict[str, torch.Tensor]:
        """``reward_terms`` of every world, each (N,)."""
        raise NotImplementedError(self._no_batched_terms())

    def batched_success(self, worlds: WorldReadings) -> torch.Tensor:
        """(N,) bool ``is_success`` of every world."""
        raise NotImplementedError(self._no_batched_terms())

    @classmethod
    def has_batched_terms(cls) -> bool:
        return cls.batched_success is not Task.batched_success

    def _no_batched_terms(self) -> str:
        return (f"task {self.name!r} has no batched terms (batched_privileged / batched_reward_terms / "
                f"batched_success), so it runs on the CPU env only")

    def progress(self, scene: ArmScene) -> float:
        """How far along the task is, rising at a steady pace along the expert's plan: what a person watching
        judges (the scripted corrector's ``progress`` rule). Default: the sum of the shaping terms."""
        return float(sum(self.reward_terms(scene).values()))


class Expert(ABC):
    """A scripted policy with privileged access to the scene; returns contract actions in [-1, 1]."""

    def __init__(self, task: Task, noise_std: float = 0.0, seed: int = 0) -> None:
        if noise_std < 0:
            raise ValueError(f"Expert noise_std must be >= 0, got {noise_std}")
        self.task = task
        self.noise_std = noise_std
        self.rng = np.random.default_rng(seed)

    def reset(self) -> None:  # noqa: B027 - optional hook
        """Forget per-episode state (phase machines)."""

    @abstractmethod
    def plan(self, scene: ArmScene) -> np.ndarray:
        """Noise-free action [7] for the current scene state."""

    def act(self, scene: ArmScene) -> np.ndarray:
        action = self.plan(scene)
        if self.noise_std > 0:
            action = action.copy()
            action[:6] += self.rng.normal(0.0, self.noise_std, size=6)
        return np.clip(action, -1.0, 1.0).astype(np.float32)


def move_toward(current: np.ndarray, goal: np.ndarray, max_step_m: float, gain: float = 1.0) -> np.ndarray:
    """Translation action (in [-1, 1]) that moves ``current`` toward ``goal`` by at most one step."""
    delta = gain * (np.asarray(goal) - np.asarray(current)) / max_step_m
    return np.clip(delta, -1.0, 1.0)


def rotate_toward(
    current: np.ndarray, goal: np.ndarray, max_step_rad: float, gain: float = 1.0
) -> np.ndarray:
    """Rotation action (in [-1, 1], base-frame axis-angle) turning rotation ``current`` [3, 3] to ``goal``."""
    rotvec = matrix_to_rotvec(np.asarray(goal) @ np.asarray(current).T)
    return np.clip(gain * rotvec / max_step_rad, -1.0, 1.0)


def top_down_mat(yaw_rad: float) -> np.ndarray:
    """Tool frame pointing straight down (z = -z_world), its x axis at ``yaw_rad`` about world z (home: 0)."""
    c, s = np.cos(yaw_rad), np.sin(yaw_rad)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ np.diag([1.0, -1.0, -1.0])


def expert_action(translation: np.ndarray, gripper: float, rotation: np.ndarray | None = None) -> np.ndarray:
    action = np.zeros(ACTION_DIM)
    action[:3] = translation
    if rotation is not None:
        action[3:6] = rotation
    action[6] = gripper
    return action
