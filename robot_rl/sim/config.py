"""Typed configs of the simulated arm environment (one place per default; tasks override via their config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from robot_rl.sim.arm import ImpedanceGains

Range = tuple[float, float]


def _check_range(owner: str, name: str, value: Range | None, lowest: float = 0.0) -> None:
    if value is None:
        return
    lo, hi = value
    if not (lowest <= lo <= hi):
        raise ValueError(f"{owner}.{name} must satisfy {lowest} <= low <= high, got {value}")


@dataclass(frozen=True)
class RandomizationConfig:
    """Domain randomisation, all off by default. Scales are sampled uniformly per episode at reset."""

    friction_scale: Range | None = None
    """Multiplies the sliding friction of every geom."""
    mass_scale: Range | None = None
    """Multiplies the mass (and inertia) of every free object of the task."""
    joint_damping_scale: Range | None = None
    """Multiplies the damping of every arm and finger joint."""
    actuator_gain_scale: Range | None = None
    """Multiplies the Cartesian impedance stiffness and damping."""
    camera_pos_jitter_m: float = 0.0
    """Std of a Gaussian offset (m) added to each fixed camera's position."""
    camera_rot_jitter_rad: float = 0.0
    """Std of a random rotation (rad) applied to each fixed camera's orientation."""
    obs_noise_std: float = 0.0
    """Std of Gaussian noise added to ``state`` and ``privileged`` observations."""
    action_latency_steps: int = 0
    """Actions take effect this many control steps late (the first steps repeat a zero action)."""

    def __post_init__(self) -> None:
        for name in ("friction_scale", "mass_scale", "joint_damping_scale", "actuator_gain_scale"):
            _check_range("RandomizationConfig", name, getattr(self, name), lowest=1e-6)
        for name in ("camera_pos_jitter_m", "camera_rot_jitter_rad", "obs_noise_std"):
            if getattr(self, name) < 0:
                raise ValueError(f"RandomizationConfig.{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.action_latency_steps <= 10:
            raise ValueError(
                f"RandomizationConfig.action_latency_steps must be in [0, 10], got {self.action_latency_steps}"
            )


@dataclass(frozen=True)
class ArmEnvConfig:
    """The simulated arm, its controller and the observation/action contract settings."""

    obs_mode: Literal["state", "pixels"] = "state"
    """``state``: proprio + privileged object state; ``pixels``: proprio + camera images (no privileged)."""
    cameras: tuple[str, ...] = ("front", "wrist")
    """Cameras rendered in pixel mode (``front`` is fixed, ``wrist`` rides on the hand)."""
    image_size: int = 128
    """Square image side in pixels (64..256)."""
    control_hz: float = 10.0
    """Policy rate; the impedance controller runs at the physics rate underneath."""
    physics_dt_s: float = 0.002
    max_step_m: float = 0.02
    """Translation per control step at action 1.0 (m)."""
    max_step_rad: float = 0.1
    """Rotation per control step at action 1.0 (rad)."""
    workspace_low: tuple[float, float, float] = (0.25, -0.35, 0.012)
    """Lower corner (m, base frame) of the box the commanded TCP target is clipped to."""
    workspace_high: tuple[float, float, float] = (0.75, 0.35, 0.45)
    max_tilt_rad: float = 0.6
    """Commanded tool axis may tilt at most this far from pointing straight down."""
    max_target_error_m: float = 0.04
    """Reference limiting: the impedance target stays within this distance of the measured TCP per axis."""
    max_target_error_rad: float = 0.3
    max_episode_steps: int = 100
    dense_reward: bool = False
    """Add the task's weighted shaping terms to the sparse success reward."""
    terminate_on_success: bool = True
    init_tcp_noise_m: float = 0.02
    """Uniform noise (m, per axis) on the TCP start position around the task's start point."""
    gains: ImpedanceGains = field(default_factory=ImpedanceGains)
    menagerie_panda_dir: str | None = None
    """Local ``mujoco_menagerie/franka_emika_panda`` folder: render the arm with its meshes (visual only)."""
    randomization: RandomizationConfig = field(default_factory=RandomizationConfig)

    def __post_init__(self) -> None:
        if self.obs_mode not in ("state", "pixels"):
            raise ValueError(f"ArmEnvConfig.obs_mode must be 'state' or 'pixels', got {self.obs_mode!r}")
        if not 64 <= self.image_size <= 256:
            raise ValueError(f"ArmEnvConfig.image_size must be in [64, 256], got {self.image_size}")
        unknown = set(self.cameras) - {"front", "wrist"}
        if unknown or not self.cameras:
            raise ValueError(
                f"ArmEnvConfig.cameras must be a non-empty subset of ('front', 'wrist'), got {self.cameras}"
            )
        if not 1 <= self.control_hz <= 100:
            raise ValueError(f"ArmEnvConfig.control_hz must be in [1, 100] Hz, got {self.control_hz}")
        if not 1e-4 <= self.physics_dt_s <= 0.01:
            raise ValueError(f"ArmEnvConfig.physics_dt_s must be in [1e-4, 0.01] s, got {self.physics_dt_s}")
        ratio = 1.0 / (self.control_hz * self.physics_dt_s)
        if abs(ratio - round(ratio)) > 1e-6 or round(ratio) < 1:
            raise ValueError(
                f"ArmEnvConfig: 1 / (control_hz * physics_dt_s) must be a whole number of physics steps, "
                f"got control_hz={self.control_hz}, physics_dt_s={self.physics_dt_s}"
            )
        if not 0 < self.max_step_m <= 0.1:
            raise ValueError(f"ArmEnvConfig.max_step_m must be in (0, 0.1] m, got {self.max_step_m}")
        if not 0 < self.max_step_rad <= 0.5:
            raise ValueError(f"ArmEnvConfig.max_step_rad must be in (0, 0.5] rad, got {self.max_step_rad}")
        if any(lo >= hi for lo, hi in zip(self.workspace_low, self.workspace_high)):
            raise ValueError(
                f"ArmEnvConfig.workspace_low must be below workspace_high on every axis, "
                f"got {self.workspace_low} / {self.workspace_high}"
            )
        if not 0 <= self.max_tilt_rad <= 1.5:
            raise ValueError(f"ArmEnvConfig.max_tilt_rad must be in [0, 1.5] rad, got {self.max_tilt_rad}")
        if self.max_target_error_m <= 0 or self.max_target_error_rad <= 0:
            raise ValueError("ArmEnvConfig.max_target_error_m and max_target_error_rad must be > 0")
        if self.max_episode_steps < 1:
            raise ValueError(f"ArmEnvConfig.max_episode_steps must be >= 1, got {self.max_episode_steps}")
        if self.init_tcp_noise_m < 0:
            raise ValueError(f"ArmEnvConfig.init_tcp_noise_m must be >= 0, got {self.init_tcp_noise_m}")

    @property
    def substeps(self) -> int:
        return round(1.0 / (self.control_hz * self.physics_dt_s))
