"""``SafetyLimits``: the typed limits of the command safety filter (units in the field names)."""

from __future__ import annotations

import math
from dataclasses import dataclass

Vec3 = tuple[float, float, float]


@dataclass(frozen=True)
class SafetyLimits:
    """Limits the robot bridge enforces between every policy/teleop action and the arm's controller."""

    workspace_low_m: Vec3 = (0.25, -0.35, 0.012)
    """Lower corner of the box (robot base frame) every commanded TCP target is clipped to."""
    workspace_high_m: Vec3 = (0.75, 0.35, 0.45)
    max_step_m: float = 0.02
    """Contract action scale: translation per control step at action 1.0."""
    max_step_rad: float = 0.1
    """Contract action scale: rotation per control step at action 1.0."""
    max_translation_step_m: float = 0.03
    """Hard limit on the norm of one command's translation (whatever the action scale says)."""
    max_rotation_step_rad: float = 0.15
    """Hard limit on one command's rotation angle."""
    max_tilt_rad: float | None = 0.6
    """The tool z axis may tilt at most this far from pointing straight down (None: no cone)."""
    max_target_error_m: float = 0.04
    """Reference limiting (pose backends): the target stays this close to the measured TCP, per axis."""
    max_target_error_rad: float = 0.3
    max_linear_speed_m_s: float = 0.25
    """Velocity backends: norm limit of the commanded TCP linear velocity."""
    max_angular_speed_rad_s: float = 1.0
    control_hz: float = 10.0
    """Rate of policy actions; staleness is measured in control periods."""
    stale_periods: float = 1.5
    """An action or observation older than this many control periods is stale: hold (pose) or zero (velocity).
    With the bridge's watchdog tick at >= 4x control_hz the safe command goes out within 2 periods."""

    def __post_init__(self) -> None:
        for i, (lo, hi) in enumerate(zip(self.workspace_low_m, self.workspace_high_m)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"SafetyLimits.workspace_low_m[{i}] must be finite and below workspace_high_m[{i}], "
                    f"got {self.workspace_low_m} / {self.workspace_high_m}"
                )
        if len(self.workspace_low_m) != 3 or len(self.workspace_high_m) != 3:
            raise ValueError("SafetyLimits.workspace_low_m / workspace_high_m must have 3 entries (x, y, z)")
        positive = (
            "max_step_m", "max_step_rad", "max_translation_step_m", "max_rotation_step_rad",
            "max_target_error_m", "max_target_error_rad", "max_linear_speed_m_s", "max_angular_speed_rad_s",
            "control_hz",
        )
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"SafetyLimits.{name} must be a finite number > 0, got {value}")
        if self.max_tilt_rad is not None and not 0 <= self.max_tilt_rad <= math.pi:
            raise ValueError(f"SafetyLimits.max_tilt_rad must be in [0, pi] or None, got {self.max_tilt_rad}")
        if not 1.0 <= self.stale_periods <= 2.0:
            raise ValueError(f"SafetyLimits.stale_periods must be in [1, 2], got {self.stale_periods}")

    @property
    def control_period_s(self) -> float:
        return 1.0 / self.control_hz

    @property
    def stale_after_s(self) -> float:
        return self.stale_periods / self.control_hz
