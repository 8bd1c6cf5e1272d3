"""Keyboard teleop in a plain terminal (no display): stdin in cbreak mode, read without blocking.

A terminal reports key *presses* only (no releases; a held key auto-repeats after ~0.5 s), so a motion key
moves its axis for ``hold_s`` after its last press, covering the auto-repeat delay. Default keys:

  w / s  +x / -x      a / d  +y / -y      r / f  +z / -z        (translation, base frame)
  i / k  +rx / -rx    j / l  +ry / -ry    q / e  +rz / -rz      (rotation)
  c close gripper     v open gripper      t toggle takeover (hold the arm still while active)
  Enter success       x / Backspace failure   n reset (next episode)   p pause / resume

``parse_keys`` (bytes -> key names) and ``KeyboardMapper`` (key names + time -> command) are pure.
"""

from __future__ import annotations

import atexit
import os
import select
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from robot_rl.teleop.base import Buttons, TeleopCommand, Teleoperator

_ESCAPES = {b"[A": "up", b"[B": "down", b"[C": "right", b"[D": "left", b"OA": "up", b"OB": "down",
            b"OC": "right", b"OD": "left"}
_SPECIAL = {b"\r": "enter", b"\n": "enter", b"\x7f": "backspace", b"\x08": "backspace", b" ": "space",
            b"\t": "tab"}


def parse_keys(data: bytes) -> list[str]:
    """Raw terminal bytes -> key names: printable characters as themselves (case kept), ``enter``,
    ``backspace``, ``space``, ``tab``, arrows ``up``/``down``/``left``/``right``, ``esc``; others dropped."""
    keys: list[str] = []
    i = 0
    while i < len(data):
        byte = data[i : i + 1]
        if byte == b"\x1b":
            seq = data[i + 1 : i + 3]
            if seq in _ESCAPES:
                keys.append(_ESCAPES[seq])
                i += 3
                continue
            keys.append("esc")
        elif byte in _SPECIAL:
            keys.append(_SPECIAL[byte])
        elif 0x21 <= byte[0] <= 0x7E:
            keys.append(byte.decode())
        i += 1
    return keys


@dataclass(frozen=True)
class KeyboardConfig:
    motion_keys: tuple[str, ...] = ("w", "s", "a", "d", "r", "f", "i", "k", "j", "l", "q", "e")
    """Pairs of (+, -) keys for dx, dy, dz, drx, dry, drz."""
    speed: float = 1.0
    """Action magnitude of a held motion key, in [0, 1] (1: ``max_step_m`` / ``max_step_rad`` per step)."""
    hold_s: float = 0.6
    """A motion key counts as held this long after its last press (covers the terminal's auto-repeat delay)."""
    close_key: str = "c"
    open_key: str = "v"
    takeover_key: str = "t"
    success_keys: tuple[str, ...] = ("enter",)
    failure_keys: tuple[str, ...] = ("x", "backspace")
    reset_keys: tuple[str, ...] = ("n",)
    pause_keys: tuple[str, ...] = ("p",)
    fd: int = -1
    """File descriptor to read (-1: stdin)."""

    def __post_init__(self) -> None:
        if len(self.motion_keys) != 12:
            raise ValueError(f"KeyboardConfig.motion_keys needs 12 keys (+/- for 6 dims), got {self.motion_keys}")
        if not 0.0 < self.speed <= 1.0:
            raise ValueError(f"KeyboardConfig.speed must be in (0, 1], got {self.speed}")
        if not self.hold_s > 0:
            raise ValueError(f"KeyboardConfig.hold_s must be > 0 s, got {self.hold_s}")
        bound = [*self.motion_keys, self.close_key, self.open_key, self.takeover_key, *self.success_keys,
                 *self.failure_keys, *self.reset_keys, *self.pause_keys]
        dupes = sorted({k for k in bound if bound.count(k) > 1})
        if dupes:
            raise ValueError(f"KeyboardConfig binds keys {dupes} more than once")


class KeyboardMapper:
    """Key presses with their time -> ``TeleopCommand`` (buttons are presses since the last ``command``)."""

    def __init__(self, config: KeyboardConfig) -> None:
        self.config = config
        self._motion = {k: (i // 2, 1.0 if i % 2 == 0 else -1.0) for i, k in enumerate(config.motion_keys)}
        self._last_press: dict[str, float] = {}
        self.takeover = False
        self._gripper = 0.0
        self._pressed: dict[str, bool] = {}

    def update(self, keys: list[str], now_s: float) -> None:
        c = self.config
        for key in keys:
            if key in self._motion:
                self._last_press[key] = now_s
            elif key == c.close_key:
                self._gripper = -1.0
            elif key == c.open_key:
                self._gripper = 1.0
            elif key == c.takeover_key:
                self.takeover = not self.takeover
            for name, bound in (("success", c.success_keys), ("failure", c.failure_keys),
                                ("reset", c.reset_keys), ("pause", c.pause_keys)):
                if key in bound:
                    self._pressed[name] = True

    def command(self, now_s: float) -> TeleopCommand:
        action = np.zeros(7, np.float32)
        latest: dict[int, float] = {}
        for key, t in self._last_press.items():
            dim, sign = self._motion[key]
            if now_s - t <= self.config.hold_s and t >= latest.get(dim, -np.inf):
                latest[dim] = t
                action[dim] = sign * self.config.speed
        action[6] = self._gripper
        active = self.takeover or bool(latest) or self._gripper != 0.0
        buttons = Buttons(**self._pressed)
        self._gripper, self._pressed = 0.0, {}
        if not active:
            action[:] = 0.0
        return TeleopCommand(active=active, action=action, buttons=buttons)


class Keyboard(Teleoperator):
    """Terminal keyboard ``Teleoperator``; cbreak mode keeps Ctrl-C working, the terminal is restored on
    ``disconnect``. Works over SSH and without a display; not when stdin is not a terminal (pipe)."""

    name = "keyboard"

    def __init__(self, config: KeyboardConfig | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self.config = config or KeyboardConfig()
        self.mapper = KeyboardMapper(self.config)
        self._clock = clock
        self._fd = -1
        self._saved: list | None = None
        self._active = False

    def connect(self) -> None:
        self._fd = self.config.fd if self.config.fd >= 0 else sys.stdin.fileno()
        if os.isatty(self._fd):
            import termios
            import tty

            self._saved = termios.tcgetattr(self._fd)
            tty.setcbreak(self._fd)
            atexit.register(self.disconnect)  # never leave the terminal in cbreak mode
        super().connect()

    def disconnect(self) -> None:
        if self._saved is not None:
            import termios

            termios.tcsetattr(self._fd, termios.TCSADRAIN, self._saved)
            self._saved = None
        super().disconnect()

    def _drain(self) -> bytes:
        chunks = []
        while self._fd >= 0 and select.select([self._fd], [], [], 0)[0]:
            chunk = os.read(self._fd, 1024)
            if not chunk:  # EOF
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def read(self) -> TeleopCommand:
        now = self._clock()
        self.mapper.update(parse_keys(self._drain()), now)
        command = self.mapper.command(now)
        self._active = command.active
        return command

    def status(self) -> str:
        mode = "TAKEOVER" if self.mapper.takeover else ("ACTIVE" if self._active else "idle")
        return f"keyboard: {mode} (t takeover, wasd/rf move, c/v gripper, Enter success, x failure, n reset)"
