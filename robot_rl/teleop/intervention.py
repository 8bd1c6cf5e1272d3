"""``InterventionWrapper``: a teleop device overrides the policy while the human is active.

Per step: the device sees the policy's proposed action (``propose``), is read once, and while its command is
active the human's action is executed instead. Info keys added on every step:

  intervention         bool       the executed action is the human's
  intervention_action  float32[7] the executed action (only while intervening, contract convention)
  takeover             bool       first step of an intervention segment (the human just took over)
  policy_action        float32[7] what the policy proposed
  operator             str        "success" / "failure" / "reset" when the operator pressed that button
  intervention_stats   dict       at the episode's last step: steps, intervention_steps, takeovers, rate

Modes: ``hil`` (HIL-SERL) keeps the task reward. ``rlif`` (RLIF) replaces it by 0 (the task reward moves
to ``info["task_reward"]``) and turns a terminal success into a truncation, so nothing about the task
reaches the learner; the -1 for the last policy step before each takeover is applied one step later by
``robot_rl.data.routing.RLIFLabeler`` (a returned reward cannot be changed). A takeover never ends the
episode. Operator buttons: success ends the episode as a success (terminated; reward 1 in ``hil``),
failure and reset end it as truncated; pause blocks ``step`` until pause is pressed again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Literal, get_args

import gymnasium as gym
import numpy as np

from robot_rl.envs.contract import ACTION_DIM, check_action
from robot_rl.teleop.base import TeleopCommand, Teleoperator

InterventionMode = Literal["hil", "rlif"]
INTERVENTION_MODES: tuple[str, ...] = get_args(InterventionMode)


@dataclass(frozen=True)
class InterventionConfig:
    mode: InterventionMode = "hil"
    """``hil``: keep the task reward (HIL-SERL). ``rlif``: reward only from takeovers (RLIF)."""
    buttons_end_episode: bool = True
    """Operator success / failure / reset buttons end the episode."""
    pause_poll_s: float = 0.05
    """Device polling period while paused (s)."""
    pace_hz: float = 0.0
    """Hold ``step`` to this rate (Hz) so a human can follow a simulation (0: as fast as the env runs; a
    real robot's env paces itself)."""

    def __post_init__(self) -> None:
        if self.mode not in INTERVENTION_MODES:
            raise ValueError(f"InterventionConfig.mode must be one of {INTERVENTION_MODES}, got {self.mode!r}")
        if not self.pause_poll_s > 0:
            raise ValueError(f"InterventionConfig.pause_poll_s must be > 0 s, got {self.pause_poll_s}")
        if not self.pace_hz >= 0:
            raise ValueError(f"InterventionConfig.pace_hz must be >= 0 Hz, got {self.pace_hz}")


@dataclass
class InterventionStats:
    """Per-episode counts: ``rate`` is the fraction of steps the human acted."""

    steps: int = 0
    intervention_steps: int = 0
    takeovers: int = 0

    @property
    def rate(self) -> float:
        return self.intervention_steps / self.steps if self.steps else 0.0

    def as_dict(self) -> dict[str, float]:
        return {**{k: float(v) for k, v in asdict(self).items()}, "intervention_rate": self.rate}


class InterventionWrapper(gym.Wrapper):
    """See the module docstring. ``sleep`` is injectable for tests of pause."""

    def __init__(
        self,
        env: gym.Env,
        device: Teleoperator,
        config: InterventionConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(env)
        if env.action_space.shape != (ACTION_DIM,):
            raise ValueError(
                f"teleop ({device.name}) produces the {ACTION_DIM}-D contract action (dx dy dz drx dry drz "
                f"gripper); {type(env.unwrapped).__name__} takes {env.action_space}: wrap it in an action map to "
                "the contract first")
        self.device = device
        self.config = config or InterventionConfig()
        self._sleep = sleep
        self._clock = clock
        self._next_step_s = -float("inf")
        self.stats = InterventionStats()
        self._was_active = False
        self.paused = False
        self.last_command = TeleopCommand()
        """The device command executed at the last step (labelling tools read its buttons)."""

    def reset(self, **kwargs: Any):
        obs, info = self.env.reset(**kwargs)
        self.device.on_reset(self.env)
        self.stats = InterventionStats()
        self._was_active = False
        return obs, {**info, "intervention": False, "takeover": False}

    def _wait_while_paused(self) -> TeleopCommand:
        """Block until pause is pressed again; returns the first command after resuming."""
        self.paused = True
        while True:
            self._sleep(self.config.pause_poll_s)
            command = self.device.read()
            if command.buttons.pause:
                self.paused = False
                return self.device.read()

    def step(self, action: np.ndarray):
        policy_action = check_action(action, "InterventionWrapper.step(action)")
        if self.config.pace_hz > 0:
            now = self._clock()
            self._next_step_s = max(self._next_step_s + 1.0 / self.config.pace_hz, now)
            if self._next_step_s > now:
                self._sleep(self._next_step_s - now)
        self.device.propose(policy_action)
        command = self.device.read()
        if command.buttons.pause:
            command = self._wait_while_paused()
        self.last_command = command
        executed = command.action if command.active else policy_action
        obs, reward, terminated, truncated, info = self.env.step(executed)
        info = dict(info)
        # A backend may report its own interventions (the ROS bridge's mux); the device's come first.
        active = command.active or bool(info.get("intervention", False))
        if command.active:
            info["intervention_action"] = executed.copy()
        takeover = active and not self._was_active
        self._was_active = active
        info.update(intervention=active, takeover=takeover, policy_action=policy_action)
        self.stats.steps += 1
        self.stats.intervention_steps += int(active)
        self.stats.takeovers += int(takeover)

        rlif = self.config.mode == "rlif"
        if rlif:
            info["task_reward"] = float(reward)
            reward = 0.0
            truncated, terminated = bool(truncated or terminated), False
        buttons = command.buttons
        if self.config.buttons_end_episode and (buttons.success or buttons.failure or buttons.reset):
            info["operator"] = "success" if buttons.success else "failure" if buttons.failure else "reset"
            if buttons.success:
                info["is_success"] = True
                if not rlif:
                    reward, terminated = max(float(reward), 1.0), True
            if not terminated:
                truncated = True
        if terminated or truncated:
            info["intervention_stats"] = self.stats.as_dict()
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        if self.device.is_connected:
            self.device.disconnect()
        super().close()
