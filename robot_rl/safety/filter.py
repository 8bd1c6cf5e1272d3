"""``SafetyFilter``: the one gate between every action (policy or human) and the arm's controller.

Pure Python + numpy (no ROS import), driven by the robot bridge with explicit times (seconds, any monotonic
clock), so every rule is unit-testable. Its decisions are one state machine (``STATES``, ``TRANSITIONS``):

- ``inactive``: nothing is commanded (start-up, disabled, just after a clear). Pose backends publish nothing,
  velocity backends zeros. A valid action with a fresh, plausible TCP reading makes it ``active``.
- ``active``: contract actions in [-1, 1] move the target (pose: ``target += a * max_step``; velocity:
  ``twist = a * max_step * control_hz``) through the workspace box, the tilt cone, reference limiting against
  the measured pose and, last, the per-command step limits against the last *commanded* target, so no
  reading, however wrong, makes one command jump further than the limits.
- ``holding``: after a stale action or observation, a refused (NaN, wrong shape) action or unusable inputs:
  pose backends hold a frozen target (moved at most one step toward the measured pose), velocity backends send
  zeros. Only a new valid action resumes motion.
- ``faulted``: a fault (driver health, a second command publisher, too many bad TCP readings in a row).
  Latched (``SafetyLimits.latch_faults``) until ``clear_faults()``, which is refused while a condition persists.
  Pose backends publish nothing (the controller holds its last target; a second publisher makes crisp ignore
  ours anyway), velocity backends zeros.
- ``estopped``: the e-stop (input or service) latches; only ``clear_estop()`` leaves it, and only while the
  input is released. Pose backends hold the target frozen where the arm is, velocity backends zeros.

A TCP reading is a measurement, not a command: malformed readings, and readings that imply a TCP motion faster
than ``max_measured_speed_m_s`` since the previous accepted one, are dropped and counted; after
``fault_after_bad_readings`` in a row the ``bad_readings`` fault is raised. While disabled (a reset service may
move the arm) a jump is taken as the new reference, and a start needs a reading that the one before it confirms.

Every call returns ``Sent``: exactly what the bridge must publish (``None`` fields: publish nothing), with the
state and the reasons; every clip, refusal and drop is counted in ``counters``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from robot_rl.envs.contract import ACTION_DIM, GRIPPER_CLOSE_THRESHOLD, GRIPPER_OPEN_THRESHOLD
from robot_rl.envs.geometry import rotation_angle_between, rotvec_to_matrix
from robot_rl.safety.config import MAX_REACH_M, SafetyLimits
from robot_rl.safety.gate import limit_tilt, pose_step, step_toward, tool_tilt

Kind = Literal["pose", "velocity"]
State = Literal["inactive", "holding", "active", "faulted", "estopped"]
STATES: tuple[State, ...] = ("inactive", "holding", "active", "faulted", "estopped")


def state_index(state: State) -> int:
    """The number a state travels as (``rl/executed_action``'s ``state``)."""
    return STATES.index(state)


_EYE = np.eye(3)
READING_SLACK_M = 0.01
"""Noise and delivery jitter allowed on top of ``max_measured_speed_m_s`` (readings batched by a stall arrive
together: 40 ms of motion at 0.25 m/s)."""
READING_SLACK_RAD = 0.05

TRANSITIONS: tuple[tuple[str, str, str], ...] = (
    # (from states, event, to state): the state machine, tested row by row (tests/safety/test_states.py).
    ("inactive holding", "valid action, fresh reading", "active"),
    ("active", "no action for stale_periods", "holding"),
    ("active", "no TCP reading for stale_periods", "holding"),
    ("active", "NaN / malformed action", "holding"),
    ("active", "required input missing or stale", "holding"),
    ("inactive holding active", "disable", "inactive"),
    ("inactive", "enable", "inactive"),
    ("inactive holding active", "fault raised", "faulted"),
    ("faulted", "clear_faults (no condition left)", "inactive"),
    ("faulted", "clear_faults while a condition persists", "faulted"),
    ("inactive holding active faulted", "e-stop asserted", "estopped"),
    ("estopped", "e-stop released", "estopped"),
    ("estopped", "clear_estop (input released)", "inactive"),
    ("estopped", "clear_estop while asserted", "estopped"),
)
"""Latching-fault rows; with ``latch_faults: false`` a fault also ends by itself when its condition does."""

COUNTERS = (
    "actions_received", "commands_sent",
    "clipped_action_range", "clipped_translation_step", "clipped_rotation_step", "clipped_workspace",
    "clipped_tilt", "clipped_speed", "limited_target_error",
    "refused_shape", "refused_nonfinite", "refused_estopped", "refused_faulted", "refused_disabled",
    "refused_inputs", "refused_stale_observation", "refused_outside_workspace",
    "hold_stale_action", "hold_stale_observation", "hold_inputs", "hold_refused_action",
    "estop_engaged", "faults_raised", "bad_observation", "implausible_observation",
)
SAFETY_CLIP_REASONS = frozenset(
    {"clipped_action_range", "clipped_translation_step", "clipped_rotation_step", "clipped_workspace",
     "clipped_tilt", "clipped_speed"}
)
_BLOCKING = {"estop": "estopped", "fault": "faulted", "disabled": "inactive"}
_HOLD_COUNTED = {"stale_action", "stale_observation", "inputs", "refused_action"}


@dataclass(frozen=True)
class Sent:
    """What goes to the controller. Pose: ``position``/``rotation``; velocity: ``linear``/``angular``."""

    state: State
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
class _Reading:
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
        self._obs: _Reading | None = None
        self._confirmed = False  # the last reading agreed with the one before it (a start needs that)
        self._bad_in_a_row = 0
        self._target: tuple[np.ndarray, np.ndarray] | None = None  # the last commanded pose target
        self._twist: tuple[np.ndarray, np.ndarray] | None = None  # last requested (before box), velocity kind
        self._last_action_s: float | None = None
        self._engaged = False  # commanded since the last (re-)start: holds are "holding", else "inactive"
        self._estop_latched = False
        self._estop_input = False
        self._faults: dict[str, str] = {}  # raised (latched or current)
        self._conditions: dict[str, str] = {}  # fault conditions present now
        self._enabled = True
        self._input_problem: str | None = None
        self._reason: str | None = None  # why the safe command is in force; None while active
        self.gripper_open: bool | None = None
        self.state: State = "inactive"
        self.last_hold_delay_s = math.nan
        """Last action -> the watchdog's hold, at the most recent stale-action hold (s)."""
        self.last_bad_reading: tuple[str, str] = ("", "")
        """(counter, why) of the last TCP reading that ``observe`` dropped."""

    # --- inputs ------------------------------------------------------------------------------------------
    def observe(self, position: np.ndarray, rotation: np.ndarray, now_s: float) -> bool:
        """A measured TCP pose (base frame). Malformed or implausible readings are dropped and counted."""
        pos, rot = np.asarray(position, float), np.asarray(rotation, float)
        ok = pos.shape == (3,) and rot.shape == (3, 3)
        ok = ok and bool(np.isfinite(pos).all() and np.isfinite(rot).all())
        if not ok or np.abs(rot @ rot.T - _EYE).max() > 1e-3 or np.linalg.det(rot) < 0:  # not a rotation
            return self._bad_reading("bad_observation", "not a finite pose with a rotation matrix")
        if np.abs(pos).max() > MAX_REACH_M:
            return self._bad_reading("bad_observation", f"{np.abs(pos).max():.3g} m from the base: beyond any reach")
        prev = self._obs
        plausible = prev is not None
        if prev is not None:
            dt = max(0.0, now_s - prev.time_s)
            jump = math.dist(pos, prev.position)
            turn = rotation_angle_between(rot, prev.rotation)
            lim = self.limits
            plausible = jump <= lim.max_measured_speed_m_s * dt + READING_SLACK_M and \
                turn <= lim.max_measured_angular_speed_rad_s * dt + READING_SLACK_RAD
            if not plausible and self._enabled:
                return self._bad_reading("implausible_observation",
                                         f"jumped {jump:.3f} m / {turn:.2f} rad in {dt * 1e3:.1f} ms")
        # While disabled (a reset service may move the arm) a jump becomes the new reference, unconfirmed.
        self._obs = _Reading(pos.copy(), rot.copy(), now_s)
        self._confirmed = plausible
        self._bad_in_a_row = 0
        self.set_fault("bad_readings", None)
        return True

    def set_estop_input(self, active: bool) -> None:
        """E-stop input (topic/button). Asserting latches; releasing does NOT clear (see ``clear_estop``)."""
        if active:
            self.engage_estop()
        self._estop_input = bool(active)

    def engage_estop(self) -> None:
        """Software e-stop (service): latches like the input does."""
        if not self._estop_latched:
            self.counters["estop_engaged"] += 1
            self._estop_latched = True

    def clear_estop(self) -> tuple[bool, str]:
        """The only way out of ``estopped``; refused while the e-stop input is still asserted."""
        if self._estop_input:
            return False, "e-stop input is still asserted; release it first"
        if not self._estop_latched:
            return True, "no e-stop latched"
        self._estop_latched = False
        self._restart()
        return True, "e-stop cleared; inactive until the next valid action"

    def set_fault(self, name: str, reason: str | None) -> None:
        """A fault condition: ``reason`` while it is present, None once it is gone. A raised fault stays until
        ``clear_faults()`` when faults latch; otherwise it ends with its condition."""
        if reason is not None:
            self._conditions[name] = reason
            if name not in self._faults:
                self.counters["faults_raised"] += 1
            self._faults[name] = reason
            return
        if self._conditions.pop(name, None) is not None and not self.limits.latch_faults:
            self._faults.pop(name, None)
            if not self._faults:
                self._restart()

    def clear_faults(self) -> tuple[bool, str]:
        """The only way out of ``faulted`` (latched faults); refused while a fault condition is still present."""
        if self._conditions:
            present = "; ".join(f"{k}: {v}" for k, v in self._conditions.items())
            return False, f"fault condition still present ({present})"
        if not self._faults:
            return True, "no fault latched"
        cleared = ", ".join(self._faults)
        self._faults.clear()
        self._restart()
        return True, f"cleared {cleared}; inactive until the next valid action"

    def set_input_problem(self, problem: str | None) -> None:
        """Required inputs unusable (never arrived, stale, wrong frame): hold until ``problem`` is None."""
        self._input_problem = problem

    def disable(self) -> None:
        """``inactive``: actions are refused, nothing is commanded (a reset moves the arm meanwhile)."""
        self._enabled = False

    def enable(self) -> None:
        """Leave ``disable``; the target restarts from the measured pose (no jump back to an old target)."""
        self._enabled = True
        self._restart()

    @property
    def enabled(self) -> bool:
        return self._enabled

    @property
    def faults(self) -> dict[str, str]:
        return dict(self._faults)

    @property
    def observation_time_s(self) -> float:
        """When the last accepted TCP reading arrived (-inf: never)."""
        return -math.inf if self._obs is None else self._obs.time_s

    @property
    def estop_latched(self) -> bool:
        return self._estop_latched

    @property
    def last_target(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The last commanded pose target (pose backends), None before the first command after a (re-)start."""
        return None if self._target is None else (self._target[0].copy(), self._target[1].copy())

    # --- outputs -----------------------------------------------------------------------------------------
    def on_action(self, action: np.ndarray, now_s: float) -> Sent:
        """Filter one contract action [7] (policy or human); return the command to publish now."""
        self.counters["actions_received"] += 1
        a = np.asarray(action, dtype=np.float64)
        if a.shape != (ACTION_DIM,):
            return self._refuse("refused_shape", "refused_action", now_s)
        if not np.all(np.isfinite(a)):
            return self._refuse("refused_nonfinite", "refused_action", now_s)
        blocked = self._blocked(now_s)
        if blocked is not None:
            counter = {"estop": "refused_estopped", "fault": "refused_faulted"}.get(blocked, f"refused_{blocked}")
            return self._refuse(counter, blocked, now_s)
        obs = self._obs
        assert obs is not None  # not stale
        if not self._engaged:  # a start: from a reading confirmed by the one before it, near the box
            if not self._confirmed:
                return self._refuse("refused_stale_observation", "stale_observation", now_s)
            if self._outside_box_m(obs.position) > self.limits.max_translation_step_m:
                return self._refuse("refused_outside_workspace", "outside_workspace", now_s)
        reasons: list[str] = []
        clipped = np.clip(a, -1.0, 1.0)
        if np.any(clipped != a):
            reasons.append("clipped_action_range")
        if clipped[6] <= GRIPPER_CLOSE_THRESHOLD:
            self.gripper_open = False
        elif clipped[6] >= GRIPPER_OPEN_THRESHOLD:
            self.gripper_open = True
        self._last_action_s = now_s
        self._reason = None
        self._engaged = True
        self.state = "active"
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
        blocked = self._blocked(now_s)
        if blocked is not None:
            return self._safe(blocked, now_s)
        if self._last_action_s is None or now_s - self._last_action_s > self.limits.stale_after_s:
            return self._safe("stale_action", now_s)
        if self._reason is not None:  # once holding, only a new valid action resumes motion
            return self._safe(self._reason, now_s)
        if self.kind == "pose":
            pos, rot = self._target  # type: ignore[misc]  # active implies a target
            return self._count(Sent("active", pos.copy(), rot.copy(), gripper_open=self.gripper_open))
        return self._count(self._velocity_command([]))

    def status(self) -> dict[str, object]:
        return {"state": self.state, "reason": self._reason, "estop_latched": self._estop_latched,
                "faults": dict(self._faults), "fault_conditions": dict(self._conditions),
                "enabled": self._enabled, "input_problem": self._input_problem,
                "counters": dict(self.counters), "last_hold_delay_s": self.last_hold_delay_s}

    # --- internals -----------------------------------------------------------------------------------------
    def _bad_reading(self, counter: str, detail: str) -> bool:
        self.counters[counter] += 1
        self.last_bad_reading = (counter, detail)
        self._bad_in_a_row += 1
        if self._bad_in_a_row >= self.limits.fault_after_bad_readings:
            self.set_fault("bad_readings", f"{self._bad_in_a_row} unusable TCP readings in a row (last: {detail})")
            self._obs = None  # the next well-formed reading is the new reference
        return False

    def _blocked(self, now_s: float) -> str | None:
        if self._estop_latched:
            return "estop"
        if self._faults:
            return "fault"
        if not self._enabled:
            return "disabled"
        if self._input_problem is not None:
            return "inputs"
        if self._obs is None or now_s - self._obs.time_s > self.limits.stale_after_s:
            return "stale_observation"
        return None

    def _fresh_obs(self, now_s: float) -> _Reading | None:
        obs = self._obs
        return obs if obs is not None and now_s - obs.time_s <= self.limits.stale_after_s else None

    def _outside_box_m(self, position: np.ndarray) -> float:
        return float(np.linalg.norm(position - np.clip(position, self._low, self._high)))

    def _refuse(self, counter: str, reason: str, now_s: float) -> Sent:
        """A refused action: count it and send the safe command instead."""
        self.counters[counter] += 1
        sent = self._safe(reason, now_s)
        return dataclasses.replace(sent, reasons=(*sent.reasons, counter))

    def _safe(self, reason: str, now_s: float) -> Sent:
        """The safe command of ``reason``'s state (see the module docstring)."""
        state: State = _BLOCKING.get(reason, "holding" if self._engaged else "inactive")  # type: ignore[assignment]
        if self._reason != reason:  # entering this hold: count it, and freeze the pose target where the arm is
            if reason in _HOLD_COUNTED and self._engaged:
                self.counters[f"hold_{reason}"] += 1
            if reason == "stale_action" and self._last_action_s is not None:
                self.last_hold_delay_s = now_s - self._last_action_s
            obs = self._fresh_obs(now_s)
            if self.kind == "pose" and self._target is not None and obs is not None:
                self._target = self._continue(np.clip(obs.position, self._low, self._high), obs.rotation, [])
            self._reason = reason
        self.state = state
        self._twist = None
        why = (f"hold_{reason}",)
        if self.kind == "velocity":
            return self._count(Sent(state, linear=np.zeros(3), angular=np.zeros(3), reasons=why))
        if self._target is None or state in ("inactive", "faulted"):
            return Sent(state, reasons=why)  # publish nothing: the controller keeps its last target
        pos, rot = self._target
        return self._count(Sent(state, pos.copy(), rot.copy(), reasons=why))

    def _restart(self) -> None:
        """Back to ``inactive``: the next command starts from the measured pose."""
        self._target = None
        self._twist = None
        self._last_action_s = None
        self._reason = None
        self._engaged = False
        self.state = "inactive"

    def _count(self, sent: Sent) -> Sent:
        if sent.has_command:
            self.counters["commands_sent"] += 1
        for r in sent.reasons:
            if r in self.counters and r.startswith(("clipped_", "limited_")):
                self.counters[r] += 1
        return sent

    def _continue(self, pos: np.ndarray, rot: np.ndarray, reasons: list[str]) -> tuple[np.ndarray, np.ndarray]:
        return (pos, rot) if self._target is None else step_toward(self._target, pos, rot, self.limits, reasons)

    def _pose_step(self, a: np.ndarray, reasons: list[str]) -> Sent:
        lim, obs = self.limits, self._obs
        assert obs is not None
        if self._target is None:  # (re-)start from the measured pose (at most one step outside the box)
            rot, _ = limit_tilt(obs.rotation, lim.max_tilt_rad)
            self._target = (np.clip(obs.position, self._low, self._high), rot)
        self._target = pose_step(self._target, a, (obs.position, obs.rotation), lim, reasons)
        pos, rot = self._target
        return Sent("active", pos.copy(), rot.copy(), gripper_open=self.gripper_open, reasons=tuple(reasons))

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
        hz = lim.control_hz  # one period of motion stays within the per-command step limits too
        caps = ((v, min(lim.max_linear_speed_m_s, lim.max_translation_step_m * hz)),
                (w, min(lim.max_angular_speed_rad_s, lim.max_rotation_step_rad * hz)))
        for vec, cap in caps:
            norm = float(np.linalg.norm(vec))
            if norm > cap:
                vec *= cap / norm
                if "clipped_speed" not in reasons:
                    reasons.append("clipped_speed")
        if lim.max_tilt_rad is not None and np.any(w):
            future = rotvec_to_matrix(w * horizon) @ obs.rotation
            if tool_tilt(future) > lim.max_tilt_rad and tool_tilt(future) > tool_tilt(obs.rotation):
                w = np.zeros(3)
                reasons.append("clipped_tilt")
        return Sent("active", linear=v, angular=w, gripper_open=self.gripper_open, reasons=tuple(reasons))
