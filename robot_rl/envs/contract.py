"""The environment contract shared by every backend (CPU MuJoCo, GPU-batched MuJoCo, ROS 2 robots).

Observation: a flat ``dict``
  ``state``            float32 [STATE_DIM]   proprioception, layout ``STATE_LAYOUT`` (robot base frame).
  ``privileged``       float32 [P]           simulation-only task state (object poses, goals); present only
                                             in ``obs_mode="state"``; layout named by the task.
  ``images/<camera>``  uint8   [H, W, 3]     RGB, cropped/resized per the camera config.

Action: float32 [7] in [-1, 1], layout ``ACTION_LAYOUT``:
  ``dx, dy, dz``    end-effector translation delta, times ``max_step_m`` -> metres per control step;
  ``drx, dry, drz`` end-effector rotation delta (axis-angle, base frame), times ``max_step_rad`` -> radians;
  ``gripper``       a latch: <= -0.5 closes, >= +0.5 opens, anything between keeps the last command
                    (so a discrete close/stay/open head maps to -1/0/+1, and real binary grippers fit).

Info keys every backend sets on every step: ``intervention`` (a human acted; the executed action is in
``intervention_action``), ``safety_clipped`` (the safety filter changed the command), ``is_success``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np

FieldKind = Literal["point", "vector", "axial", "rot6d", "quaternion", "scalar", "fixed"]
"""How a field moves when the workspace is mirrored, rotated or translated in the table plane (symmetry
augmentation, ``robot_rl.data.symmetry``): ``point`` a position (3-D, or 2-D on the table plane); ``vector`` a
free vector (linear velocity, force, a displacement between points, a translation step); ``axial`` a
pseudovector (angular velocity, torque, an axis-angle rotation step: a reflection flips it the other way);
``rot6d`` / ``quaternion`` an orientation; ``scalar`` unchanged by any of them (gripper opening, a height
difference); ``fixed`` cannot be transformed (joint angles, anything undeclared): a group that would have to
move it is refused."""
FIELD_KINDS: tuple[str, ...] = get_args(FieldKind)


@dataclass(frozen=True)
class Field:
    """One named slice of a flat vector."""

    name: str
    size: int
    unit: str
    kind: FieldKind = "fixed"

    def __post_init__(self) -> None:
        if self.size <= 0:
            raise ValueError(f"Field {self.name!r}: size must be > 0, got {self.size}")
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"Field {self.name!r}: kind must be one of {FIELD_KINDS}, got {self.kind!r}")
        sizes = {"point": (2, 3), "vector": (2, 3), "axial": (3,), "rot6d": (6,), "quaternion": (4,)}
        if self.kind in sizes and self.size not in sizes[self.kind]:
            raise ValueError(f"Field {self.name!r}: a {self.kind} field has size {sizes[self.kind]}, got {self.size}")


class Layout:
    """An ordered set of named fields over a flat vector; ``layout.slice("tcp_pos")`` indexes it."""

    def __init__(self, fields: tuple[Field, ...]) -> None:
        names = [f.name for f in fields]
        if len(set(names)) != len(names):
            raise ValueError(f"Layout has duplicate field names: {names}")
        self.fields = fields
        self._slices: dict[str, slice] = {}
        start = 0
        for f in fields:
            self._slices[f.name] = slice(start, start + f.size)
            start += f.size
        self.dim = start

    def slice(self, name: str) -> slice:
        try:
            return self._slices[name]
        except KeyError:
            raise KeyError(f"No field {name!r} in layout; fields: {list(self._slices)}") from None

    def names(self) -> list[str]:
        """One label per vector entry, e.g. ``tcp_pos.x`` style names ``tcp_pos[0]``."""
        return [f"{f.name}[{i}]" if f.size > 1 else f.name for f in self.fields for i in range(f.size)]

    def describe(self) -> list[dict[str, object]]:
        return [
            {"name": f.name, "start": self._slices[f.name].start, "size": f.size, "unit": f.unit, "kind": f.kind}
            for f in self.fields
        ]


STATE_LAYOUT = Layout(
    (
        Field("tcp_pos", 3, "m, tool centre point in the robot base frame", "point"),
        Field("tcp_rot6d", 6, "first two columns of the TCP rotation matrix (base frame): R00 R10 R20 R01 R11 R21",
              "rot6d"),
        Field("tcp_linvel", 3, "m/s, base frame", "vector"),
        Field("tcp_angvel", 3, "rad/s, base frame", "axial"),
        Field("gripper_opening", 1, "0 = closed, 1 = fully open", "scalar"),
        Field("wrench_force", 3, "N, measured at the flange, base frame", "vector"),
        Field("wrench_torque", 3, "N m, measured at the flange, base frame", "axial"),
    )
)
STATE_DIM = STATE_LAYOUT.dim

ACTION_LAYOUT = Layout(
    (
        Field("translation", 3, "[-1, 1] x max_step_m per control step, base frame", "vector"),
        Field("rotation", 3, "[-1, 1] x max_step_rad per control step, axis-angle, base frame", "axial"),
        Field("gripper", 1, "latch: <= -0.5 close, >= 0.5 open, else keep", "scalar"),
    )
)
ACTION_DIM = ACTION_LAYOUT.dim
GRIPPER_CLOSE_THRESHOLD = -0.5
GRIPPER_OPEN_THRESHOLD = 0.5

IMAGE_PREFIX = "images/"
BASE_ACTION = "base_action"
"""Observation key of a base policy's proposed action (float32, the env's action layout and units), added
where the env runs when a run has a base policy (``robot_rl.training.base_policy``)."""
ACTION_HISTORY = "previous_actions"
"""Observation key of the last K actions the arm was sent, newest first (float32 [K * A]), added where the env
runs when a run asks for an action history (``robot_rl.envs.action_history``)."""
INFO_KEYS = ("intervention", "safety_clipped", "is_success")


def executed_action(action: Any, info: Mapping[str, Any]) -> np.ndarray:
    """The action the arm carried out in a step: the human's during an intervention (``intervention_action``),
    else the one sent."""
    return np.asarray(info["intervention_action"] if info.get("intervention") else action, np.float32)


def image_key(camera: str) -> str:
    return IMAGE_PREFIX + camera


def is_image_key(key: str) -> bool:
    return key.startswith(IMAGE_PREFIX)


@dataclass(frozen=True)
class CameraSpec:
    name: str
    height: int = 128
    width: int = 128

    def __post_init__(self) -> None:
        if not self.name or "/" in self.name:
            raise ValueError(f"CameraSpec.name must be a non-empty name without '/', got {self.name!r}")
        for field in ("height", "width"):
            value = getattr(self, field)
            if not 16 <= value <= 1024:
                raise ValueError(f"CameraSpec({self.name}).{field} must be in [16, 1024], got {value}")


@dataclass(frozen=True)
class ContractSpec:
    """What an environment promises; compared at actor/learner handshake and checked by conformance tests."""

    cameras: tuple[CameraSpec, ...] = ()
    privileged_layout: tuple[Field, ...] = ()
    control_hz: float = 10.0
    max_step_m: float = 0.02
    max_step_rad: float = 0.1

    def __post_init__(self) -> None:
        if self.control_hz <= 0:
            raise ValueError(f"ContractSpec.control_hz must be > 0, got {self.control_hz}")
        if not 0 < self.max_step_m <= 0.2:
            raise ValueError(f"ContractSpec.max_step_m must be in (0, 0.2] m, got {self.max_step_m}")
        if not 0 < self.max_step_rad <= 1.0:
            raise ValueError(f"ContractSpec.max_step_rad must be in (0, 1] rad, got {self.max_step_rad}")
        names = [c.name for c in self.cameras]
        if len(set(names)) != len(names):
            raise ValueError(f"ContractSpec.cameras has duplicate names: {names}")

    @property
    def privileged(self) -> Layout | None:
        return Layout(self.privileged_layout) if self.privileged_layout else None

    def observation_space(self) -> gym.spaces.Dict:
        spaces: dict[str, gym.spaces.Space] = {
            "state": gym.spaces.Box(-np.inf, np.inf, (STATE_DIM,), np.float32),
        }
        if self.privileged_layout:
            dim = sum(f.size for f in self.privileged_layout)
            spaces["privileged"] = gym.spaces.Box(-np.inf, np.inf, (dim,), np.float32)
        for cam in self.cameras:
            spaces[image_key(cam.name)] = gym.spaces.Box(0, 255, (cam.height, cam.width, 3), np.uint8)
        return gym.spaces.Dict(spaces)

    @staticmethod
    def action_space() -> gym.spaces.Box:
        return gym.spaces.Box(-1.0, 1.0, (ACTION_DIM,), np.float32)

    def to_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d: Mapping[str, object]) -> ContractSpec:
        cams = tuple(CameraSpec(**c) for c in d.get("cameras", ()))  # type: ignore[union-attr]
        priv = tuple(Field(**f) for f in d.get("privileged_layout", ()))  # type: ignore[union-attr]
        rest = {k: v for k, v in d.items() if k not in ("cameras", "privileged_layout")}
        return ContractSpec(cameras=cams, privileged_layout=priv, **rest)  # type: ignore[arg-type]


def check_observation(
    obs: Mapping[str, np.ndarray], space: gym.spaces.Dict, source: str = "observation"
) -> None:
    """Raise ``ValueError`` naming the key and the source when ``obs`` breaks ``space``."""
    missing = set(space.spaces) - set(obs)
    extra = set(obs) - set(space.spaces)
    if missing or extra:
        raise ValueError(
            f"{source}: keys differ from the spec (missing {sorted(missing)}, extra {sorted(extra)})"
        )
    for key, sub in space.spaces.items():
        value = np.asarray(obs[key])
        if value.shape != sub.shape or value.dtype != sub.dtype:
            raise ValueError(
                f"{source}[{key!r}]: expected {sub.dtype}{list(sub.shape)}, got {value.dtype}{list(value.shape)}"
            )
        if value.dtype.kind == "f" and not np.all(np.isfinite(value)):
            raise ValueError(f"{source}[{key!r}]: contains NaN or Inf")


def check_action(action: np.ndarray, source: str = "action") -> np.ndarray:
    """Validate a contract action; return it as float32. NaN/Inf or wrong shape raise (never silently fixed)."""
    a = np.asarray(action, dtype=np.float32)
    if a.shape != (ACTION_DIM,):
        raise ValueError(f"{source}: expected shape ({ACTION_DIM},), got {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{source}: contains NaN or Inf: {a.tolist()}")
    return a
