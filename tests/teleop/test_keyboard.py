"""Keyboard parsing from recorded key bytes and the non-blocking terminal device (over a pipe)."""

from __future__ import annotations

import os

import pytest

from robot_rl.teleop.keyboard import Keyboard, KeyboardConfig, KeyboardMapper, parse_keys


def test_parse_keys() -> None:
    assert parse_keys(b"wA\x1b[A\x1b[Dx\r\n\x7f \x1b\x01") == [
        "w", "A", "up", "left", "x", "enter", "enter", "backspace", "space", "esc"]


def test_motion_hold_window_and_latest_key_wins() -> None:
    m = KeyboardMapper(KeyboardConfig(hold_s=0.5, speed=0.5))
    m.update(["w"], 0.0)
    cmd = m.command(0.1)
    assert cmd.active and cmd.action[0] == 0.5
    m.update(["s"], 0.2)
    assert m.command(0.3).action[0] == -0.5
    assert not m.command(1.0).active  # released (no repeat within hold_s)


def test_gripper_takeover_and_buttons() -> None:
    m = KeyboardMapper(KeyboardConfig())
    m.update(["c"], 0.0)
    cmd = m.command(0.0)
    assert cmd.active and cmd.action[6] == -1.0
    assert not m.command(0.1).active  # gripper keys are one-shot (the latch keeps them)
    m.update(["t"], 0.2)
    cmd = m.command(0.3)
    assert cmd.active and not cmd.action.any()  # takeover: hold the arm still
    m.update(["enter", "n", "p"], 0.4)
    cmd = m.command(0.4)
    assert cmd.buttons.success and cmd.buttons.reset and cmd.buttons.pause and not cmd.buttons.failure
    assert not m.command(0.5).buttons.any()


def test_keyboard_reads_a_pipe_without_blocking() -> None:
    r, w = os.pipe()
    try:
        now = [0.0]
        kb = Keyboard(KeyboardConfig(fd=r), clock=lambda: now[0])
        with kb:
            assert not kb.read().active  # nothing pending: returns at once
            os.write(w, b"d")
            cmd = kb.read()
            assert cmd.active and cmd.action[1] == -1.0
    finally:
        os.close(r)
        os.close(w)


def test_config_errors() -> None:
    with pytest.raises(ValueError, match="more than once"):
        KeyboardConfig(close_key="w")
    with pytest.raises(ValueError, match="speed"):
        KeyboardConfig(speed=0.0)
