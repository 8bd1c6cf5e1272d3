"""Typed hardware configs (one YAML per arm / camera under ``hardware_configs/``), validated on load.

Errors name the file and the field: ``hardware_configs/arms/ur5e.yaml: arm.safety.max_step_m: ...``. What moves
the arm is never defaulted: an arm file gives its topics, command, gripper and every safety limit (or a named
safety preset, ``robot_rl.safety.config.SAFETY_PRESETS``, plus the workspace box). A key given twice, an unknown
key at any level, a YAML boolean in a number field, a list of the wrong length and values in the wrong unit are
refused. Pure Python + PyYAML (no ROS import), so the configs are checked in every test tier.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from robot_rl.safety.config import SAFETY_PRESETS, SafetyLimits
from robot_rl.utils.config_io import from_jsonable
from robot_rl.utils.strict_yaml import load_yaml

CommandBackend = Literal["pose", "twist", "joint_velocity"]
GripperBackend = Literal["none", "topic", "gripper_command", "parallel_gripper_command", "franka"]
REPO_CONFIG_DIR = Path(__file__).resolve().parents[2] / "hardware_configs"


def _require(cond: bool, where: str, msg: str) -> None:
    if not cond:
        raise ValueError(f"{where} {msg}")


def _topic(where: str, value: str | None, optional: bool = False) -> None:
    if value is None and optional:
        return
    _require(isinstance(value, str) and value != "" and " " not in value and not value.endswith("/"), where,
             f"must be a ROS topic name, got {value!r}")


@dataclass(frozen=True)
class ArmTopics:
    """Driver topics the robot bridge reads (relative names resolve inside the bridge's namespace)."""

    joint_states: str
    current_pose: str | None
    """TCP pose (PoseStamped, ``base_frame``): crisp ``current_pose``, UR ``tcp_pose_broadcaster/pose``...
    null: computed from joint_states with ``kinematics`` (forward kinematics of the DH chain)."""
    wrench: str | None
    """WrenchStamped at the flange (N, N m); null: the arm has no F/T reading and the state reports zeros."""
    timeout_s: float = 0.5
    """A required input (pose, wrench, gripper joints, health) silent for longer than this holds the arm and
    stops ``rl/robot_state`` until it is back."""

    def __post_init__(self) -> None:
        _topic("ArmTopics.joint_states", self.joint_states)
        _topic("ArmTopics.current_pose", self.current_pose, optional=True)
        _topic("ArmTopics.wrench", self.wrench, optional=True)
        _require(math.isfinite(self.timeout_s) and 0.01 <= self.timeout_s <= 10.0, "ArmTopics.timeout_s",
                 f"must be in [0.01, 10] s, got {self.timeout_s}")


@dataclass(frozen=True)
class CommandConfig:
    """How the bridge commands the arm's controller (it is that topic's single publisher)."""

    backend: CommandBackend
    """pose: PoseStamped target (crisp ``target_pose``, FZI ``<ctrl>/target_frame``); twist: TwistStamped
    (MoveIt Servo ``delta_twist_cmds``); joint_velocity: Float64MultiArray (forward_velocity_controller)."""
    topic: str
    frame_id: str
    """header.frame_id of pose/twist commands (FZI drops targets whose frame is not the robot base)."""
    publish_hz: float = 50.0
    """Watchdog/streaming tick (Hz); must be >= 4x control_hz so a stale action is caught within 2 periods."""

    def __post_init__(self) -> None:
        _topic("CommandConfig.topic", self.topic)
        _require(bool(self.frame_id), "CommandConfig.frame_id", "must name the frame of the commands")
        _require(math.isfinite(self.publish_hz) and 1.0 <= self.publish_hz <= 1000.0,
                 "CommandConfig.publish_hz", f"must be in [1, 1000] Hz, got {self.publish_hz}")


@dataclass(frozen=True)
class KinematicsConfig:
    """Standard DH chain of the joint_velocity backend (TCP twist -> joint speeds, damped least squares)."""

    a_m: tuple[float, ...] = ()
    d_m: tuple[float, ...] = ()
    alpha_rad: tuple[float, ...] = ()
    offset_rad: tuple[float, ...] = ()
    tcp_offset_m: float = 0.0
    """Tool length along the last frame's z axis."""
    max_joint_speed_rad_s: tuple[float, ...] = ()
    damping: float = 0.05
    """Damped-least-squares damping (near singularities joint speeds stay bounded)."""

    def __post_init__(self) -> None:
        n = len(self.a_m)
        for name in ("d_m", "alpha_rad", "offset_rad", "max_joint_speed_rad_s"):
            _require(len(getattr(self, name)) == n, f"KinematicsConfig.{name}",
                     f"must have one entry per joint ({n}, like a_m), got {len(getattr(self, name))}")
        _require(all(s > 0 for s in self.max_joint_speed_rad_s), "KinematicsConfig.max_joint_speed_rad_s",
                 "entries must be > 0")
        _require(self.damping >= 0, "KinematicsConfig.damping", f"must be >= 0, got {self.damping}")


@dataclass(frozen=True)
class GripperConfig:
    backend: GripperBackend
    """topic: Float64MultiArray [width] to a forward position controller or crisp_py's gripper topic;
    gripper_command / parallel_gripper_command / franka: action clients, loaded only where their message
    packages exist; none: no gripper (the state reports it open)."""
    command: str = "gripper/gripper_position_controller/commands"
    """Topic (backend topic) or action name (action backends; franka: the ``franka_gripper`` namespace)."""
    joint_states: str | None = "gripper/joint_states"
    joint_names: tuple[str, ...] = ()
    """Finger joints whose positions sum to the opening (required input when given)."""
    units: Literal["m", "fraction"] = "m"
    """Topic commands and finger joint positions: m (a forward position controller on the finger joint), or
    fraction of ``max_width_m`` from 0 (closed) to 1 (open), crisp_py's gripper convention."""
    open_width_m: float = 0.08
    closed_width_m: float = 0.0
    max_width_m: float = 0.08
    """Width that reads as gripper_opening = 1."""
    speed_m_s: float = 0.1
    max_effort_n: float = 40.0
    resend_period_s: float = 1.0
    """Topic backend: the held command is re-sent this often (a controller that subscribes late gets it too)."""

    def __post_init__(self) -> None:
        _topic("GripperConfig.command", self.command)
        _topic("GripperConfig.joint_states", self.joint_states, optional=True)
        _require(self.units in ("m", "fraction"), "GripperConfig.units", f"must be m or fraction, got {self.units!r}")
        _require(0 < self.max_width_m <= 0.5, "GripperConfig.max_width_m",
                 f"must be in (0, 0.5] m (millimetres given?), got {self.max_width_m}")
        _require(0.05 <= self.resend_period_s <= 60, "GripperConfig.resend_period_s",
                 f"must be in [0.05, 60] s, got {self.resend_period_s}")
        _require(0 <= self.closed_width_m < self.open_width_m <= self.max_width_m, "GripperConfig",
                 f"needs 0 <= closed_width_m < open_width_m <= max_width_m, got {self.closed_width_m}, "
                 f"{self.open_width_m}, {self.max_width_m}")
        _require(self.speed_m_s > 0 and self.max_effort_n > 0, "GripperConfig.speed_m_s/max_effort_n",
                 "must be > 0")


@dataclass(frozen=True)
class HealthInput:
    """A driver status topic; while its value is not in ``ok_values`` the bridge holds (fault)."""

    name: str
    topic: str
    type: str = "bool"
    """bool / int8 / int32 (std_msgs), or any message as ``pkg/msg/Name`` (imported when the bridge starts,
    e.g. ``ur_dashboard_msgs/msg/SafetyMode``)."""
    field: str = "data"
    """The message field holding the value (``mode`` for UR's SafetyMode)."""
    ok_values: tuple[int, ...] = (1,)
    latched: bool = True
    """Subscribe transient_local (UR's status topics are latched)."""

    def __post_init__(self) -> None:
        _topic(f"HealthInput({self.name}).topic", self.topic)
        _require(len(self.ok_values) > 0, f"HealthInput({self.name}).ok_values", "must not be empty")
        short = self.type in ("bool", "int8", "int32")
        _require(short or self.type.count("/") == 2, f"HealthInput({self.name}).type",
                 f"must be bool, int8, int32 or pkg/msg/Name, got {self.type!r}")


@dataclass(frozen=True)
class ResetPose:
    position_m: tuple[float, float, float] = (0.45, 0.0, 0.25)
    orientation_xyzw: tuple[float, float, float, float] = (1.0, 0.0, 0.0, 0.0)

    def __post_init__(self) -> None:
        _require(len(self.position_m) == 3, "ResetPose.position_m", f"must be (x, y, z): {self.position_m}")
        q = self.orientation_xyzw
        _require(len(q) == 4 and abs(math.sqrt(sum(v * v for v in q)) - 1.0) < 1e-3,
                 "ResetPose.orientation_xyzw", f"must be a unit quaternion (x, y, z, w), got {q}")


@dataclass(frozen=True)
class ArmConfig:
    name: str
    driver: str
    """The driver stack (and versions) this file was written against, e.g. crisp_controllers 1.0."""
    base_frame: str
    """Frame of the TCP pose the driver publishes; a pose in another frame is refused."""
    control_hz: float
    topics: ArmTopics
    command: CommandConfig
    gripper: GripperConfig
    safety: SafetyLimits
    """Every limit, or ``preset: <name>`` with overrides; always ``workspace_low_m`` / ``workspace_high_m``.
    Its ``control_hz`` is the top-level one."""
    joint_names: tuple[str, ...] = ()
    """Arm joints in kinematic order; driver joint_states are mapped by name (their order is not fixed)."""
    kinematics: KinematicsConfig | None = None
    health: tuple[HealthInput, ...] = ()
    reset_pose: ResetPose | None = None
    """Where the bridge's reset drives the TCP (slowly, through the safety filter); None: hold in place."""
    reset_services: tuple[str, ...] = ()
    """std_srvs/Trigger services the bridge calls during its reset (the sim robot's ``reset``)."""
    controller_gains: dict[str, float] = field(default_factory=dict)
    """The controller's gains as configured in the driver (documentation, units in the names)."""

    def __post_init__(self) -> None:
        _require(bool(self.name) and bool(self.driver), "ArmConfig.name/driver", "must be non-empty")
        _require(len(set(self.joint_names)) == len(self.joint_names), "ArmConfig.joint_names", "repeats")
        _require(bool(self.base_frame), "ArmConfig.base_frame", "must name the frame of the TCP pose")
        _require(math.isfinite(self.control_hz) and 1 <= self.control_hz <= 500, "ArmConfig.control_hz",
                 f"must be in [1, 500] Hz, got {self.control_hz}")
        _require(self.safety.control_hz == self.control_hz, "ArmConfig.safety.control_hz",
                 f"must equal control_hz ({self.control_hz}), got {self.safety.control_hz}")
        _require(self.command.publish_hz >= 4 * self.control_hz, "ArmConfig.command.publish_hz",
                 f"must be >= 4 x control_hz = {4 * self.control_hz} Hz, got {self.command.publish_hz}")
        if self.topics.current_pose is None:
            _require(self.kinematics is not None and len(self.kinematics.a_m) == len(self.joint_names) > 0,
                     "ArmConfig.kinematics", "must give one DH row per joint if topics.current_pose is null")
        if self.command.backend == "joint_velocity":
            _require(self.kinematics is not None and len(self.kinematics.a_m) == len(self.joint_names) > 0,
                     "ArmConfig.kinematics", "must give one DH row per joint_names entry for joint_velocity")
        if self.reset_pose is not None:
            box = zip(self.safety.workspace_low_m, self.reset_pose.position_m, self.safety.workspace_high_m)
            inside = all(lo <= v <= hi for lo, v, hi in box)
            _require(inside, "ArmConfig.reset_pose.position_m", "must be inside the safety workspace box")
        for name, value in self.controller_gains.items():
            _require(math.isfinite(value) and value >= 0, f"ArmConfig.controller_gains.{name}",
                     f"must be finite and >= 0, got {value}")

    @property
    def velocity_kind(self) -> bool:
        return self.command.backend in ("twist", "joint_velocity")


@dataclass(frozen=True)
class CameraConfig:
    name: str
    """Contract camera name: the image appears as ``images/<name>`` and on ``rl/images/<name>``."""
    topic: str
    input_hw_px: tuple[int, int]
    """The driver's image size (height, width). Frames of another size are refused and counted: cropping
    them would give the policy another field of view."""
    transport: Literal["raw", "compressed"] = "raw"
    """raw: sensor_msgs/Image on ``topic``; compressed: CompressedImage on ``topic + '/compressed'``."""
    crop_xywh_px: tuple[int, int, int, int] | None = None
    """Crop (x, y, width, height) in input pixels before resizing; None: the full image."""
    output_hw_px: tuple[int, int] = (128, 128)
    rate_hz: float = 30.0
    """The driver's frame rate (used to flag dropped frames)."""
    reliability: Literal["auto", "reliable", "best_effort"] = "auto"
    """Input QoS. auto: match the publisher (reliable if every publisher is). Measured with the Kilted
    wheels: ~1 MB frames (640x480 rgb8) reach a best-effort reader only sporadically (1-13 of 150), from
    reliable or best-effort writers alike, LARGE_DATA or not; reliable-to-reliable delivered 150/150."""
    driver: str = "realsense2_camera"

    def __post_init__(self) -> None:
        _require(bool(self.name) and "/" not in self.name, "CameraConfig.name",
                 f"must be a non-empty name without '/', got {self.name!r}")
        _topic("CameraConfig.topic", self.topic)
        _require(all(16 <= v <= 8192 for v in self.input_hw_px), "CameraConfig.input_hw_px",
                 f"entries must be in [16, 8192] px, got {list(self.input_hw_px)}")
        if self.crop_xywh_px is not None:
            x, y, w, h = self.crop_xywh_px
            _require(x >= 0 and y >= 0 and w > 0 and h > 0, "CameraConfig.crop_xywh_px",
                     f"needs x, y >= 0 and width, height > 0, got {self.crop_xywh_px}")
            in_h, in_w = self.input_hw_px
            _require(x + w <= in_w and y + h <= in_h, "CameraConfig.crop_xywh_px",
                     f"{list(self.crop_xywh_px)} reaches outside the {in_w}x{in_h} input image (input_hw_px)")
        _require(all(16 <= v <= 1024 for v in self.output_hw_px), "CameraConfig.output_hw_px",
                 f"entries must be in [16, 1024] px, got {self.output_hw_px}")
        _require(0 < self.rate_hz <= 120, "CameraConfig.rate_hz", f"must be in (0, 120], got {self.rate_hz}")


def resolve_config_path(name_or_path: str | Path, kind: Literal["arms", "cameras"]) -> Path:
    """A path, or a bare name looked up in ``hardware_configs/<kind>/`` (repo, then the installed share)."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    candidates = [REPO_CONFIG_DIR / kind / f"{path.name}.yaml"]
    try:
        from ament_index_python.packages import get_package_share_directory

        share = Path(get_package_share_directory("robot_rl_ros")) / "hardware_configs" / kind
        candidates.append(share / f"{path.name}.yaml")
    except Exception:  # the ament index is absent or the package is not installed
        pass
    for candidate in candidates:
        if candidate.exists():
            return candidate
    looked = [str(c) for c in candidates]
    raise FileNotFoundError(f"no {kind} hardware config {str(name_or_path)!r}; looked in {looked}")


def _load(path: Path, key: str, cls: type, prepare: Any = None) -> Any:
    data = load_yaml(path)
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"{path}: expected a top-level '{key}:' mapping")
    if set(data) != {key}:
        raise ValueError(f"{path}: unknown top-level key(s) {sorted(set(data) - {key})}; only '{key}:' belongs here")
    try:
        body = prepare(data[key]) if prepare is not None else data[key]
        return from_jsonable(cls, body, where=key)
    except (ValueError, TypeError) as err:
        raise ValueError(f"{path}: {err}") from err


def _arm_with_safety(arm: Any) -> Any:
    """The ``safety:`` mapping completed: its preset's limits under the given ones, the top-level control_hz."""
    if not isinstance(arm, dict):
        return arm
    safety = arm.get("safety")
    if not isinstance(safety, dict):
        raise ValueError("arm.safety: missing; give every limit, or 'preset:' plus workspace_low_m/workspace_high_m "
                         f"(presets: {sorted(SAFETY_PRESETS)})")
    if "control_hz" in safety:
        raise ValueError("arm.safety.control_hz: set control_hz once, at the top level (arm.control_hz)")
    given = dict(safety)
    preset = given.pop("preset", None)
    if preset is not None:
        if preset not in SAFETY_PRESETS:
            raise ValueError(f"arm.safety.preset: unknown preset {preset!r}; presets: {sorted(SAFETY_PRESETS)}")
        given = {**SAFETY_PRESETS[preset], **given}
    return {**arm, "safety": {**given, "control_hz": arm.get("control_hz")}}


def load_arm_config(name_or_path: str | Path) -> ArmConfig:
    return _load(resolve_config_path(name_or_path, "arms"), "arm", ArmConfig, _arm_with_safety)


def load_camera_config(name_or_path: str | Path) -> CameraConfig:
    return _load(resolve_config_path(name_or_path, "cameras"), "camera", CameraConfig)
