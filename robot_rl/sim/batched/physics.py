"""What a batched backend provides: N worlds of one compiled scene that take controls, step, start episodes and
show their sensors. Everything above the physics (the safety gate, observations, rewards, success, resets of
the env's own state, auto-reset) is ``BatchedArmEnv``'s, written once for every backend."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from robot_rl.sim.env import ArmEnv
from robot_rl.sim.readings import SensorLayout, WorldReadings

if TYPE_CHECKING:
    from robot_rl.sim.batched.starts import StartPool


@dataclass
class EpisodeStarts:
    """The env-side state of worlds that start an episode, as the CPU env's reset leaves it: the impedance
    target (on the settled TCP), the gripper latch and the wrist sensor's tare. Tensors of K worlds."""

    target_pos: torch.Tensor
    target_mat: torch.Tensor
    gripper_open: torch.Tensor
    wrench_bias: torch.Tensor

    @staticmethod
    def of_envs(envs: list[ArmEnv], device: torch.device, dtype: torch.dtype) -> EpisodeStarts:
        """The starts CPU envs are in right after their ``reset``."""

        def stack(values) -> torch.Tensor:
            return torch.as_tensor(np.stack(values), dtype=dtype, device=device)

        return EpisodeStarts(
            target_pos=stack([e._target_pos for e in envs]),
            target_mat=stack([e._target_mat for e in envs]),
            gripper_open=torch.as_tensor(np.array([bool(e._gripper_open) for e in envs]), device=device),
            wrench_bias=stack([e.scene._wrench_bias for e in envs]),
        )


class Physics(ABC):
    """N worlds of ``template``'s scene (every world has the template's task and config)."""

    name: str

    def __init__(self, template: ArmEnv, num_worlds: int, device: torch.device, dtype: torch.dtype) -> None:
        self.template = template
        self.num_worlds = num_worlds
        self.device = device
        self.dtype = dtype
        model = template.scene.model
        self.layout = SensorLayout(model)
        self.target_mocap = int(model.body_mocapid[model.body("target").id])
        self.gripper_actuator = template.scene.gripper_actuator

    @abstractmethod
    def readings(self) -> WorldReadings:
        """Every world's sensors, ``qpos`` and ``mocap_pos`` after the last step or episode start."""

    @abstractmethod
    def control(self, target_pos: torch.Tensor, target_mat: torch.Tensor, gripper_ctrl: torch.Tensor) -> None:
        """Set each world's impedance target (the mocap pose: position, rotation matrix) and gripper actuator
        control for the next steps."""

    @abstractmethod
    def step(self, nstep: int) -> None:
        """``nstep`` physics steps of every world."""

    @abstractmethod
    def start_episodes(self, worlds: np.ndarray, seeds: list[int | None],
                       generator: torch.Generator) -> EpisodeStarts:
        """Put ``worlds`` (indices) into the state the CPU env's ``reset`` reaches (with ``seeds`` where a
        backend resets CPU envs; ``generator`` where it draws); their readings show it afterwards."""

    @abstractmethod
    def load(self, worlds: np.ndarray, pool: StartPool, picks: torch.Tensor) -> EpisodeStarts:
        """Put ``worlds`` (indices) into the starts ``picks`` of ``pool`` (state, sensors, model parameters)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release threads, devices and worlds."""
