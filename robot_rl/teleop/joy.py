"""Axes + buttons -> ``TeleopCommand``: the one mapping every joystick-like device shares (pure functions).

``joy_to_command(axes, buttons, config)`` is what a ROS 2 node calls on each ``sensor_msgs/Joy`` message
(``spacenav/joy`` from the spacenav driver, ``joy`` from ``joy_node``); the SpaceMouse and gamepad devices
parse their raw input into the same (axes, buttons) lists and call it too.

Activity (HIL-SERL's rule): the human is active while the motion is above ``threshold`` (L2 norm over the
six arm axes after the deadzone) or a gripper button is held; with a ``deadman_button`` configured, exactly
while that button is held (``teleop_twist_joy``'s ``require_enable_button``).
"""

from __future__ import annotations

import dataclasses
import math
import time
from abc import abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from robot_rl.teleop.base import Buttons, TeleopCommand, Teleoperator, apply_deadzone, gripper_latch

ARM_AXES = 6


@dataclass(frozen=True)
class JoyConfig:
    """How a device's axes and buttons map onto the contract action (index -1: not mapped)."""

    axes: tuple[int, ...] = (0, 1, 2, 3, 4, 5)
    """Input axis index for dx, dy, dz, drx, dry, drz (-1: that action dim stays 0)."""
    scale: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    """Per action dim factor (sign flips into the robot base frame, sensitivity); result clipped to [-1, 1]."""
    deadzone: float = 0.0
    """Per-axis deadzone on the raw [-1, 1] axis (stick drift); the rest is rescaled to span [-1, 1]."""
    threshold: float = 0.001
    """The human counts as active when the L2 norm of the 6 arm dims exceeds this (HIL-SERL: 0.001)."""
    deadman_button: int = -1
    """Button that must be held to intervene (-1: none; motion or a gripper button alone counts)."""
    close_button: int = 0
    open_button: int = 1
    success_button: int = -1
    failure_button: int = -1
    reset_button: int = -1
    pause_button: int = -1

    def __post_init__(self) -> None:
        if len(self.axes) != ARM_AXES:
            raise ValueError(f"JoyConfig.axes needs {ARM_AXES} entries (dx..drz), got {self.axes}")
        if len(self.scale) != ARM_AXES or not all(math.isfinite(s) for s in self.scale):
            raise ValueError(f"JoyConfig.scale needs {ARM_AXES} finite entries, got {self.scale}")
        if not 0.0 <= self.deadzone < 1.0:
            raise ValueError(f"JoyConfig.deadzone must be in [0, 1), got {self.deadzone}")
        if not (math.isfinite(self.threshold) and self.threshold >= 0.0):
            raise ValueError(f"JoyConfig.threshold must be a finite number >= 0, got {self.threshold}")
        for name in ("deadman_button", "close_button", "open_button", "success_button", "failure_button",
                     "reset_button", "pause_button"):
            if getattr(self, name) < -1:
                raise ValueError(f"JoyConfig.{name} must be a button index >= 0 or -1 (unused)")
        if any(i < -1 for i in self.axes):
            raise ValueError(f"JoyConfig.axes entries must be >= -1, got {self.axes}")


def _held(buttons: Sequence[int | bool], index: int) -> bool:
    return 0 <= index < len(buttons) and bool(buttons[index])


def joy_to_command(axes: Sequence[float], buttons: Sequence[int | bool], config: JoyConfig) -> TeleopCommand:
    """One ``sensor_msgs/Joy``-like sample -> command. ``buttons`` in the result are *levels* (held now).

    axes: floats, normally in [-1, 1] (NaN is treated as 0; missing indices as 0).
    buttons: 0/1 per button. The action is all zero while inactive.
    """
    raw = np.array([axes[i] if 0 <= i < len(axes) else 0.0 for i in config.axes], np.float64)
    motion = np.clip(apply_deadzone(raw, config.deadzone) * np.asarray(config.scale), -1.0, 1.0)
    gripper = gripper_latch(_held(buttons, config.close_button), _held(buttons, config.open_button))
    if config.deadman_button >= 0:
        active = _held(buttons, config.deadman_button)
    else:
        active = bool(np.linalg.norm(motion) > config.threshold or gripper != 0.0)
    pressed = Buttons(
        success=_held(buttons, config.success_button),
        failure=_held(buttons, config.failure_button),
        reset=_held(buttons, config.reset_button),
        pause=_held(buttons, config.pause_button),
    )
    action = np.zeros(ARM_AXES + 1, np.float32)
    if active:
        action[:ARM_AXES], action[ARM_AXES] = motion, gripper
    return TeleopCommand(active=active, action=action, buttons=pressed)


