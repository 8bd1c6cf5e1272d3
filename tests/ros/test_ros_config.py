"""Hardware configs load and validate with errors naming the file and the field (pure Python, no ROS)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("yaml")  # PyYAML: comes with the ROS wheels (the ros extra)
import yaml

from robot_rl.ros.hardware import ArmConfig, load_arm_config, load_camera_config

HARDWARE = Path(__file__).resolve().parents[2] / "hardware_configs"
ARMS = sorted((HARDWARE / "arms").glob("*.yaml"))
CAMERAS = sorted((HARDWARE / "cameras").glob("*.yaml"))


def test_the_listed_arms_and_cameras_exist() -> None:
    assert {"franka_fr3", "ur5e", "ur5e_forward_velocity", "xarm7", "sim_panda"} <= {p.stem for p in ARMS}
    assert {"realsense_d435_front", "realsense_d405_wrist"} <= {p.stem for p in CAMERAS}


@pytest.mark.parametrize("path", ARMS, ids=lambda p: p.stem)
def test_every_arm_config_loads(path: Path) -> None:
    arm = load_arm_config(path)
    assert isinstance(arm, ArmConfig) and arm.name == path.stem
    assert arm.safety.control_hz == arm.control_hz
    assert arm.command.publish_hz >= 4 * arm.control_hz
    assert load_arm_config(path.stem) == arm  # by name, as the launch files pass it


@pytest.mark.parametrize("path", ARMS, ids=lambda p: p.stem)
def test_check_hardware_config_only_describes_each_arm(path: Path) -> None:
    """``robot-rl check-hardware CONFIG --config-only``: the file validated, with what the bridge reads,
    commands and enforces, without ROS."""
    from robot_rl.ros.inputs import describe_arm, required_inputs

    arm = load_arm_config(path)
    text = "\n".join(describe_arm(str(path)))
    assert text.startswith(f"{path}: valid")
    assert f"{arm.command.backend} on {arm.command.topic!r}" in text
    assert all(spec.topic in text for spec in required_inputs(arm))
    assert str(list(arm.safety.workspace_low_m)) in text


@pytest.mark.parametrize("path", CAMERAS, ids=lambda p: p.stem)
def test_every_camera_config_loads(path: Path) -> None:
    cam = load_camera_config(path)
    assert cam.output_hw_px == (128, 128)


def _broken(tmp_path: Path, base: str, edit) -> Path:
    data = yaml.safe_load((HARDWARE / "arms" / f"{base}.yaml").read_text())
    edit(data["arm"])
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(("edit", "field"), [
    (lambda a: a["safety"].update(max_step_m=-0.01), "max_step_m"),
    (lambda a: a["safety"].update(workspace_low_m=[1.0, 0.0, 0.0]), "workspace_low_m"),
    (lambda a: a.update(control_hz=20.0), "publish_hz"),
    (lambda a: a["command"].update(backend="teleport"), "command.backend"),
    (lambda a: a.update(unknown_key=1), "unknown field"),
    (lambda a: a["gripper"].update(open_width_m=0.0), "GripperConfig"),
    (lambda a: a["topics"].update(current_pose=None), "kinematics"),
    (lambda a: a.update(reset_pose={"position_m": [0.4, 0, 0.3], "orientation_xyzw": [1, 1, 0, 0]}), "xyzw"),
    (lambda a: a.update(reset_pose={"position_m": [0.9, 0, 0.3]}), "inside"),
])
def test_bad_values_name_the_file_and_the_field(tmp_path: Path, edit, field: str) -> None:
    path = _broken(tmp_path, "sim_panda", edit)
    with pytest.raises(ValueError, match=field) as err:
        load_arm_config(path)
    assert str(path) in str(err.value)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda a: a["safety"].pop("workspace_high_m"), r"arm\.safety: missing field\(s\) \['workspace_high_m'\]"),
    (lambda a: a.pop("safety"), r"arm\.safety: missing; give every limit, or 'preset:'"),
    (lambda a: a["safety"].pop("max_target_error_m"), r"missing field\(s\) \['max_target_error_m'\]"),
    (lambda a: a["safety"].update(workspace_low_m=[0.25, -0.35, 0.012, 0.0]), r"workspace_low_m: expected 3"),
    (lambda a: a["safety"].update(workspace_low_m=[250, -350, 12], workspace_high_m=[750, 350, 450]),
     r"workspace_low_m\[0\] = 250.0 m .*millimetres"),
    (lambda a: a["safety"].update(max_translation_step_m=2.0), r"max_translation_step_m must be a number in"),
    (lambda a: a["safety"].update(max_step_rad=10.0), r"max_step_rad .*degrees given"),
    (lambda a: a["safety"].update(control_hz=10.0), r"set control_hz once, at the top level"),
    (lambda a: a["safety"].update(preset="turbo"), r"unknown preset 'turbo'"),
    (lambda a: a.pop("gripper"), r"missing field\(s\) \['gripper'\]"),
    (lambda a: a["topics"].pop("wrench"), r"arm\.topics: missing field\(s\) \['wrench'\]"),
    (lambda a: a.pop("base_frame"), r"missing field\(s\) \['base_frame'\]"),
])
def test_what_moves_the_arm_is_never_defaulted(tmp_path: Path, edit, message: str) -> None:
    path = _broken(tmp_path, "sim_panda", edit)
    with pytest.raises(ValueError, match=message) as err:
        load_arm_config(path)
    assert str(path) in str(err.value)


def test_a_preset_gives_the_limits_and_the_file_the_box(tmp_path: Path) -> None:
    from robot_rl.safety.config import SAFETY_PRESETS

    def to_preset(a: dict) -> None:
        a["safety"] = {"preset": "cautious", "workspace_low_m": [0.3, -0.3, 0.02],
                       "workspace_high_m": [0.7, 0.3, 0.4], "max_linear_speed_m_s": 0.05}
    arm = load_arm_config(_broken(tmp_path, "sim_panda", to_preset))
    assert arm.safety.max_linear_speed_m_s == 0.05  # the file's override wins
    assert arm.safety.max_translation_step_m == SAFETY_PRESETS["cautious"]["max_translation_step_m"]
    assert arm.safety.workspace_high_m == (0.7, 0.3, 0.4) and arm.safety.control_hz == arm.control_hz


def _raw(tmp_path: Path, old: str, new: str) -> Path:
    text = (HARDWARE / "arms" / "sim_panda.yaml").read_text()
    assert old in text
    path = tmp_path / "raw.yaml"
    path.write_text(text.replace(old, new, 1))
    return path


def test_yaml_traps_are_refused(tmp_path: Path) -> None:
    # yes/no are YAML booleans: never a number
    path = _raw(tmp_path, "    max_step_m: 0.02 ", "    max_step_m: yes ")
    with pytest.raises(ValueError, match=r"arm\.safety\.max_step_m: expected a number, got True"):
        load_arm_config(path)
    # a key given twice: PyYAML would keep the last one silently
    path = _raw(tmp_path, "    max_step_rad: 0.1 ", "    max_step_rad: 0.1\n    max_step_rad: 0.5 ")
    with pytest.raises(ValueError, match=r"raw\.yaml:\d+: not valid YAML: duplicate key 'max_step_rad'"):
        load_arm_config(path)
    # anything next to arm: is a typo or a second config
    path = _raw(tmp_path, "arm:\n", "safety:\n  max_step_m: 0.01\narm:\n")
    with pytest.raises(ValueError, match=r"unknown top-level key\(s\) \['safety'\]"):
        load_arm_config(path)


def test_camera_crop_must_fit_the_input(tmp_path: Path) -> None:
    path = tmp_path / "cam.yaml"
    path.write_text(yaml.safe_dump({"camera": {"name": "front", "topic": "image", "input_hw_px": [240, 320],
                                               "crop_xywh_px": [80, 0, 480, 480]}}))
    with pytest.raises(ValueError, match=r"crop_xywh_px.*outside the 320x240 input image"):
        load_camera_config(path)


def test_joint_velocity_needs_kinematics(tmp_path: Path) -> None:
    path = _broken(tmp_path, "ur5e_forward_velocity", lambda a: a.pop("kinematics"))
    with pytest.raises(ValueError, match="kinematics"):
        load_arm_config(path)


def test_camera_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cam.yaml"
    path.write_text(yaml.safe_dump({"camera": {"name": "a/b", "topic": "image", "input_hw_px": [480, 640]}}))
    with pytest.raises(ValueError, match=r"cam\.yaml.*CameraConfig\.name"):
        load_camera_config(path)
    path.write_text("camera: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_camera_config(path)
    with pytest.raises(FileNotFoundError, match="no_such_camera"):
        load_camera_config("no_such_camera")
