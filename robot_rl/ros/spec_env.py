"""The contract of a ROS 2 arm without ROS: spaces built from the hardware config alone (pure Python).

``RosArmEnv`` takes its ``contract`` from ``contract_for``; a learner on another machine (no ROS there)
builds the same spaces with ``make_contract_env`` -- e.g. as the distributed link's ``env_factory``
(``robot_rl.ros.spec_env:make_contract_env``), so actor and learner agree at handshake.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from robot_rl.envs.contract import CameraSpec, ContractSpec, Field
from robot_rl.ros.hardware import load_arm_config, load_camera_config


def contract_for(hardware_config: str, cameras: tuple[str, ...] | list[str] = (),
                 privileged_task: str = "") -> ContractSpec:
    arm = load_arm_config(hardware_config)
    cams = [load_camera_config(c) for c in cameras]
    return ContractSpec(
        cameras=tuple(CameraSpec(c.name, *c.output_hw_px) for c in cams),
        privileged_layout=privileged_layout(privileged_task),
        control_hz=arm.control_hz, max_step_m=arm.safety.max_step_m, max_step_rad=arm.safety.max_step_rad)


def privileged_layout(task: str) -> tuple[Field, ...]:
    if not task:
        return ()
    from robot_rl.sim.registry import task_entry  # sim-only; needs the sim extra

    return tuple(task_entry(task).task.privileged_layout)


class ContractEnv(gym.Env):
    """Spaces and contract only; ``reset``/``step`` raise (the real env runs on the robot PC)."""

    def __init__(self, contract: ContractSpec) -> None:
        self.contract = contract
        self.observation_space = contract.observation_space()
        self.action_space = contract.action_space()

    def reset(self, **kwargs: Any):
        raise RuntimeError("ContractEnv only describes a ROS 2 arm's spaces; it cannot be stepped")

    def step(self, action):
        raise RuntimeError("ContractEnv only describes a ROS 2 arm's spaces; it cannot be stepped")


def make_contract_env(hardware_config: str = "sim_panda", cameras: tuple[str, ...] | list[str] = (),
                      privileged_task: str = "", **_: Any) -> ContractEnv:
    return ContractEnv(contract_for(hardware_config, tuple(cameras), privileged_task))
