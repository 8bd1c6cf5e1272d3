"""Gamepad through SDL (``pygame``) or Linux evdev (``evdev``), both imported lazily; events parsed here.

Events are plain tuples, so recorded input replays in tests without a pad:
  SDL    ("axis", index, value in [-1, 1]) | ("button", index, 0/1) | ("hat", index, (x, y))
  evdev  (type, code, value): EV_KEY=1 buttons, EV_ABS=3 axes (raw counts, normalised with the axis range)

Both land in one ``GamepadState`` in SDL's Xbox order (axes 0 LX, 1 LY, 2 LT, 3 RX, 4 RY, 5 RT, 6/7 d-pad;
buttons A0 B1 X2 Y3 LB4 RB5 back6 start7 guide8 LS9 RS10), so one ``JoyConfig`` (``sdl_xbox()``) maps both.
Headless: pygame needs no window for joystick events (``SDL_VIDEODRIVER=dummy`` is set if unset).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from robot_rl.teleop.joy import JoyConfig, JoyDevice, sdl_xbox

NUM_AXES, NUM_BUTTONS = 8, 11
HAT_AXES = (6, 7)
EV_KEY, EV_ABS = 1, 3
# evdev code -> SDL-order index (Linux input-event-codes.h; the xpad / xone / hid-generic drivers)
EVDEV_AXES = {0: 0, 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 16: 6, 17: 7}  # ABS_X, Y, Z, RX, RY, RZ, HAT0X, HAT0Y
EVDEV_BUTTONS = {304: 0, 305: 1, 307: 2, 308: 3, 310: 4, 311: 5, 314: 6, 315: 7, 316: 8, 317: 9, 318: 10}
DEFAULT_EVDEV_RANGES = {0: (-32768, 32767), 1: (-32768, 32767), 3: (-32768, 32767), 4: (-32768, 32767),
                        2: (0, 1023), 5: (0, 1023), 16: (-1, 1), 17: (-1, 1)}


@dataclass
class GamepadState:
    axes: list[float] = field(default_factory=lambda: [0.0] * NUM_AXES)
    buttons: list[int] = field(default_factory=lambda: [0] * NUM_BUTTONS)


def apply_sdl_event(state: GamepadState, event: tuple[Any, ...]) -> GamepadState:
    """Apply one SDL joystick event tuple in place (unknown kinds / indices are ignored); returns ``state``."""
    kind, index = event[0], int(event[1])
    if kind == "axis" and 0 <= index < NUM_AXES:
        state.axes[index] = max(-1.0, min(1.0, float(event[2])))
    elif kind == "button" and 0 <= index < NUM_BUTTONS:
        state.buttons[index] = int(bool(event[2]))
    elif kind == "hat" and index == 0:
        x, y = event[2]
        state.axes[HAT_AXES[0]], state.axes[HAT_AXES[1]] = float(x), -float(y)  # SDL hat y is up +
    return state


def normalise_abs(value: int, low: int, high: int) -> float:
    """Raw evdev axis count in [low, high] -> [-1, 1]."""
    if high <= low:
        return 0.0
    return max(-1.0, min(1.0, 2.0 * (value - low) / (high - low) - 1.0))


def apply_evdev_event(
    state: GamepadState, event: tuple[int, int, int], ranges: Mapping[int, tuple[int, int]] = DEFAULT_EVDEV_RANGES
) -> GamepadState:
    """Apply one evdev ``(type, code, value)`` in place (SYN and unmapped codes are ignored); returns ``state``."""
    etype, code, value = (int(v) for v in event)
    if etype == EV_KEY and code in EVDEV_BUTTONS:
        state.buttons[EVDEV_BUTTONS[code]] = int(value != 0)  # 1 press, 2 autorepeat, 0 release
    elif etype == EV_ABS and code in EVDEV_AXES:
        low, high = ranges.get(code, DEFAULT_EVDEV_RANGES.get(code, (-32768, 32767)))
        state.axes[EVDEV_AXES[code]] = normalise_abs(value, low, high)
    return state


@dataclass(frozen=True)
class GamepadConfig:
    backend: Literal["pygame", "evdev"] = "pygame"
    index: int = 0
    """SDL joystick index (pygame backend)."""
    evdev_path: str = ""
    """``/dev/input/eventN`` (evdev backend); empty: the first device with a gamepad's A button."""
    mapping: JoyConfig = field(default_factory=sdl_xbox)

    def __post_init__(self) -> None:
        if self.backend not in ("pygame", "evdev"):
            raise ValueError(f"GamepadConfig.backend must be 'pygame' or 'evdev', got {self.backend!r}")
        if self.index < 0:
            raise ValueError(f"GamepadConfig.index must be >= 0, got {self.index}")