def command_to_vector(command: TeleopCommand) -> np.ndarray:
    """[active, dx, dy, dz, drx, dry, drz, gripper]: the ``rl/intervention`` named vector of the ROS nodes."""
    return np.concatenate([[float(command.active)], command.action]).astype(np.float64)


class JoyDevice(Teleoperator):
    """A device whose raw input is parsed into (axes, buttons) lists, then mapped by ``joy_to_command``;
    ``read`` turns button levels into presses."""

    def __init__(self, mapping: JoyConfig) -> None:
        super().__init__()
        self.mapping = mapping
        self._previous = Buttons()
        self._last = TeleopCommand()

    @abstractmethod
    def poll(self) -> tuple[Sequence[float], Sequence[int]]:
        """Drain pending raw input; return the current (axes, buttons)."""

    def read(self) -> TeleopCommand:
        axes, buttons = self.poll()
        command = joy_to_command(axes, buttons, self.mapping)
        pressed = command.buttons.rising(self._previous)
        self._previous = command.buttons
        self._last = dataclasses.replace(command, buttons=pressed)
        return self._last

    def status(self) -> str:
        return f"{self.name}: {'ACTIVE' if self._last.active else 'idle'}"


class JoyTeleop(JoyDevice):
    """A ``Teleoperator`` fed from outside, e.g. by a ROS 2 ``sensor_msgs/Joy`` subscription callback
    (``update``). The spacenav driver publishes only on change, so the last sample is kept for
    ``input_timeout_s``; after that (driver dead) the human counts as inactive."""

    name = "joy"

    def __init__(
        self, mapping: JoyConfig, input_timeout_s: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not input_timeout_s > 0:
            raise ValueError(f"JoyTeleop.input_timeout_s must be > 0, got {input_timeout_s}")
        super().__init__(mapping)
        self.input_timeout_s = input_timeout_s
        self._clock = clock
        self._axes: list[float] = []
        self._buttons: list[int] = []
        self._stamp_s = -math.inf

    def update(self, axes: Sequence[float], buttons: Sequence[int], stamp_s: float | None = None) -> None:
        self._axes, self._buttons = list(axes), list(buttons)
        self._stamp_s = self._clock() if stamp_s is None else stamp_s

    def poll(self) -> tuple[Sequence[float], Sequence[int]]:
        if self._clock() - self._stamp_s > self.input_timeout_s:
            return [], []
        return self._axes, self._buttons


# --- presets: (axes, buttons) layouts of common drivers, mapped into the robot base frame -------------------


def spacenav_joy() -> JoyConfig:
    """ROS 2 ``spacenav`` driver (``spacenav/joy``): 6 normalised axes x, y, z, rx, ry, rz; buttons left /
    right close / open the gripper (HIL-SERL). Its axes already follow the ROS (x forward, z up) frame."""
    return JoyConfig(close_button=0, open_button=1)


def ros_xbox_joy() -> JoyConfig:
    """ROS 2 ``joy_node`` with an Xbox pad. Axes: 0 LX (left +), 1 LY (up +), 2 LT, 3 RX, 4 RY, 5 RT,
    6/7 d-pad; buttons: A0 B1 X2 Y3 LB4 RB5 back6 start7. Left stick moves in the table plane, right stick
    y lifts, right stick x yaws; LB is the deadman; A closes, B opens; Y success, X failure, back reset,
    start pause."""
    return JoyConfig(
        axes=(1, 0, 4, -1, -1, 3), deadzone=0.1, deadman_button=4, close_button=0, open_button=1,
        success_button=3, failure_button=2, reset_button=6, pause_button=7,
    )


def sdl_xbox() -> JoyConfig:
    """An Xbox-layout pad read through SDL (pygame) or evdev (re-indexed to SDL order): axes 0 LX, 1 LY,
    2 LT, 3 RX, 4 RY, 5 RT, 6/7 d-pad, with SDL's signs (right +, down +), so forward / left / up flip."""
    return JoyConfig(
        axes=(1, 0, 4, -1, -1, 3), scale=(-1.0, -1.0, -1.0, 1.0, 1.0, -1.0), deadzone=0.1, deadman_button=4,
        close_button=0, open_button=1, success_button=3, failure_button=2, reset_button=6, pause_button=7,
    )


def spacemouse_hid() -> JoyConfig:
    """A SpaceMouse read as raw HID (``robot_rl.teleop.spacemouse``), axes in its own frame after parsing:
    x right, y toward the screen, z up, roll/pitch/yaw about them. Mapped for an operator standing behind
    the robot's base and facing along its +x: push forward -> +x, push left -> +y, lift -> +z.
    Left button closes the gripper, right button opens it."""
    return JoyConfig(
        axes=(1, 0, 2, 4, 3, 5), scale=(1.0, -1.0, 1.0, 1.0, -1.0, 1.0), deadzone=0.05,
        close_button=0, open_button=1,
    )
