"""SpaceMouse HID report parsing from recorded report bytes (no device)."""

from __future__ import annotations

import struct
import sys

import numpy as np
import pytest

from robot_rl.teleop.spacemouse import SpaceMouse, SpaceMouseConfig, SpaceMouseState, parse_report


def report(report_id: int, *values: int) -> bytes:
    return bytes([report_id]) + struct.pack(f"<{len(values)}h", *values)


def test_translation_and_rotation_reports() -> None:
    state = parse_report(report(1, 350, -175, 35), SpaceMouseState())
    np.testing.assert_allclose(state.axes, [1.0, 0.5, -0.1, 0.0, 0.0, 0.0])  # y and z flipped
    state = parse_report(report(2, 70, 0, -350), state)
    np.testing.assert_allclose(state.axes, [1.0, 0.5, -0.1, 0.2, 0.0, 1.0])


def test_combined_13_byte_report_and_clipping() -> None:
    state = parse_report(report(1, 0, 0, -700, 35, 35, 35), SpaceMouseState())
    np.testing.assert_allclose(state.axes, [0.0, 0.0, 1.0, 0.1, -0.1, -0.1])


def test_buttons_and_unknown_reports() -> None:
    state = parse_report(bytes([3, 0b10, 0]), SpaceMouseState())
    assert state.buttons[:2] == (0, 1)
    assert parse_report(bytes([23, 1, 2, 3]), state) == state  # battery / unknown report: ignored
    assert parse_report(b"", state) == state
    assert parse_report(bytes([1, 5]), state) == state  # truncated


def test_device_maps_reports_to_base_frame_commands() -> None:
    dev = SpaceMouse(SpaceMouseConfig())
    dev.feed(report(1, 0, -350, 0))  # push away from the operator (raw y is toward the operator)
    cmd = dev.read()
    assert cmd.active and cmd.action[0] == pytest.approx(1.0) and abs(cmd.action[1]) < 1e-6
    dev.feed(report(1, -350, 0, 0))  # push left -> +y in the base frame
    assert dev.read().action[1] == pytest.approx(1.0)
    dev.feed(report(1, 0, 0, 0))
    dev.feed(bytes([3, 1, 0]))  # left button: close
    cmd = dev.read()
    assert cmd.active and cmd.action[6] == -1.0
    dev.feed(bytes([3, 0, 0]))
    assert not dev.read().active


def test_connect_without_hidapi_names_the_package(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "hid", None)
    with pytest.raises(ImportError, match="hidapi"):
        SpaceMouse().connect()
