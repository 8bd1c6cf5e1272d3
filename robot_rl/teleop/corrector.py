"""A scripted stand-in for the human in simulation: the task's scripted expert watches the policy and takes
over when the policy drifts from what it would do, acts for ``takeover_steps`` steps, then hands back.

Each step (one ``propose`` + one ``read``) the expert plans on the live scene, noise-free, so its phase
machine tracks the episode whoever acts. Drift is the RMS difference of the 6 arm dims between the policy's
proposed action and the plan, or a gripper disagreement (the latch the policy would leave set differs from
the plan's). A drifted step triggers a takeover with probability ``p_takeover_on_drift`` (RLIF's simulated
expert: 0.95), any other step with ``p_takeover_random``. While in control the corrector executes the plan
plus ``expert_noise_std`` Gaussian noise: a degraded expert, as in RLIF's experiments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from robot_rl.envs.contract import ACTION_DIM, GRIPPER_CLOSE_THRESHOLD, GRIPPER_OPEN_THRESHOLD
from robot_rl.teleop.base import TeleopCommand, Teleoperator


@dataclass(frozen=True)
class CorrectorConfig:
    threshold: float = 0.3
    """Drift (RMS over dx..drz of policy minus expert action, contract units) above which a step is drifted."""
    gripper_mismatch: bool = True
    """A gripper latch disagreeing with the expert's counts as drift."""
    takeover_steps: int = 5
    """k: steps the corrector keeps control once it takes over (RLIF sim: 4)."""
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
        if self.takeover_steps < 1:
            raise ValueError(f"CorrectorConfig.takeover_steps must be >= 1, got {self.takeover_steps}")
        for name in ("p_takeover_on_drift", "p_takeover_random"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"CorrectorConfig.{name} must be in [0, 1], got {getattr(self, name)}")
        if self.cooldown_steps < 0:
            raise ValueError(f"CorrectorConfig.cooldown_steps must be >= 0, got {self.cooldown_steps}")
        if self.expert_noise_std < 0:
            raise ValueError(f"CorrectorConfig.expert_noise_std must be >= 0, got {self.expert_noise_std}")


def latch(value: float) -> int:
    """Contract gripper latch of one action value: -1 close, +1 open, 0 keep."""
    return -1 if value <= GRIPPER_CLOSE_THRESHOLD else 1 if value >= GRIPPER_OPEN_THRESHOLD else 0


def action_drift(policy: np.ndarray, expert: np.ndarray) -> float:
    """RMS difference over the 6 arm dims (contract units)."""
    diff = np.asarray(policy[:6], np.float64) - np.asarray(expert[:6], np.float64)
    return float(np.sqrt(np.mean(diff * diff)))


class ScriptedCorrector(Teleoperator):
    """``Teleoperator`` backed by the task's scripted expert (needs ``robot_rl.sim``; see module docstring).

    ``plan_fn`` replaces the expert (tests): ``plan_fn() -> action [7]`` evaluated once per ``read``.
    """

    name = "scripted"
    realtime = False

    def __init__(self, config: CorrectorConfig | None = None, plan_fn: Any = None) -> None:
        super().__init__()
        self.config = config or CorrectorConfig()
        self._rng = np.random.default_rng(self.config.seed)
        self._plan_fn = plan_fn
        self._scripted = plan_fn is None
        self._proposal = np.zeros(ACTION_DIM, np.float32)
        self._remaining = 0
        self._cooldown = 0
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
            expert = make_expert(sim_env)
            expert.reset()
            self._plan_fn = lambda: expert.plan(sim_env.scene)
        self._remaining = self._cooldown = 0
        self._gripper_state = 1
        self.episodes += 1

    def propose(self, policy_action: np.ndarray) -> None:
        self._proposal = np.asarray(policy_action, np.float32)

    def _drifted(self, plan: np.ndarray) -> bool:
        self.last_drift = action_drift(self._proposal, plan)
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
        drifted = self._drifted(plan)
        if self._remaining == 0:
            if self._cooldown > 0:
                self._cooldown -= 1
            else:
                p = cfg.p_takeover_on_drift if drifted else cfg.p_takeover_random
                if p > 0 and self._rng.random() < p:
                    self._remaining = cfg.takeover_steps
                    self.takeovers += 1
        if self._remaining == 0:
            self._gripper_state = latch(float(self._proposal[6])) or self._gripper_state
            return TeleopCommand()
        self._remaining -= 1
        if self._remaining == 0:
            self._cooldown = cfg.cooldown_steps
        action = plan.copy()
        if cfg.expert_noise_std > 0:
            action[:6] += self._rng.normal(0.0, cfg.expert_noise_std, 6)
        self._gripper_state = latch(float(action[6])) or self._gripper_state
        return TeleopCommand(active=True, action=np.clip(action, -1.0, 1.0).astype(np.float32))

    def status(self) -> str:
        state = f"in control ({self._remaining} left)" if self.in_control else "watching"
        return f"scripted corrector: {state}, drift {self.last_drift:.2f}, {self.takeovers} takeovers"
