"""The contract types: layouts, spec validation, observation/action checks, rotation helpers."""

from __future__ import annotations

import numpy as np
import pytest

from robot_rl.envs import geometry as geo
from robot_rl.envs.contract import (
    ACTION_DIM,
    STATE_DIM,
    STATE_LAYOUT,
    CameraSpec,
    ContractSpec,
    Field,
    Layout,
    check_action,
    check_observation,
)


def test_state_layout_is_contiguous_and_named() -> None:
    assert STATE_DIM == 22
    assert STATE_LAYOUT.slice("tcp_pos") == slice(0, 3)
    assert STATE_LAYOUT.slice("gripper_opening") == slice(15, 16)
    assert len(STATE_LAYOUT.names()) == STATE_DIM
    with pytest.raises(KeyError, match="tcp_quat"):
        STATE_LAYOUT.slice("tcp_quat")


def test_layout_rejects_duplicates() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        Layout((Field("a", 1, ""), Field("a", 2, "")))


def test_spec_round_trip_and_spaces() -> None:
    spec = ContractSpec(
        cameras=(CameraSpec("front", 64, 64),), privileged_layout=(Field("cube_pos", 3, "m"),)
    )
    assert ContractSpec.from_dict(spec.to_dict()) == spec
    space = spec.observation_space()
    assert set(space.spaces) == {"state", "privileged", "images/front"}
    assert space["images/front"].shape == (64, 64, 3)
    assert spec.action_space().shape == (ACTION_DIM,)


@pytest.mark.parametrize(
    ("kwargs", "field"), [({"control_hz": 0}, "control_hz"), ({"max_step_m": 1.0}, "max_step_m")]
)
def test_spec_errors_name_field(kwargs, field) -> None:
    with pytest.raises(ValueError, match=field):
        ContractSpec(**kwargs)


def test_camera_spec_errors() -> None:
    with pytest.raises(ValueError, match="height"):
        CameraSpec("front", 4, 64)
    with pytest.raises(ValueError, match="name"):
        CameraSpec("a/b")


def test_check_observation_names_key_and_source() -> None:
    space = ContractSpec().observation_space()
    good = {"state": np.zeros(STATE_DIM, np.float32)}
    check_observation(good, space)
    with pytest.raises(ValueError, match=r"robot\['state'\].*float32"):
        check_observation({"state": np.zeros(STATE_DIM, np.float64)}, space, source="robot")
    bad = np.zeros(STATE_DIM, np.float32)
    bad[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        check_observation({"state": bad}, space)
    with pytest.raises(ValueError, match="missing"):
        check_observation({}, space)


def test_check_action() -> None:
    assert check_action(np.zeros(ACTION_DIM)).dtype == np.float32
    with pytest.raises(ValueError, match="shape"):
        check_action(np.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        check_action(np.array([np.nan] * ACTION_DIM))


def test_rotation_round_trips() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        rv = rng.normal(size=3)
        rv *= min(1.0, 3.0 / np.linalg.norm(rv))
        mat = geo.rotvec_to_matrix(rv)
        np.testing.assert_allclose(mat @ mat.T, np.eye(3), atol=1e-12)
        np.testing.assert_allclose(geo.matrix_to_rotvec(mat), rv, atol=1e-9)
        np.testing.assert_allclose(geo.quat_to_matrix(geo.matrix_to_quat(mat)), mat, atol=1e-12)
        np.testing.assert_allclose(geo.rot6d_to_matrix(geo.matrix_to_rot6d(mat)), mat, atol=1e-12)
