"""Property-based fuzz of the hardware and camera config loaders (hypothesis, derandomized): every shipped file
with random edits (a value replaced by any YAML value, a key deleted or added, a line repeated). Properties:
the loader returns a config or raises ``ValueError`` naming the file, never anything else; and a config that
loads satisfies the limits the safety filter relies on."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("yaml")
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from robot_rl.ros.hardware import ArmConfig, CameraConfig, load_arm_config, load_camera_config
from robot_rl.safety import SafetyFilter
from robot_rl.safety.config import MAX_REACH_M

HARDWARE = Path(__file__).resolve().parents[2] / "hardware_configs"
ARMS = sorted((HARDWARE / "arms").glob("*.yaml"))
CAMERAS = sorted((HARDWARE / "cameras").glob("*.yaml"))
FUZZ = settings(max_examples=1000, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                    st.sampled_from(["yes", "no", "on", "", "base", "/joint_states", "a b", "standard", "cautious",
                                     "pose", "twist", "topic", "fraction", "1e3", "0.02"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                        st.dictionaries(st.sampled_from(["x", "name", "topic"]),
                                                                        inner, max_size=2)), max_leaves=6)
edit = st.tuples(st.sampled_from(["replace", "delete", "add", "repeat_line"]), st.integers(0, 10**6), values)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += _paths(v, (*prefix, i))
    return out


def _apply(data: Any, op: str, pick: int, value: Any) -> None:
    paths = _paths(data)
    if not paths:  # everything was deleted already
        return
    path = paths[pick % len(paths)]
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    last = path[-1]
    if op == "replace":
        parent[last] = value
    elif op == "delete" and isinstance(parent, dict):
        del parent[last]
    elif op == "delete":
        parent.pop(last)
    elif op == "add" and isinstance(parent, dict):
        parent[f"extra_{pick % 7}"] = value


def _write(tmp: Path, source: Path, edits: list[tuple]) -> Path:
    data = yaml.safe_load(source.read_text())
    text = None
    for op, pick, value in edits:
        if op == "repeat_line":
            text = text or yaml.safe_dump(data)
            lines = text.splitlines() or [""]
            i = pick % len(lines)
            text = "\n".join([*lines[: i + 1], lines[i], *lines[i + 1:]])
        else:
            _apply(data, op, pick, value)
            text = None
    path = tmp / f"fuzz_{source.name}"
    path.write_text(text if text is not None else yaml.safe_dump(data))
    return path


def _load(loader, path: Path) -> Any:
    try:
        config = loader(path)
    except ValueError as err:
        assert str(path) in str(err), f"error does not name the file: {err}"
        event("refused")
        return None
    event("loaded")
    return config


@FUZZ
@given(st.sampled_from(ARMS), st.lists(edit, min_size=1, max_size=3))
def test_fuzz_arm_configs(tmp_path_factory, source: Path, edits: list[tuple]) -> None:
    path = _write(tmp_path_factory.mktemp("arm"), source, edits)
    arm = _load(load_arm_config, path)
    if arm is None:
        return
    assert isinstance(arm, ArmConfig)
    lim = arm.safety
    for lo, hi in zip(lim.workspace_low_m, lim.workspace_high_m):
        assert math.isfinite(lo) and math.isfinite(hi) and lo < hi and max(abs(lo), abs(hi)) <= MAX_REACH_M
    assert len(lim.workspace_low_m) == len(lim.workspace_high_m) == 3
    for name in ("max_step_m", "max_translation_step_m", "max_target_error_m", "max_linear_speed_m_s",
                 "max_step_rad", "max_rotation_step_rad", "max_angular_speed_rad_s", "max_measured_speed_m_s"):
        value = getattr(lim, name)
        assert isinstance(value, float) and math.isfinite(value) and value > 0, name
    assert lim.control_hz == arm.control_hz and arm.command.publish_hz >= 4 * arm.control_hz
    SafetyFilter(lim, "velocity" if arm.velocity_kind else "pose")


@FUZZ
@given(st.sampled_from(CAMERAS), st.lists(edit, min_size=1, max_size=3))
def test_fuzz_camera_configs(tmp_path_factory, source: Path, edits: list[tuple]) -> None:
    path = _write(tmp_path_factory.mktemp("cam"), source, edits)
    cam = _load(load_camera_config, path)
    if cam is None:
        return
    assert isinstance(cam, CameraConfig)
    h, w = cam.input_hw_px
    assert isinstance(h, int) and isinstance(w, int) and not isinstance(h, bool)
    if cam.crop_xywh_px is not None:
        x, y, cw, ch = cam.crop_xywh_px
        assert x >= 0 and y >= 0 and x + cw <= w and y + ch <= h
