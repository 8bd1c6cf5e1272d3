"""The typed parameters of robot_rl's ROS 2 nodes that have no library module of their own (pure Python).

Each default is defined once, here or in the node's library config (``PolicyActorConfig``, ``TeleopConfig``,
``RewardNodeConfig``): the nodes declare their parameters from these dataclasses (``runtime.declare_dataclass``),
the launch files take their argument defaults from them (``robot_rl_ros.plans``), and the shipped parameter
files (``config/*.yaml``) hold only overrides of them (tested).
"""

from __future__ import annotations

from dataclasses import dataclass

SIM_ARM = "sim_panda"
"""The arm config every node defaults to: the MuJoCo arm behind the sim_robot node."""


@dataclass(frozen=True)
class BridgeParams:
    hardware_config: str = SIM_ARM
    """Arm config name (hardware_configs/arms/<name>.yaml) or path."""
    state_hz: float = 500.0
    """Max rate of rl/robot_state (Hz); it is published on driver pose messages."""


@dataclass(frozen=True)
class CameraParams:
    camera_config: str = "sim_front"
    """Camera config name (hardware_configs/cameras/<name>.yaml) or path."""


@dataclass(frozen=True)
class SimRobotParams:
    hardware_config: str = SIM_ARM


@dataclass(frozen=True)
class SimRobotConfig:
    task: str = "reach"
    seed: int = 0
    state_hz: float = 100.0
    """Rate of joint_states / current_pose / wrench (Hz); physics catches up with wall time at each tick."""
    cameras: tuple[str, ...] = ()
    """Sim cameras to render and publish (front, wrist); empty for state-only tasks."""
    camera_hz: float = 15.0
    camera_hw_px: tuple[int, int] = (128, 128)

    def __post_init__(self) -> None:
        if not 10 <= self.state_hz <= 1000:
            raise ValueError(f"SimRobotConfig.state_hz must be in [10, 1000] Hz, got {self.state_hz}")
        if not 1 <= self.camera_hz <= 60:
            raise ValueError(f"SimRobotConfig.camera_hz must be in [1, 60] Hz, got {self.camera_hz}")


@dataclass(frozen=True)
class RosEnvConfig:
    hardware_config: str = SIM_ARM
    """Arm config name or path (control_hz and the action scale come from it)."""
    cameras: tuple[str, ...] = ()
    """Camera config names or paths; each adds ``images/<name>`` at its output size."""
    privileged_task: str = ""
    """Sim only: the task whose privileged layout the sim robot publishes on ``rl/privileged``."""
    bridge: str = "robot_bridge"
    """Node name of the robot bridge (its ``~/reset`` service)."""
    reward: bool = False
    """Read reward and success from ``rl/reward`` (the sim robot, a reward node); False: reward 0, never success
    (a real arm has no reward source unless a reward node runs, and a reset would wait for one)."""
    max_episode_steps: int = 100
    terminate_on_success: bool = True
    step_timeout_s: float = 0.5
    reset_timeout_s: float = 60.0
    fresh_state_wait: float = 0.5
    """Fraction of a control period that a step waits after its tick for a robot state newer than the tick.
    Past it the step goes on with the latest state if that is newer than the previous observation's (a late
    observation, counted), so a pause of the state stream costs freshness, not a command cycle; with nothing
    newer it waits on for ``step_timeout_s`` (then stale)."""

    def __post_init__(self) -> None:
        if self.max_episode_steps < 1:
            raise ValueError(f"RosEnvConfig.max_episode_steps must be >= 1, got {self.max_episode_steps}")
        if not 0 < self.fresh_state_wait <= 1:
            raise ValueError(f"RosEnvConfig.fresh_state_wait must be in (0, 1], got {self.fresh_state_wait}")
        if self.step_timeout_s <= 0 or self.reset_timeout_s <= 0:
            raise ValueError("RosEnvConfig.step_timeout_s and reset_timeout_s must be > 0")
