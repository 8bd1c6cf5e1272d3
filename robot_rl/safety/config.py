"""``SafetyLimits``: the typed limits of the command safety filter (units in the field names), and presets.

Every limit is explicit: a real arm's hardware config gives each field, or names a preset from
``SAFETY_PRESETS`` and overrides what differs. The workspace box is never in a preset (it belongs to one table)
and ``control_hz`` comes from the arm config's top level. Values are checked for units as well as sign: a box
in millimetres or a per-step limit in metres is refused with the field and the likely mistake.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

Vec3 = tuple[float, float, float]

MAX_REACH_M = 3.0
"""No arm we drive reaches further than this from its base: box corners beyond it are a unit mistake."""


@dataclass(frozen=True)
class SafetyLimits:
    """Limits the robot bridge enforces between every policy/teleop action and the arm's controller."""

    workspace_low_m: Vec3
    """Lower corner of the box (robot base frame) every commanded TCP target is clipped to."""
    workspace_high_m: Vec3
    control_hz: float
    """Rate of policy actions; staleness is measured in control periods (the arm config's ``control_hz``)."""
    max_step_m: float
    """Contract action scale: translation per control step at action 1.0 (the policy was trained with it)."""
    max_step_rad: float
    """Contract action scale: rotation per control step at action 1.0."""
    max_translation_step_m: float
    """Hard limit on how far one command may move the target from the last commanded target (any cause)."""
    max_rotation_step_rad: float
    """Hard limit on how far one command may rotate the target from the last commanded target."""
    max_tilt_rad: float | None
    """The tool z axis may tilt at most this far from pointing straight down (None: no cone)."""
    max_target_error_m: float
    """Reference limiting (pose backends): the target stays this close to the measured TCP, per axis."""
    max_target_error_rad: float
    max_linear_speed_m_s: float
    """Velocity backends: norm limit of the commanded TCP linear velocity."""
    max_angular_speed_rad_s: float
    stale_periods: float
    """An action or observation older than this many control periods is stale: hold (pose) or zero (velocity).
    With the bridge's watchdog tick at >= 4x control_hz the safe command goes out within 2 periods."""
    max_measured_speed_m_s: float
    """Plausibility of TCP readings: a reading that implies a faster TCP motion since the previous accepted one
    (plus ``READING_SLACK_M`` of noise) is a bad input: dropped and counted, never used for a command."""
    max_measured_angular_speed_rad_s: float
    fault_after_bad_readings: int
    """This many unusable TCP readings in a row (implausible or malformed) raise the ``bad_readings`` fault."""
    latch_faults: bool
    """Faults (driver health, a second command publisher, bad readings) latch until ``~/clear_faults``, like the
    e-stop; False: a fault ends by itself when its condition does."""

    def __post_init__(self) -> None:
        for name in ("workspace_low_m", "workspace_high_m"):
            value = getattr(self, name)
            if len(value) != 3:
                raise ValueError(f"SafetyLimits.{name} must have 3 entries (x, y, z in m), got {list(value)}")
        for i, (lo, hi) in enumerate(zip(self.workspace_low_m, self.workspace_high_m)):
            if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"SafetyLimits.workspace_low_m[{i}] must be finite and below workspace_high_m[{i}], "
                    f"got {list(self.workspace_low_m)} / {list(self.workspace_high_m)}"
                )
            for name, v in (("workspace_low_m", lo), ("workspace_high_m", hi)):
                if abs(v) > MAX_REACH_M:
                    raise ValueError(f"SafetyLimits.{name}[{i}] = {v} m is more than {MAX_REACH_M} m from the "
                                     "base: the box is in metres (millimetres given?)")
        _in_range(self, "control_hz", 1.0, 1000.0, "Hz")
        for name, hi in (("max_step_m", 0.1), ("max_translation_step_m", 0.1), ("max_target_error_m", 0.2),
                         ("max_linear_speed_m_s", 2.0), ("max_measured_speed_m_s", 10.0)):
            _in_range(self, name, 0.0, hi, "m (millimetres or a whole move given?)", low_open=True)
        for name, hi in (("max_step_rad", 0.5), ("max_rotation_step_rad", 0.5), ("max_target_error_rad", 1.0),
                         ("max_angular_speed_rad_s", 6.0), ("max_measured_angular_speed_rad_s", 30.0)):
            _in_range(self, name, 0.0, hi, "rad (degrees given?)", low_open=True)
        if self.max_tilt_rad is not None:
            _in_range(self, "max_tilt_rad", 0.0, math.pi, "rad (degrees given?)")
        _in_range(self, "stale_periods", 1.0, 2.0, "control periods")
        if isinstance(self.fault_after_bad_readings, bool) or not isinstance(self.fault_after_bad_readings, int) \
                or not 1 <= self.fault_after_bad_readings <= 100:
            raise ValueError(f"SafetyLimits.fault_after_bad_readings must be an integer in [1, 100], got "
                             f"{self.fault_after_bad_readings!r}")
        if not isinstance(self.latch_faults, bool):
            raise ValueError(f"SafetyLimits.latch_faults must be true or false, got {self.latch_faults!r}")

    @property
    def control_period_s(self) -> float:
        return 1.0 / self.control_hz

    @property
    def stale_after_s(self) -> float:
        return self.stale_periods / self.control_hz

    @classmethod
    def from_preset(cls, preset: str, **fields: Any) -> SafetyLimits:
        """The limits of ``SAFETY_PRESETS[preset]`` with ``fields`` (the box, ``control_hz``, overrides)."""
        if preset not in SAFETY_PRESETS:
            raise ValueError(f"unknown safety preset {preset!r}; presets: {sorted(SAFETY_PRESETS)}")
        return cls(**{**SAFETY_PRESETS[preset], **fields})


def _in_range(limits: SafetyLimits, name: str, lo: float, hi: float, unit: str, low_open: bool = False) -> None:
    value = getattr(limits, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (lo < value if low_open else lo <= value) and value <= hi
    if not ok:
        bracket = "(" if low_open else "["
        raise ValueError(f"SafetyLimits.{name} must be a number in {bracket}{lo}, {hi}] {unit}, got {value!r}")


_STANDARD: dict[str, Any] = {
    "max_step_m": 0.02, "max_step_rad": 0.1, "max_translation_step_m": 0.035, "max_rotation_step_rad": 0.18,
    "max_tilt_rad": 0.6, "max_target_error_m": 0.03, "max_target_error_rad": 0.25,
    "max_linear_speed_m_s": 0.2, "max_angular_speed_rad_s": 0.8, "stale_periods": 1.5,
    "max_measured_speed_m_s": 2.0, "max_measured_angular_speed_rad_s": 6.0, "fault_after_bad_readings": 3,
    "latch_faults": True,
}
SAFETY_PRESETS: dict[str, Mapping[str, Any]] = {
    "standard": _STANDARD,
    "cautious": {**_STANDARD, "max_translation_step_m": 0.02, "max_rotation_step_rad": 0.1,
                 "max_linear_speed_m_s": 0.1, "max_angular_speed_rad_s": 0.4, "max_target_error_m": 0.02,
                 "max_target_error_rad": 0.15},
}
"""Named limit sets (every field but the box and ``control_hz``). ``standard`` keeps the simulated tasks'
action scale; ``cautious`` clips diagonal moves to 2 cm per command and halves speeds, for the first runs on a
new set-up."""

PRESET_FIELDS = frozenset(f.name for f in dataclasses.fields(SafetyLimits)) - {
    "workspace_low_m", "workspace_high_m", "control_hz"}
