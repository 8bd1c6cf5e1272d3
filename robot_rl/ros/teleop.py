"""``JoyMapper``: a joystick / SpaceMouse (``sensor_msgs/Joy``) -> the ``rl/intervention`` vector (pure).

HIL-SERL's rule: the human is intervening while the input is deflected (``|axes| > threshold``) or a
gripper button is pressed; with a deadman button configured, only while it is held. The executed action
is then the human's, scaled into the contract's [-1, 1]. The spacenav driver publishes only on change,
so the last input is kept for ``input_timeout_s`` (a dead driver ends the intervention after that).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TeleopConfig:
    joy_topic: str = "spacenav/joy"
    rate_hz: float = 20.0
    """rl/intervention publish rate (Hz)."""
    axes: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    """Joy axis index for dx, dy, dz, drx, dry, drz (-1: unused)."""
    scale: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    """Per-axis factor (sign flips, sensitivity); the result is clipped to [-1, 1]."""
    threshold: float = 0.001
    deadman_button: int = -1
    """Button that must be held to intervene (-1: none, deflection alone counts)."""
    close_button: int = 0
    open_button: int = 1
    input_timeout_s: float = 5.0

    def __post_init__(self) -> None:
        if len(self.axes) != 6 or len(self.scale) != 6:
            raise ValueError(f"TeleopConfig.axes and scale need 6 entries, got {self.axes} / {self.scale}")
        if not (0 < self.rate_hz <= 200 and self.threshold >= 0 and self.input_timeout_s > 0):
            raise ValueError("TeleopConfig: rate_hz in (0, 200], threshold >= 0, input_timeout_s > 0")


class JoyMapper:
    def __init__(self, cfg: TeleopConfig) -> None:
        self.cfg = cfg
        self._axes: Sequence[float] = ()
        self._buttons: Sequence[int] = ()
        self._time_s = -math.inf

    def update(self, axes: Sequence[float], buttons: Sequence[int], now_s: float) -> None:
        self._axes, self._buttons, self._time_s = list(axes), list(buttons), now_s

    def _button(self, i: int) -> bool:
        return 0 <= i < len(self._buttons) and bool(self._buttons[i])

    def vector(self, now_s: float) -> np.ndarray:
        """[active, dx, dy, dz, drx, dry, drz, gripper]; all zero when inactive."""
        out = np.zeros(8)
        if now_s - self._time_s > self.cfg.input_timeout_s:
            return out
        motion = np.array([self._axes[i] * s if 0 <= i < len(self._axes) else 0.0
                           for i, s in zip(self.cfg.axes, self.cfg.scale)])
        motion = np.clip(np.nan_to_num(motion), -1.0, 1.0)
        gripper = 0.0
        if self._button(self.cfg.close_button):
            gripper = -1.0
        elif self._button(self.cfg.open_button):
            gripper = 1.0
        active = np.linalg.norm(motion) > self.cfg.threshold or gripper != 0.0
        if self.cfg.deadman_button >= 0:
            active = self._button(self.cfg.deadman_button)
        if active:
            out[0], out[1:7], out[7] = 1.0, motion, gripper
        return out
