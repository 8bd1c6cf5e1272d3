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


def test_joint_velocity_needs_kinematics(tmp_path: Path) -> None:
    path = _broken(tmp_path, "ur5e_forward_velocity", lambda a: a.pop("kinematics"))
    with pytest.raises(ValueError, match="kinematics"):
        load_arm_config(path)


def test_camera_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cam.yaml"
    path.write_text(yaml.safe_dump({"camera": {"name": "a/b"}}))
    with pytest.raises(ValueError, match=r"cam\.yaml.*CameraConfig\.name"):
        load_camera_config(path)
    path.write_text("camera: [unclosed")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_camera_config(path)
    with pytest.raises(FileNotFoundError, match="no_such_camera"):
        load_camera_config("no_such_camera")
