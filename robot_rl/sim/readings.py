"""``WorldReadings``: what N simulated worlds show after a step, as torch tensors, for batched task terms.

Everything comes from three arrays a batched backend keeps per world: ``sensordata`` (the scene's sensors: the
TCP frame and velocity, the wrist wrench, the task's objects and contacts, see ``robot_rl.sim.arm``), ``qpos``
and ``mocap_pos`` (goals and holes are mocap bodies). Sensors hold the values MuJoCo computed inside the last
physics step, the same values the CPU env reads from ``data.site_xpos`` / ``xpos`` after ``mj_step``.
"""

from __future__ import annotations

from functools import cached_property

import mujoco
import torch

from robot_rl.sim.arm import FINGER_MAX_OPENING_M, FRAME_AXES


class SensorLayout:
    """Where each named sensor sits in ``sensordata``, and the finger joints in ``qpos``, for one model."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self.slices = {
            model.sensor(i).name: slice(int(model.sensor_adr[i]), int(model.sensor_adr[i] + model.sensor_dim[i]))
            for i in range(model.nsensor)
        }
        self.finger_qpos_adr = [int(model.jnt_qposadr[model.joint(f"finger_joint{i}").id]) for i in (1, 2)]

    def slice(self, name: str) -> slice:
        try:
            return self.slices[name]
        except KeyError:
            raise KeyError(f"the scene has no sensor {name!r}; its sensors: {sorted(self.slices)}") from None


class WorldReadings:
    """Views of N worlds after one step; derived quantities are computed once per readings object."""

    def __init__(self, layout: SensorLayout, sensordata: torch.Tensor, qpos: torch.Tensor,
                 mocap_pos: torch.Tensor) -> None:
        self.layout = layout
        self.sensordata = sensordata
        self.qpos = qpos
        self.mocap_pos = mocap_pos
        """(N, nmocap, 3)."""

    def sensor(self, name: str) -> torch.Tensor:
        """(N, dim) values of sensor ``name``."""
        return self.sensordata[:, self.layout.slice(name)]

    def frame(self, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """(position (N, 3), rotation (N, 3, 3)) of the frame whose sensors ``frame_sensors(name, ...)`` added."""
        mat = torch.stack([self.sensor(f"{name}_{axis}") for axis in FRAME_AXES], dim=-1)
        return self.sensor(f"{name}_pos"), mat

    def in_contact(self, name: str) -> torch.Tensor:
        """(N,) bool: the contact sensor ``name`` found at least one contact."""
        return self.sensor(name)[:, 0] > 0

    @cached_property
    def tcp(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.frame("tcp")

    @property
    def tcp_pos(self) -> torch.Tensor:
        return self.tcp[0]

    @property
    def tcp_mat(self) -> torch.Tensor:
        return self.tcp[1]

    @property
    def gripper_opening(self) -> torch.Tensor:
        """(N,) 0 = closed, 1 = fully open, from the finger joints' positions."""
        return self.qpos[:, self.layout.finger_qpos_adr].mean(dim=-1) / FINGER_MAX_OPENING_M

    def raw_wrench(self) -> torch.Tensor:
        """(N, 6) force and torque at the flange in the world frame, before the reset's tare (the F/T site
        shares the TCP's orientation)."""
        rot = self.tcp_mat
        force = (rot @ self.sensor("ft_force")[..., None])[..., 0]
        torque = (rot @ self.sensor("ft_torque")[..., None])[..., 0]
        return torch.cat([force, torque], dim=-1)
