"""``SafetyFilter``: the one gate between every action (policy or human) and the arm's controller.

Pure Python + numpy (no ROS import), driven by the robot bridge with explicit times (seconds, any monotonic
clock), so every rule is unit-testable:

- contract actions in [-1, 1] are clipped to range; NaN/Inf or a wrong shape is refused (-> hold);
- pose backends: ``target += a * max_step`` (like the sim), then per-command translation/rotation limits,
  the workspace box, the tilt cone, and reference limiting against the measured pose;
- velocity backends: ``twist = a * max_step * control_hz``, speed limits, and the box/tilt applied to the
  pose predicted one control period ahead;
- stale action or stale observation, a latched e-stop, a driver fault or a pause -> the safe command:
  hold (pose backends: a frozen target, the measured pose when fresh) or zero (velocity backends);
- the e-stop latches; only ``clear_estop()`` releases it, and only while its input is released.

Every call returns ``Sent``: exactly what the bridge must publish (``None`` fields: publish nothing), with
the mode and the reasons; every clip and refusal is counted in ``counters``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from robot_rl.envs.contract import ACTION_DIM, GRIPPER_CLOSE_THRESHOLD, GRIPPER_OPEN_THRESHOLD
from robot_rl.envs.geometry import matrix_to_rotvec, rotation_angle_between, rotvec_to_matrix
from robot_rl.safety.config import SafetyLimits

Kind = Literal["pose", "velocity"]
Mode = Literal["active", "hold", "paused", "fault", "estop"]
MODES: tuple[Mode, ...] = ("active", "hold", "paused", "fault", "estop")
_DOWN = np.array([0.0, 0.0, -1.0])

COUNTERS = (
    "actions_received", "commands_sent",
    "clipped_action_range", "clipped_translation_step", "clipped_rotation_step", "clipped_workspace",
    "clipped_tilt", "clipped_speed", "limited_target_error",
    "refused_shape", "refused_nonfinite", "refused_estop", "refused_fault", "refused_paused",
    "refused_stale_observation", "hold_stale_action", "hold_stale_observation",
    "estop_engaged", "bad_observation",
)
SAFETY_CLIP_REASONS = frozenset(
    {"clipped_action_range", "clipped_translation_step", "clipped_rotation_step", "clipped_workspace",
     "clipped_tilt", "clipped_speed"}
)


@dataclass(frozen=True)
class Sent:
    """What goes to the controller. Pose: ``position``/``rotation``; velocity: ``linear``/``angular``."""

    mode: Mode
    position: np.ndarray | None = None  # [3] m, base frame
    rotation: np.ndarray | None = None  # [3, 3]
    linear: np.ndarray | None = None  # [3] m/s
    angular: np.ndarray | None = None  # [3] rad/s
    gripper_open: bool | None = None  # None: no gripper command
    action: np.ndarray | None = None  # [7] the contract action executed after range clipping (active only)
    reasons: tuple[str, ...] = ()

    @property
    def safety_clipped(self) -> bool:
        return any(r in SAFETY_CLIP_REASONS for r in self.reasons)

    @property
    def has_command(self) -> bool:
        return self.position is not None or self.linear is not None


@dataclass
class _Obs:
    position: np.ndarray
    rotation: np.ndarray
    time_s: float


@dataclass
class SafetyFilter:
    limits: SafetyLimits
    kind: Kind = "pose"
    counters: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))

    def __post_init__(self) -> None:
        if self.kind not in ("pose", "velocity"):
            raise ValueError(f"SafetyFilter.kind must be 'pose' or 'velocity', got {self.kind!r}")
        self._low = np.asarray(self.limits.workspace_low_m, float)
        self._high = np.asarray(self.limits.workspace_high_m, float)
        self._obs: _Obs | None = None
        self._target: tuple[np.ndarray, np.ndarray] | None = None
        self._twist: tuple[np.ndarray, np.ndarray] | None = None  # last requested (before box), velocity kind
        self._last_action_s: float | None = None
        self._estop_latched = False
        self._estop_input = False
        self._faults: dict[str, str] = {}
        self._paused = False
        self._holding: str | None = None  # reason of the hold in force, or None while active
        self.gripper_open: bool | None = None
        self.mode: Mode = "hold"
        self.last_hold_delay_s = math.nan
        """Last action -> the watchdog's hold, at the most recent stale-action hold (s)."""

    # --- inputs ------------------------------------------------------------------------------------------
    def observe(self, position: np.ndarray, rotation: np.ndarray, now_s: float) -> bool:
        """A measured TCP pose (base frame). Non-finite or non-rotation readings are dropped and counted."""
        pos, rot = np.asarray(position, float), np.asarray(rotation, float)
        ok = pos.shape == (3,) and rot.shape == (3, 3)
        ok = ok and bool(np.isfinite(pos).all() and np.isfinite(rot).all())
        if not ok or not np.allclose(rot @ rot.T, np.eye(3), atol=1e-3):
            self.counters["bad_observation"] += 1
            return False
        self._obs = _Obs(pos.copy(), rot.copy(), now_s)
        return True

    def set_estop_input(self, active: bool) -> None:
        """E-stop input (topic/button). Asserting latches; releasing does NOT clear (see ``clear_estop``)."""
        if active and not self._estop_latched:
            self.counters["estop_engaged"] += 1
            self._estop_latched = True
        self._estop_input = bool(active)

    def engage_estop(self) -> None:
        """Software e-stop (service): latches like the input does."""
        if not self._estop_latched:
            self.counters["estop_engaged"] += 1
            self._estop_latched = True

    def clear_estop(self) -> tuple[bool, str]:
        """The only way out of an e-stop; refused while the e-stop input is still asserted."""
        if self._estop_input:
            return False, "e-stop input is still asserted; release it first"
        if not self._estop_latched:
            return True, "no e-stop latched"
        self._estop_latched = False
        self._reseed()
        return True, "e-stop cleared; holding until the next fresh action"

    def set_fault(self, name: str, reason: str | None) -> None:
        """Driver health input: ``reason`` set -> fault (hold/zero); None -> that fault is cleared."""
        if reason is None:
            if self._faults.pop(name, None) is not None and not self._faults:
                self._reseed()
        else:
            self._faults[name] = reason

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        """Leave a pause; the pose target restarts from the measured pose (no jump back to an old target)."""
        self._paused = False
        self._reseed()

    @property
    def faults(self) -> dict[str, str]:
        return dict(self._faults)

    @property
    def observation_time_s(self) -> float:
        """When the last valid observation arrived (-inf: never)."""
        return -math.inf if self._obs is None else self._obs.time_s

    @property
    def estop_latched(self) -> bool:
        return self._estop_latched

    # --- outputs -----------------------------------------------------------------------------------------
    def on_action(self, action: np.ndarray, now_s: float) -> Sent:
        """Filter one contract action [7] (policy or human); return the command to publish now."""
        self.counters["actions_received"] += 1
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (ACTION_DIM,):
            return self._refuse("refused_shape", "refused", now_s)
        if not np.all(np.isfinite(a)):
            return self._refuse("refused_nonfinite", "refused", now_s)
        blocked = self._blocked()
        if blocked is not None:
            return self._refuse(f"refused_{blocked}", blocked, now_s)
        if self._obs_stale(now_s):
            return self._refuse("refused_stale_observation", "stale_observation", now_s)
        reasons: list[str] = []
        clipped = np.clip(a, -1.0, 1.0)
        if np.any(clipped != a):
            reasons.append("clipped_action_range")
        if clipped[6] <= GRIPPER_CLOSE_THRESHOLD:
            self.gripper_open = False
        elif clipped[6] >= GRIPPER_OPEN_THRESHOLD:
            self.gripper_open = True
        self._last_action_s = now_s
        self._holding = None
        self.mode = "active"
        if self.kind == "pose":
            sent = self._pose_step(clipped, reasons)
        else:
            lim = self.limits
            hz = lim.control_hz
            self._twist = (clipped[:3] * lim.max_step_m * hz, clipped[3:6] * lim.max_step_rad * hz)
            sent = self._velocity_command(reasons)
        return self._count(dataclasses.replace(sent, action=clipped.astype(np.float32)))

    def tick(self, now_s: float) -> Sent:
        """Watchdog / streaming tick (call at >= 4x control_hz): the command to (re)publish now."""
        blocked = self._blocked()
        if blocked is not None:
            return self._hold(blocked, now_s)
        if self._obs_stale(now_s):
            return self._hold("stale_observation", now_s)
        if self._last_action_s is None or now_s - self._last_action_s > self.limits.stale_after_s:
            return self._hold("stale_action", now_s)
        if self._holding is not None:  # once holding, only a new valid action resumes motion
            return self._hold("stale_action" if self._holding in MODES else self._holding, now_s)
        if self.kind == "pose":
            pos, rot = self._target  # type: ignore[misc]  # active implies a target
            return self._count(Sent("active", pos.copy(), rot.copy(), gripper_open=self.gripper_open))
        return self._count(self._velocity_command([]))

    def status(self) -> dict[str, object]:
        return {"mode": self.mode, "holding": self._holding, "estop_latched": self._estop_latched,
                "faults": dict(self._faults), "paused": self._paused, "counters": dict(self.counters),
                "last_hold_delay_s": self.last_hold_delay_s}

    # --- internals -----------------------------------------------------------------------------------------
    def _blocked(self) -> str | None:
        if self._estop_latched:
            return "estop"
        if self._faults:
            return "fault"
        if self._paused:
            return "paused"
        return None

    def _obs_stale(self, now_s: float) -> bool:
        return self._obs is None or now_s - self._obs.time_s > self.limits.stale_after_s

    def _refuse(self, counter: str, hold_reason: str, now_s: float) -> Sent:
        """A refused action: count it and send the safe command (hold / zero) instead."""
        self.counters[counter] += 1
        sent = self._hold(hold_reason, now_s)
        return dataclasses.replace(sent, reasons=(*sent.reasons, counter))

    def _hold(self, reason: str, now_s: float) -> Sent:
        """Safe command: pose -> frozen target (the measured pose when fresh); velocity -> zero twist."""
        mode: Mode = reason if reason in ("estop", "fault", "paused") else "hold"  # type: ignore[assignment]
        if self._holding != reason:
            if reason in ("stale_action", "stale_observation"):
                self.counters[f"hold_{reason}"] += 1
            if reason == "stale_action" and self._last_action_s is not None:
                self.last_hold_delay_s = now_s - self._last_action_s
            if self.kind == "pose" and not self._obs_stale(now_s):  # freeze at the measured pose, boxed
                obs = self._obs
                assert obs is not None
                self._target = (np.clip(obs.position, self._low, self._high), obs.rotation.copy())
            self._holding = reason
        self.mode = mode
        self._twist = None
        why = (f"hold_{reason}",)
        if self.kind == "velocity":
            return self._count(Sent(mode, linear=np.zeros(3), angular=np.zeros(3), reasons=why))
        if self._target is None:
            return Sent(mode, reasons=why)  # nothing was ever commanded: publish nothing
        pos, rot = self._target
        return self._count(Sent(mode, pos.copy(), rot.copy(), reasons=why))

    def _reseed(self) -> None:
        self._target = None
        self._twist = None
        self._last_action_s = None
        self._holding = None

    def _count(self, sent: Sent) -> Sent:
        if sent.has_command:
            self.counters["commands_sent"] += 1
        for r in sent.reasons:
            if r in self.counters and r.startswith(("clipped_", "limited_")):
                self.counters[r] += 1
        return sent

    def _pose_step(self, a: np.ndarray, reasons: list[str]) -> Sent:
        lim, obs = self.limits, self._obs
        assert obs is not None
        if self._target is None:
            self._target = (obs.position.copy(), obs.rotation.copy())
        old_pos, old_rot = self._target
        delta = a[:3] * lim.max_step_m
        norm = float(np.linalg.norm(delta))
        if norm > lim.max_translation_step_m:
            delta *= lim.max_translation_step_m / norm
            reasons.append("clipped_translation_step")
        rotvec = a[3:6] * lim.max_step_rad
        angle = float(np.linalg.norm(rotvec))
        if angle > lim.max_rotation_step_rad:
            rotvec *= lim.max_rotation_step_rad / angle
            reasons.append("clipped_rotation_step")
        pos = old_pos + delta
        rot = rotvec_to_matrix(rotvec) @ old_rot if angle > 0 else old_rot
        boxed = np.clip(pos, self._low, self._high)
        if np.any(boxed != pos):
            reasons.append("clipped_workspace")
        rot, tilted = limit_tilt(rot, lim.max_tilt_rad)
        if tilted:
            reasons.append("clipped_tilt")
        # Reference limiting against the measured pose (bounded force in contact, no wind-up).
        err = np.clip(boxed - obs.position, -lim.max_target_error_m, lim.max_target_error_m)
        limited = obs.position + err
        limited_any = bool(np.any(limited != boxed))
        if rotation_angle_between(rot, obs.rotation) > lim.max_target_error_rad:
            rv = matrix_to_rotvec(rot @ obs.rotation.T)
            rot = rotvec_to_matrix(rv * (lim.max_target_error_rad / np.linalg.norm(rv))) @ obs.rotation
            limited_any = True
        if limited_any:
            reasons.append("limited_target_error")
        # The box wins over reference limiting: a target outside the box is never sent.
        limited = np.clip(limited, self._low, self._high)
        self._target = (limited, rot)
        return Sent("active", limited.copy(), rot.copy(), gripper_open=self.gripper_open,
                    reasons=tuple(reasons))

    def _velocity_command(self, reasons: list[str]) -> Sent:
        lim, obs = self.limits, self._obs
        assert obs is not None and self._twist is not None
        v, w = self._twist[0].copy(), self._twist[1].copy()
        horizon = lim.control_period_s
        ahead = obs.position + v * horizon
        boxed = np.clip(ahead, self._low, self._high)
        if np.any(boxed != ahead):  # the pose one period ahead must be in the box (or head back into it)
            v = (boxed - obs.position) / horizon
            reasons.append("clipped_workspace")
        for vec, cap in ((v, lim.max_linear_speed_m_s), (w, lim.max_angular_speed_rad_s)):
            norm = float(np.linalg.norm(vec))
            if norm > cap:
                vec *= cap / norm
                if "clipped_speed" not in reasons:
                    reasons.append("clipped_speed")
        if lim.max_tilt_rad is not None and np.any(w):
            future = rotvec_to_matrix(w * horizon) @ obs.rotation
            if _tilt(future) > lim.max_tilt_rad and _tilt(future) > _tilt(obs.rotation):
                w = np.zeros(3)
                reasons.append("clipped_tilt")
        return Sent("active", linear=v, angular=w, gripper_open=self.gripper_open, reasons=tuple(reasons))


def _tilt(mat: np.ndarray) -> float:
    return math.acos(min(1.0, max(-1.0, -float(mat[2, 2]))))  # angle between tool z and world -z


def limit_tilt(mat: np.ndarray, max_tilt_rad: float | None) -> tuple[np.ndarray, bool]:
    """Rotate ``mat`` so its tool z axis is within ``max_tilt_rad`` of pointing down; report if it did."""
    if max_tilt_rad is None:
        return mat, False
    tilt = _tilt(mat)
    if tilt <= max_tilt_rad:
        return mat, False
    axis = np.cross(mat[:, 2], _DOWN)
    norm = np.linalg.norm(axis)
    axis = np.array([1.0, 0.0, 0.0]) if norm < 1e-9 else axis / norm
    return rotvec_to_matrix(axis * (tilt - max_tilt_rad)) @ mat, True
