"""Teleoperation: devices behind one small interface, for interventions, demos and success labels.

Device libraries (hidapi, pygame, evdev) are optional and imported only in ``connect()``.
See docs/human_in_the_loop.md.
"""

from __future__ import annotations

from collections.abc import Callable

from robot_rl.teleop.base import Buttons, MockTeleop, TeleopCommand, Teleoperator
from robot_rl.teleop.corrector import CorrectorConfig, ScriptedCorrector
from robot_rl.teleop.gamepad import Gamepad, GamepadConfig
from robot_rl.teleop.joy import JoyConfig, JoyTeleop, joy_to_command
from robot_rl.teleop.keyboard import Keyboard, KeyboardConfig
from robot_rl.teleop.spacemouse import SpaceMouse, SpaceMouseConfig

# The explicit device registry: ``robot-rl train --teleop NAME`` / ``record-demos --teleop NAME``. Each entry
# builds its device from the scripted corrector's config, which only the scripted one uses.
DEVICES: dict[str, Callable[[CorrectorConfig | None], Teleoperator]] = {
    "scripted": ScriptedCorrector,
    "keyboard": lambda _: Keyboard(),
    "spacemouse": lambda _: SpaceMouse(),
    "gamepad": lambda _: Gamepad(),
}


def make_teleop(name: str, corrector: CorrectorConfig | None = None) -> Teleoperator:
    """A device by registry name (not yet connected); ``corrector`` configures the scripted one."""
    if name not in DEVICES:
        raise ValueError(f"unknown teleop device {name!r}; known: {sorted(DEVICES)}")
    return DEVICES[name](corrector)


__all__ = [
    "DEVICES",
    "Buttons",
    "CorrectorConfig",
    "Gamepad",
    "GamepadConfig",
    "JoyConfig",
    "JoyTeleop",
    "Keyboard",
    "KeyboardConfig",
    "MockTeleop",
    "ScriptedCorrector",
    "SpaceMouse",
    "SpaceMouseConfig",
    "TeleopCommand",
    "Teleoperator",
    "joy_to_command",
    "make_teleop",
]
