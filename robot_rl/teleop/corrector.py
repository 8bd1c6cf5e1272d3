"""A scripted stand-in for the human in simulation: the task's scripted expert watches the policy and takes
over when the policy is not doing the job, acts for ``takeover_steps`` steps, then hands back.

Each step (one ``propose`` + one ``read``) the expert plans on the live scene, noise-free, so its phase
machine tracks the episode whoever acts. When is the policy "not doing the job"? ``drift_metric``:

- ``progress`` (default): the task has made no progress for ``patience_steps`` steps: its ``Task.progress``
  (pick_cube: reach + grasp + lift, each in [0, 1], reach linear in the distance) has not risen by
  ``min_progress`` above its best so far. A small ``min_progress`` catches stalls only; a large one also a
  policy that dawdles (under RLIF, with no task reward, dawdling is otherwise never penalised). This is what a person
  watching sees (the arm wanders, stalls, drops the cube), and it does not depend on how the policy moves:
  measured on a trained pick_cube policy that succeeds, per-step comparisons with the expert's action flag
  most steps (RMS over the 6 arm dims above 0.3 on 100% of steps, heading more than 73 degrees off on 59%),
  because the policy takes other, equally good paths.
- ``direction``: 1 - cos of the angle between the policy's and the plan's translation (moving while the plan
  holds, or the reverse, counts as 1), above ``threshold`` for ``patience_steps`` consecutive steps.
- ``rms``: the RMS difference of the 6 arm dims above ``threshold`` for ``patience_steps`` consecutive steps.

The action metrics also count a gripper latch that disagrees with the plan (``gripper_mismatch``). A takeover
happens with probability ``p_takeover_on_drift`` (RLIF's simulated expert: 0.95) when the rule fires, with
``p_takeover_random`` on any other step. While in control the corrector executes the plan plus
``expert_noise_std`` Gaussian noise: a degraded expert, as in RLIF's experiments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from robot_rl.envs.contract import ACTION_DIM, GRIPPER_CLOSE_THRESHOLD, GRIPPER_OPEN_THRESHOLD
from robot_rl.teleop.base import TeleopCommand, Teleoperator


@dataclass(frozen=True)
class CorrectorConfig:
    drift_metric: Literal["progress", "direction", "rms"] = "progress"
    """When the policy counts as failing (module docstring)."""
    patience_steps: int = 8
    """``progress``: steps without progress before a takeover; action metrics: consecutive drifted steps."""
    min_progress: float = 0.01
    """``progress``: the smallest rise of the summed shaping terms that counts as progress."""
    threshold: float = 0.3
    """Action metrics: drift above which a step is drifted (``direction``: 1 - cos in [0, 2]; ``rms``: contract
    units)."""
    gripper_mismatch: bool = True
    """A gripper latch disagreeing with the expert's counts as drift."""
    takeover_steps: int = 20
    """k: steps the corrector keeps control once it takes over. 20 carries pick_cube's expert through most of a
    pick (a demo takes ~22 steps), as a person who steps in finishes the correction; with 5 the policy undid
    the fragments and few corrected episodes succeeded (docs/benchmarks.md). RLIF's simulated expert: 4."""
    p_takeover_on_drift: float = 1.0
    """Probability of taking over on a drifted step."""
    p_takeover_random: float = 0.0
    """Probability of taking over on any other step (random-intervention baselines)."""
    cooldown_steps: int = 0
    """Steps after a hand-back during which the policy keeps control whatever it does."""
    expert_noise_std: float = 0.0
    """Std of Gaussian noise on the corrector's executed arm actions (a degraded expert)."""
    seed: int = 0

    def __post_init__(self) -> None:
        if not (self.threshold >= 0 and not math.isnan(self.threshold)):
            raise ValueError(f"CorrectorConfig.threshold must be >= 0 (inf: never on drift), got {self.threshold}")
        if self.drift_metric not in ("progress", "direction", "rms"):
            raise ValueError(
                f"CorrectorConfig.drift_metric must be 'progress', 'direction' or 'rms', got {self.drift_metric!r}"
            )
        if not self.min_progress >= 0:
            raise ValueError(f"CorrectorConfig.min_progress must be >= 0, got {self.min_progress}")
        for name in ("takeover_steps", "patience_steps"):
            if getattr(self, name) < 1:
                raise ValueError(f"CorrectorConfig.{name} must be >= 1, got {getattr(self, name)}")
        for name in ("p_takeover_on_drift", "p_takeover_random"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"CorrectorConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.cooldown_steps < 0:
            raise ValueError(f"CorrectorConfig.cooldown_steps must be >= 0, got {self.cooldown_steps}")
        if self.expert_noise_std < 0:
            raise ValueError(f"CorrectorConfig.expert_noise_std must be >= 0, got {self.expert_noise_std}")


def no_scripted_corrector(env_name: str) -> str:
    """The error for ``--teleop scripted`` on an env without a robot_rl task's scripted expert."""
    return (f"no scripted corrector for {env_name!r}: only robot_rl tasks have a scripted expert; use a human "
            "device (--teleop keyboard, gamepad or spacemouse)")


def latch(value: float) -> int:
    """Contract gripper latch of one action value: -1 close, +1 open, 0 keep."""
    return -1 if value <= GRIPPER_CLOSE_THRESHOLD else 1 if value >= GRIPPER_OPEN_THRESHOLD else 0


def action_drift(policy: np.ndarray, expert: np.ndarray) -> float:
    """RMS difference over the 6 arm dims (contract units)."""
    diff = np.asarray(policy[:6], np.float64) - np.asarray(expert[:6], np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


HOLD_NORM = 0.1
"""A translation command shorter than this (contract units) means "hold still" for the direction metric."""


def direction_drift(policy: np.ndarray, expert: np.ndarray) -> float:
    """1 - cos of the angle between the translations (dx, dy, dz); 1 when exactly one of them holds still."""
    p, e = np.asarray(policy[:3], np.float64), np.asarray(expert[:3], np.float64)
    np_, ne = float(np.linalg.norm(p)), float(np.linalg.norm(e))
    if np_ < HOLD_NORM or ne < HOLD_NORM:
        return 0.0 if (np_ < HOLD_NORM and ne < HOLD_NORM) else 1.0
    return 1.0 - float(p @ e) / (np_ * ne)


class ScriptedCorrector(Teleoperator):
    """``Teleoperator`` backed by the task's scripted expert (needs ``robot_rl.sim``; see module docstring).

    ``plan_fn`` replaces the expert (tests): ``plan_fn() -> action [7]`` evaluated once per ``read``.
    """

    name = "scripted"
    realtime = False

    def __init__(self, config: CorrectorConfig | None = None, plan_fn: Any = None, progress_fn: Any = None) -> None:
        super().__init__()
        self.config = config or CorrectorConfig()
        self._rng = np.random.default_rng(self.config.seed)
        self._plan_fn = plan_fn
        self._progress_fn = progress_fn
        self._scripted = plan_fn is None
        self._best = -math.inf
        self._proposal = np.zeros(ACTION_DIM, np.float32)
        self._remaining = 0
        self._cooldown = 0
        self._drifted_run = 0
        self._gripper_state = 1  # the env starts with the gripper open
        self.last_drift = 0.0
        self.takeovers = 0
        self.episodes = 0

    @property
    def in_control(self) -> bool:
        return self._remaining > 0

    def on_reset(self, env: Any) -> None:
        if self._scripted:
            from robot_rl.sim import make_expert

            sim_env = env.unwrapped
            if not hasattr(sim_env, "task") or not hasattr(sim_env, "scene"):
                raise ValueError(no_scripted_corrector(type(sim_env).__name__))
            expert = make_expert(sim_env)
            expert.reset()
            self._plan_fn = lambda: expert.plan(sim_env.scene)
            self._progress_fn = lambda: sim_env.task.progress(sim_env.scene)
        self._remaining = self._cooldown = self._drifted_run = 0
        self._best = -math.inf
        self._gripper_state = 1
        self.episodes += 1

    def propose(self, policy_action: np.ndarray) -> None:
        self._proposal = np.asarray(policy_action, np.float32)

    def _drifted(self, plan: np.ndarray) -> bool:
        if self.config.drift_metric == "progress":
            if self._progress_fn is None:
                raise RuntimeError("ScriptedCorrector: drift_metric='progress' needs the task's progress")
            progress = float(self._progress_fn())
            self.last_drift = self._best - progress
            if progress >= self._best + self.config.min_progress:
                self._best = progress
                return False
            return True
        metric = direction_drift if self.config.drift_metric == "direction" else action_drift
        self.last_drift = metric(self._proposal, plan)
        if self.last_drift > self.config.threshold:
            return True
        if not self.config.gripper_mismatch:
            return False
        proposed = latch(float(self._proposal[6])) or self._gripper_state
        wanted = latch(float(plan[6])) or self._gripper_state
        return proposed != wanted

    def read(self) -> TeleopCommand:
        if self._plan_fn is None:
            raise RuntimeError("ScriptedCorrector.read before on_reset(env): it needs the env's scene")
        cfg = self.config
        plan = np.asarray(self._plan_fn(), np.float64)
        self._drifted_run = self._drifted_run + 1 if self._drifted(plan) else 0
        if self._remaining == 0:
            if self._cooldown > 0:
                self._cooldown -= 1
            else:
                p = cfg.p_takeover_on_drift if self._drifted_run >= cfg.patience_steps else cfg.p_takeover_random
                if p > 0 and self._rng.random() < p:
                    self._remaining = cfg.takeover_steps
                    self.takeovers += 1
        if self._remaining == 0:
            self._gripper_state = latch(float(self._proposal[6])) or self._gripper_state
            return TeleopCommand()
        self._remaining -= 1
        if self._remaining == 0:  # hand back: the policy gets the full patience again from where the expert left
            self._cooldown = cfg.cooldown_steps
            self._drifted_run = 0
            self._best = -math.inf
        action = plan.copy()
        if cfg.expert_noise_std > 0:
            action[:6] += self._rng.normal(0.0, cfg.expert_noise_std, 6)
        self._gripper_state = latch(float(action[6])) or self._gripper_state
        return TeleopCommand(active=True, action=np.clip(action, -1.0, 1.0).astype(np.float32))

    def status(self) -> str:
        state = f"in control ({self._remaining} left)" if self.in_control else "watching"
        return f"scripted corrector: {state}, drift {self.last_drift:.2f}, {self.takeovers} takeovers"
