"""``joy_to_command`` (the function the ROS 2 teleop node calls) and the devices built on it."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.teleop.joy import (
    JoyConfig,
    JoyTeleop,
    command_to_vector,
    joy_to_command,
    ros_xbox_joy,
    spacenav_joy,
)


def test_spacenav_joy_motion_and_gripper() -> None:
    cfg = spacenav_joy()
    cmd = joy_to_command([0.5, -0.2, 0.0, 0.0, 0.0, 0.1], [0, 0], cfg)
    assert cmd.active
    np.testing.assert_allclose(cmd.action, [0.5, -0.2, 0.0, 0.0, 0.0, 0.1, 0.0], atol=1e-6)
    cmd = joy_to_command([0.0] * 6, [1, 0], cfg)  # left button: close, counts as active
    assert cmd.active and cmd.action[6] == -1.0 and not cmd.action[:6].any()
    cmd = joy_to_command([0.0] * 6, [1, 1], cfg)  # close wins
    assert cmd.action[6] == -1.0
    cmd = joy_to_command([0.0] * 6, [0, 1], cfg)
    assert cmd.action[6] == 1.0


def test_below_threshold_is_inactive_and_zero() -> None:
    cfg = JoyConfig(threshold=0.05)
    cmd = joy_to_command([0.02, 0.0, 0.01, 0.0, 0.0, 0.0], [0, 0], cfg)
    assert not cmd.active and not cmd.action.any()


def test_deadman_decides_activity() -> None:
    cfg = ros_xbox_joy()  # LB (4) deadman, left stick x/y, right stick y lifts
    axes = [0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]  # left stick pushed up
    buttons = [0] * 11
    assert not joy_to_command(axes, buttons, cfg).active  # motion without deadman
    buttons[4] = 1
    cmd = joy_to_command(axes, buttons, cfg)
    assert cmd.active and cmd.action[0] == pytest.approx(1.0) and cmd.action[1] == 0.0
    cmd = joy_to_command([0.0] * 8, buttons, cfg)  # deadman alone: active, holding still
    assert cmd.active and not cmd.action.any()


def test_operator_buttons_are_levels() -> None:
    cfg = ros_xbox_joy()
    buttons = [0] * 11
    buttons[3] = 1  # Y = success
    cmd = joy_to_command([0.0] * 8, buttons, cfg)
    assert cmd.buttons.success and not cmd.buttons.failure and not cmd.active


def test_scale_clip_deadzone_nan_and_short_messages() -> None:
    cfg = JoyConfig(scale=(2.0, -1.0, 1.0, 1.0, 1.0, 1.0), deadzone=0.1)
    cmd = joy_to_command([0.8, 0.55, float("nan")], [], cfg)  # 3 axes only, no buttons
    assert cmd.action[0] == 1.0  # 2 * 0.777 clipped
    assert cmd.action[1] == pytest.approx(-0.5)  # (0.55 - 0.1) / 0.9, sign flipped
    assert cmd.action[2] == 0.0 and not cmd.action[3:].any()
    vec = command_to_vector(cmd)
    assert vec.shape == (8,) and vec[0] == 1.0


@pytest.mark.parametrize(
    "kwargs, field",
    [({"axes": (0, 1)}, "axes"), ({"deadzone": 1.0}, "deadzone"), ({"threshold": -1.0}, "threshold"),
     ({"deadman_button": -2}, "deadman_button")],
)
def test_config_errors_name_the_field(kwargs, field) -> None:
    with pytest.raises(ValueError, match=field):
        JoyConfig(**kwargs)


def test_joy_teleop_edges_and_timeout() -> None:
    now = [0.0]
    dev = JoyTeleop(ros_xbox_joy(), input_timeout_s=1.0, clock=lambda: now[0])
    held = [0] * 11
    held[4] = held[3] = 1
    dev.update([0.0, 0.5] + [0.0] * 6, held)
    first = dev.read()
    assert first.active and first.buttons.success  # press
    assert dev.read().buttons.success is False  # still held: no new press
    now[0] = 2.0  # the driver went quiet
    assert not dev.read().active
