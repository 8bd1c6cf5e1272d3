"""Typed configs of the simulated arm environment (one place per default; tasks override via their config)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from robot_rl.safety.config import SafetyLimits
from robot_rl.sim.arm import ImpedanceGains

Range = tuple[float, float]


def _check_range(owner: str, name: str, value: Range | None, lowest: float = 0.0) -> None:
    if value is None:
        return
    if not (isinstance(value, (tuple, list)) and len(value) == 2):
        raise ValueError(f"{owner}.{name} must be a (low, high) pair, got {value!r}")
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
    action_latency_steps: int | tuple[int, int] = 0
    """Actions take effect this many control steps late (the first steps repeat a zero action); a ``(low,
    high)`` pair draws the delay per episode (per world), uniformly from low to high inclusive."""

    def __post_init__(self) -> None:
        for name in ("friction_scale", "mass_scale", "joint_damping_scale", "actuator_gain_scale"):
            _check_range("RandomizationConfig", name, getattr(self, name), lowest=1e-6)
        for name in ("camera_pos_jitter_m", "camera_rot_jitter_rad", "obs_noise_std"):
            if getattr(self, name) < 0:
                raise ValueError(f"RandomizationConfig.{name} must be >= 0, got {getattr(self, name)}")
        low, high = self.latency_range
        if not 0 <= low <= high <= 10:
            raise ValueError(f"RandomizationConfig.action_latency_steps must be whole steps in [0, 10] (one, or a "
                             f"(low, high) pair with low <= high), got {self.action_latency_steps}")

    @property
    def latency_range(self) -> tuple[int, int]:
        """The action delay's bounds in control steps (equal for a fixed delay)."""
        steps = self.action_latency_steps
        low, high = (steps, steps) if isinstance(steps, int) else steps
        return int(low), int(high)


RANDOMIZATION_PRESETS: dict[str, RandomizationConfig] = {
    "none": RandomizationConfig(),
    "robust": RandomizationConfig(
        friction_scale=(0.5, 1.5),
        mass_scale=(0.5, 2.0),
        joint_damping_scale=(0.7, 1.3),
        actuator_gain_scale=(0.7, 1.3),
        camera_pos_jitter_m=0.01,
        camera_rot_jitter_rad=0.02,
        obs_noise_std=0.002,
        action_latency_steps=(0, 1),
    ),
}
"""Named domain randomisations (``--randomization``). ``robust`` trains policies meant for another simulator or
a real arm: contact friction and object masses over the spread of real tabletop objects, the arm's damping
and the controller's stiffness +-30% (an impedance controller on a real arm is never exactly its nominal
gains), small camera pose errors, 2 mm / 2 mrad of observation noise, and commands that take effect up to one
control step late (a real arm's driver and network add 10-100 ms)."""


SIM_ARM_SAFETY = SafetyLimits(
    workspace_low_m=(0.25, -0.35, 0.012),
    workspace_high_m=(0.75, 0.35, 0.45),
    control_hz=10.0,
    max_step_m=0.02,
    max_step_rad=0.1,
    max_translation_step_m=0.035,
    max_rotation_step_rad=0.18,
    max_tilt_rad=0.6,
    max_target_error_m=0.04,
    max_target_error_rad=0.3,
    max_linear_speed_m_s=0.25,
    max_angular_speed_rad_s=1.0,
    stale_periods=1.5,
    max_measured_speed_m_s=2.0,
    max_measured_angular_speed_rad_s=6.0,
    fault_after_bad_readings=3,
    latch_faults=True,
)
"""The simulated arm's safety limits: those of its hardware config (``hardware_configs/arms/sim_panda.yaml``,
behind the sim robot node; a test keeps the two equal), so a policy meets the same gate in the simulated env
as behind the robot bridge."""


@dataclass(frozen=True)
class ArmEnvConfig:
    """The simulated arm, its controller and the observation/action contract settings."""

    obs_mode: Literal["state", "pixels"] = "state"
    """``state``: proprio + privileged object state; ``pixels``: proprio + camera images (no privileged)."""
    cameras: tuple[str, ...] = ("front", "wrist")
    """Cameras rendered in pixel mode (``front`` is fixed, ``wrist`` rides on the hand)."""
    image_size: int = 128
    """Square image side in pixels (64..256)."""
    physics_dt_s: float = 0.002
    safety: SafetyLimits = SIM_ARM_SAFETY
    """The gate every action passes (``robot_rl.safety.gate.pose_step``): action scale (``max_step_m`` /
    ``max_step_rad`` per control step at action 1.0), workspace box, tilt cone, reference limiting, step limits,
    and the policy rate ``control_hz`` (the impedance controller runs at the physics rate underneath)."""
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
        if not 0 < self.max_step_m <= 0.1:
            raise ValueError(f"ArmEnvConfig.safety.max_step_m must be in (0, 0.1] m, got {self.max_step_m}")
        if not 0 < self.max_step_rad <= 0.5:
            raise ValueError(f"ArmEnvConfig.safety.max_step_rad must be in (0, 0.5] rad, got {self.max_step_rad}")
        if not 1 <= self.control_hz <= 100:
            raise ValueError(f"ArmEnvConfig.safety.control_hz must be in [1, 100] Hz, got {self.control_hz}")
        if not 1e-4 <= self.physics_dt_s <= 0.01:
            raise ValueError(f"ArmEnvConfig.physics_dt_s must be in [1e-4, 0.01] s, got {self.physics_dt_s}")
        ratio = 1.0 / (self.control_hz * self.physics_dt_s)
        if abs(ratio - round(ratio)) > 1e-6 or round(ratio) < 1:
            raise ValueError(
                f"ArmEnvConfig: 1 / (control_hz * physics_dt_s) must be a whole number of physics steps, "
                f"got control_hz={self.control_hz}, physics_dt_s={self.physics_dt_s}"
            )
        if self.max_episode_steps < 1:
            raise ValueError(f"ArmEnvConfig.max_episode_steps must be >= 1, got {self.max_episode_steps}")
        if self.init_tcp_noise_m < 0:
            raise ValueError(f"ArmEnvConfig.init_tcp_noise_m must be >= 0, got {self.init_tcp_noise_m}")

    @property
    def control_hz(self) -> float:
        return self.safety.control_hz

    @property
    def max_step_m(self) -> float:
        return self.safety.max_step_m

    @property
    def max_step_rad(self) -> float:
        return self.safety.max_step_rad

    @property
    def substeps(self) -> int:
        return round(1.0 / (self.control_hz * self.physics_dt_s))
