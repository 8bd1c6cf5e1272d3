"""Gamepad parsing from recorded SDL and evdev event tuples (no pad)."""

from __future__ import annotations

import sys

import pytest

from robot_rl.teleop.gamepad import (
    Gamepad,
    GamepadConfig,
    GamepadState,
    apply_evdev_event,
    apply_sdl_event,
    normalise_abs,
)


def test_sdl_events() -> None:
    state = GamepadState()
    for event in [("axis", 1, -0.5), ("button", 4, 1), ("hat", 0, (1, 1)), ("axis", 99, 1.0), ("ball", 0, 0)]:
        apply_sdl_event(state, event)
    assert state.axes[1] == -0.5 and state.buttons[4] == 1
    assert state.axes[6:8] == [1.0, -1.0]  # hat up -> SDL-order axis 7 negative (down +)
    apply_sdl_event(state, ("button", 4, 0))
    assert state.buttons[4] == 0


def test_evdev_events_and_normalisation() -> None:
    assert normalise_abs(32767, -32768, 32767) == pytest.approx(1.0)
    assert normalise_abs(0, 0, 255) == -1.0 and normalise_abs(5, 5, 5) == 0.0
    state = GamepadState()
    events = [(3, 1, -32768), (1, 310, 1), (1, 304, 2), (0, 0, 0), (3, 2, 1023), (1, 999, 1)]
    for e in events:
        apply_evdev_event(state, e)
    assert state.axes[1] == -1.0 and state.axes[2] == 1.0
    assert state.buttons[4] == 1 and state.buttons[0] == 1  # LB (BTN_TL), A held (autorepeat value 2)


@pytest.mark.parametrize("backend", ["pygame", "evdev"])
def test_gamepad_commands_need_the_deadman(backend: str) -> None:
    pad = Gamepad(GamepadConfig(backend=backend))
    if backend == "pygame":
        pad.feed([("axis", 1, -1.0)])  # left stick up (SDL: up is -)
    else:
        pad.feed([(3, 1, -32768)])
    assert not pad.read().active
    pad.feed([("button", 4, 1)] if backend == "pygame" else [(1, 310, 1)])  # LB deadman
    cmd = pad.read()
    assert cmd.active and cmd.action[0] == pytest.approx(1.0)
    pad.feed([("button", 3, 1)] if backend == "pygame" else [(1, 308, 1)])  # Y: success
    assert pad.read().buttons.success
    assert not pad.read().buttons.success  # still held: one press only


def test_missing_libraries_name_the_package(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)
    monkeypatch.setitem(sys.modules, "evdev", None)
    with pytest.raises(ImportError, match="pygame"):
        Gamepad(GamepadConfig(backend="pygame")).connect()
    with pytest.raises(ImportError, match="evdev"):
        Gamepad(GamepadConfig(backend="evdev")).connect()
    with pytest.raises(ValueError, match="backend"):
        GamepadConfig(backend="sdl3")  # type: ignore[arg-type]