class Gamepad(JoyDevice):
    """Gamepad ``Teleoperator``; ``poll`` drains the backend's event queue into ``GamepadState``."""

    name = "gamepad"

    def __init__(self, config: GamepadConfig | None = None) -> None:
        self.config = config or GamepadConfig()
        super().__init__(self.config.mapping)
        self.state = GamepadState()
        self._pygame: Any = None
        self._joystick: Any = None
        self._evdev: Any = None
        self._ranges: dict[int, tuple[int, int]] = dict(DEFAULT_EVDEV_RANGES)

    def connect(self) -> None:
        if self.config.backend == "pygame":
            self._connect_pygame()
        else:
            self._connect_evdev()
        super().connect()

    def _connect_pygame(self) -> None:
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
        try:
            import pygame
        except ImportError as err:
            raise ImportError("Gamepad (pygame backend) needs pygame: pip install pygame") from err
        pygame.init()
        pygame.joystick.init()
        if pygame.joystick.get_count() <= self.config.index:
            raise OSError(f"no gamepad at SDL index {self.config.index} ({pygame.joystick.get_count()} found)")
        self._pygame = pygame
        self._joystick = pygame.joystick.Joystick(self.config.index)
        self._joystick.init()

    def _connect_evdev(self) -> None:
        try:
            import evdev
        except ImportError as err:
            raise ImportError("Gamepad (evdev backend) needs evdev: pip install evdev (Linux only)") from err
        paths = [self.config.evdev_path] if self.config.evdev_path else evdev.list_devices()
        for path in paths:
            dev = evdev.InputDevice(path)
            if 304 in dev.capabilities().get(EV_KEY, []) or self.config.evdev_path:
                self._evdev = dev
                break
        if self._evdev is None:
            raise OSError("no evdev gamepad found (is the user in the 'input' group?)")
        for code, info in self._evdev.capabilities(absinfo=True).get(EV_ABS, []):
            self._ranges[code] = (info.min, info.max)

    def disconnect(self) -> None:
        if self._evdev is not None:
            self._evdev.close()
            self._evdev = None
        if self._pygame is not None:
            self._pygame.joystick.quit()
            self._pygame = None
        super().disconnect()

    def feed(self, events: Iterable[tuple[Any, ...]]) -> None:
        """Apply recorded events (SDL tuples for the pygame backend, evdev tuples for evdev)."""
        for event in events:
            if self.config.backend == "pygame":
                apply_sdl_event(self.state, event)
            else:
                apply_evdev_event(self.state, event, self._ranges)  # type: ignore[arg-type]

    def _drain(self) -> list[tuple[Any, ...]]:
        events: list[tuple[Any, ...]] = []
        if self._pygame is not None:
            pg = self._pygame
            for e in pg.event.get((pg.JOYAXISMOTION, pg.JOYBUTTONDOWN, pg.JOYBUTTONUP, pg.JOYHATMOTION)):
                if e.type == pg.JOYAXISMOTION:
                    events.append(("axis", e.axis, e.value))
                elif e.type == pg.JOYHATMOTION:
                    events.append(("hat", e.hat, e.value))
                else:
                    events.append(("button", e.button, int(e.type == pg.JOYBUTTONDOWN)))
        elif self._evdev is not None:
            with contextlib.suppress(BlockingIOError):  # nothing pending
                events = [(e.type, e.code, e.value) for e in self._evdev.read()]
        return events

    def poll(self) -> tuple[Sequence[float], Sequence[int]]:
        self.feed(self._drain())
        return self.state.axes, self.state.buttons
