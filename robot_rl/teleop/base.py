"""The teleop interface: ``Teleoperator`` (connect / read / disconnect) and the ``TeleopCommand`` it returns.

Every device (SpaceMouse, gamepad, keyboard, ROS ``sensor_msgs/Joy``, the scripted corrector) reads its raw
input into a ``TeleopCommand``:

  active   bool        the human is intervening (deadman held / input above the activity threshold)
  action   float32 [7] contract units (``robot_rl.envs.contract``): dx..drz in [-1, 1], gripper latch
                       (-1 close, +1 open, 0 keep); all zero while inactive
  buttons  ``Buttons`` success / failure / reset / pause *presses* since the previous ``read()``

Raw input is parsed by pure functions next to each device (HID reports, SDL/evdev event tuples, key
bytes, Joy axes/buttons), so every parser is tested from recorded input without hardware.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from robot_rl.envs.contract import ACTION_DIM

TeleopName = Literal["none", "scripted", "keyboard", "spacemouse", "gamepad"]
"""Config values naming a teleop device (``robot_rl.teleop.make_teleop``); ``none``: no device."""


@dataclass(frozen=True)
class Buttons:
    """Operator buttons; in a ``TeleopCommand`` from ``read()`` each is a press (rising edge) since the last
    read, in the pure ``*_to_command`` functions each is the current level (held)."""

    success: bool = False
    failure: bool = False
    reset: bool = False
    pause: bool = False

    def any(self) -> bool:
        return self.success or self.failure or self.reset or self.pause

    def rising(self, previous: Buttons) -> Buttons:
        """Presses: buttons held now that were not held in ``previous``."""
        return Buttons(
            success=self.success and not previous.success,
            failure=self.failure and not previous.failure,
            reset=self.reset and not previous.reset,
            pause=self.pause and not previous.pause,
        )


def _zero_action() -> np.ndarray:
    return np.zeros(ACTION_DIM, np.float32)


@dataclass(frozen=True)
class TeleopCommand:
    active: bool = False
    action: np.ndarray = field(default_factory=_zero_action)
    buttons: Buttons = field(default_factory=Buttons)

    def __post_init__(self) -> None:
        a = np.asarray(self.action, np.float32)
        if a.shape != (ACTION_DIM,) or not np.all(np.isfinite(a)):
            raise ValueError(f"TeleopCommand.action must be finite [{ACTION_DIM}], got {a.tolist()}")
        object.__setattr__(self, "action", np.clip(a, -1.0, 1.0))


def gripper_latch(close: bool, open_: bool) -> float:
    """Contract gripper latch from two buttons: close wins over open; neither keeps the last command."""
    return -1.0 if close else 1.0 if open_ else 0.0


def apply_deadzone(values: np.ndarray, deadzone: float) -> np.ndarray:
    """Zero entries with ``|v| <= deadzone`` and rescale the rest so the output still spans [-1, 1]."""
    v = np.clip(np.nan_to_num(np.asarray(values, np.float64)), -1.0, 1.0)
    if deadzone <= 0:
        return v
    mag = np.clip((np.abs(v) - deadzone) / (1.0 - deadzone), 0.0, 1.0)
    return np.sign(v) * mag


class Teleoperator(ABC):
    """A human (or scripted stand-in) input device with a lifecycle: ``connect`` -> ``read``* -> ``disconnect``.

    ``read`` never blocks: it drains whatever input arrived and returns the current command. Devices used in
    a control loop may also get the policy's proposed action (``propose``, before ``read``) and episode
    boundaries (``on_reset``); the scripted corrector uses both, hardware devices ignore them.
    """

    name: str = "teleop"
    realtime: bool = True
    """A human is in the loop: pace simulated recording at the env's control rate."""

    def __init__(self) -> None:
        self._connected = False

    @property
    def is_connected(self) -> bool:
        return self._connected

    def connect(self) -> None:
        """Open the device (lazy-imports its library); raises ``ImportError`` / ``OSError`` naming the fix."""
        self._connected = True

    def disconnect(self) -> None:
        self._connected = False

    @abstractmethod
    def read(self) -> TeleopCommand:
        """Drain pending input; return the current command (button presses since the last read)."""

    def propose(self, policy_action: np.ndarray) -> None:  # noqa: B027 - optional hook
        """The action the policy is about to take (before ``read``)."""

    def on_reset(self, env: Any) -> None:  # noqa: B027 - optional hook
        """A new episode started in ``env`` (after ``env.reset``)."""

    def status(self) -> str:
        """One short line for the operator's display."""
        return self.name

    def __enter__(self) -> Teleoperator:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disconnect()


class MockTeleop(Teleoperator):
    """Replays a fixed list of commands (one per ``read``), then returns inactive commands; for tests."""

    name = "mock"
    realtime = False

    def __init__(self, commands: list[TeleopCommand]) -> None:
        super().__init__()
        self.commands = list(commands)
        self.reads = 0
        self.proposed: list[np.ndarray] = []
        self.resets = 0

    def read(self) -> TeleopCommand:
        i, self.reads = self.reads, self.reads + 1
        return self.commands[i] if i < len(self.commands) else TeleopCommand()

    def propose(self, policy_action: np.ndarray) -> None:
        self.proposed.append(np.asarray(policy_action, np.float32).copy())

    def on_reset(self, env: Any) -> None:
        self.resets += 1
