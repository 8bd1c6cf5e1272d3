"""``RosArmEnv``: the environment contract over ROS 2 (real arms and the sim robot node alike).

One step at ``control_hz``: publish the action on ``rl/action`` (stamped with the observation it answers),
sleep to the next control tick (fixed schedule; a late step counts as a missed cycle and re-phases), then
return the first ``rl/robot_state`` received after the tick (so observations are ~one DDS hop old), the
latest images, reward and success. The robot bridge echoes each action on ``rl/executed_action`` with
what it really executed: a human's action during an intervention (``info["intervention_action"]``),
safety clipping, or a refusal. Reset calls the bridge's ``~/reset`` service.

Spaces come from the same hardware config the bridge loads (control rate, action scale), so the two agree.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import Image, JointState
from std_srvs.srv import Trigger

from robot_rl.envs import names
from robot_rl.envs.contract import ACTION_DIM, check_action, image_key
from robot_rl.ros.hardware import load_arm_config, load_camera_config
from robot_rl.ros.messages import from_stamp, image_from_msg, named_vector
from robot_rl.ros.params import RosEnvConfig
from robot_rl.ros.qos import CMD, EVENTS, SENSOR
from robot_rl.ros.spec_env import contract_for
from robot_rl.utils.shutdown import StopRequested

STATS_WINDOW = 10_000
STOP_POLL_S = 0.1
"""Long waits check for a stop request this often (s)."""


class RobotUnavailable(RuntimeError):
    """The robot bridge cannot run an episode now (not running, refusing a reset, no fresh state); the
    message says which and what to do."""

INCIDENTS_WINDOW = 100


@dataclass
class StepStats:
    """Timing of the control loop (latencies in s, from the bridge's echo: command stamp - obs stamp)."""

    steps: int = 0
    missed_cycles: int = 0
    missing_echoes: int = 0
    stale_steps: int = 0
    """Steps whose observation did not refresh within ``step_timeout_s`` (the episode is truncated there)."""
    late_observations: int = 0
    """Steps that went on with a state from before their tick (see ``RosEnvConfig.fresh_state_wait``)."""
    latencies_s: deque[float] = field(default_factory=lambda: deque(maxlen=STATS_WINDOW))
    """The last ``STATS_WINDOW`` steps only: an actor runs for hours."""
    incidents: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=INCIDENTS_WINDOW))
    """The last missed cycles and stale steps: ``kind``, ``step`` (of the run), ``episode_step``, ``ms``
    (past the tick, or waited for a fresh state) and ``time`` (wall clock, s), to tell start-up, episode
    starts and stalls apart and to line them up with other processes' logs. A missed cycle also says where
    its period went (``cycle``, ms): the sleep to the tick returned ``woke_late``, then the step waited
    ``state_wait`` for a robot state and ``echo_wait`` for the bridge's echo; ``caller`` is the time between
    ``step`` returning and the next call (the policy, the learner link, storing the step)."""

    def incident(self, kind: str, episode_step: int, ms: float, cycle: dict[str, float] | None = None) -> None:
        record = {"kind": kind, "step": self.steps, "episode_step": episode_step, "ms": round(ms, 3),
                  "time": round(time.time(), 4)}
        if cycle:
            record["cycle"] = {k: round(v, 3) for k, v in cycle.items()}
        self.incidents.append(record)



class _Latest:
    """Latest message of a topic with its arrival time, and a condition to wait for a newer one."""

    def __init__(self, cond: threading.Condition) -> None:
        self.cond, self.msg, self.time_s = cond, None, -np.inf

    def put(self, msg: Any) -> None:
        with self.cond:
            self.msg, self.time_s = msg, time.monotonic()
            self.cond.notify_all()


class RosArmEnv(gym.Env):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, config: RosEnvConfig, node: Node, should_stop: Callable[[], bool] = lambda: False) -> None:
        """``should_stop``: polled while a wait lasts (reset, a stalled state stream); when it turns true the
        wait raises ``StopRequested`` (the node is shutting down: the step or reset is abandoned)."""
        self.config, self.node, self.should_stop = config, node, should_stop
        self.arm = arm = load_arm_config(config.hardware_config)
        cams = [load_camera_config(c) for c in config.cameras]
        self.contract = contract_for(config.hardware_config, config.cameras, config.privileged_task)
        self.observation_space = self.contract.observation_space()
        self.action_space = self.contract.action_space()
        self.period_s = 1.0 / arm.control_hz
        self.stats = StepStats()
        self._cond = threading.Condition()
        self._state, self._reward, self._priv = (_Latest(self._cond) for _ in range(3))
        self._images = {c.name: _Latest(self._cond) for c in cams}
        self._echoes: dict[tuple[int, int], JointState] = {}
        group = MutuallyExclusiveCallbackGroup()
        sub = node.create_subscription
        sub(JointState, names.ROBOT_STATE, self._state.put, SENSOR, callback_group=group)
        sub(JointState, names.EXECUTED_ACTION, self._on_echo, EVENTS, callback_group=group)
        if config.reward:
            sub(JointState, names.REWARD, self._reward.put, SENSOR, callback_group=group)
        if config.privileged_task:
            sub(JointState, names.PRIVILEGED, self._priv.put, SENSOR, callback_group=group)
        for name, latest in self._images.items():
            sub(Image, names.image_topic(name), latest.put, SENSOR, callback_group=group)
        self.action_pub = node.create_publisher(JointState, names.ACTION, CMD)
        self.reset_client = node.create_client(Trigger, f"{config.bridge}/reset",
                                               callback_group=MutuallyExclusiveCallbackGroup())
        self._obs_stamp = None
        self._obs_state_time = -np.inf  # arrival of the state the last observation was made of
        self._next_tick = time.monotonic()
        self._steps = 0
        self._cycle: dict[str, float] = {}  # where this period went so far (StepStats.incidents' ``cycle``)
        self._returned_at = time.monotonic()

    # --- gymnasium API -----------------------------------------------------------------------------------
    @property
    def max_episode_steps(self) -> int:
        """Steps after which an episode is truncated (what a jump-start guide's horizon defaults to)."""
        return self.config.max_episode_steps

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if self._state.msg is None:  # first reset: the bridge must be hearing from the driver
            self._wait_fresh(-np.inf, self.config.reset_timeout_s)
        srv, timeout = self.reset_client.srv_name, self.config.reset_timeout_s
        if not self._poll(lambda t: self.reset_client.wait_for_service(timeout_sec=t), timeout):
            raise RobotUnavailable(f"{srv} is not available after {timeout:.0f} s (is the robot bridge running?)")
        replied = threading.Event()
        future = self.reset_client.call_async(Trigger.Request())
        future.add_done_callback(lambda _: replied.set())
        result = future.result() if self._poll(replied.wait, timeout) else None
        if result is None:
            raise RobotUnavailable(f"no reply from {srv} within {timeout:.0f} s (is the robot bridge alive? "
                                   "see its log and rl/status)")
        if not result.success:
            raise RobotUnavailable(f"robot bridge reset failed: {result.message}")
        since = time.monotonic()
        self._wait_fresh(since, self.config.reset_timeout_s, everything=True)
        self._steps = 0
        self._next_tick = time.monotonic()
        self._cycle.clear()
        obs, success = self._observation()
        self._returned_at = time.monotonic()
        return obs, {"intervention": False, "safety_clipped": False, "is_success": success}

    def step(self, action: np.ndarray):
        self._cycle["caller"] = (time.monotonic() - self._returned_at) * 1e3
        raw = check_action(action, source="RosArmEnv.step(action)")
        a = np.clip(raw, -1.0, 1.0)
        clipped = bool(np.any(a != raw))
        stamp, episode_step = self._obs_stamp, self._steps
        self.action_pub.publish(named_vector(names.ACTION_NAMES, a, stamp))
        self._wait_next_tick()
        t0 = time.monotonic()
        fresh = self._wait_state(self._next_tick)
        t1 = time.monotonic()
        echo = self._take_echo(stamp)
        self._cycle.update(woke_late=(t0 - self._next_tick) * 1e3, state_wait=(t1 - t0) * 1e3,
                           echo_wait=(time.monotonic() - t1) * 1e3)
        obs, success = self._observation()
        self._steps += 1
        info: dict[str, Any] = {"intervention": False, "safety_clipped": clipped, "is_success": success}
        if echo is not None:
            e = dict(zip(names.EXECUTED_NAMES, echo))
            info["safety_clipped"] = clipped or e["safety_clipped"] >= 0.5 or e["refused"] >= 0.5
            info["refused"] = e["refused"] >= 0.5
            if e["intervention"] >= 0.5:
                info["intervention"] = True
                info["intervention_action"] = np.asarray(echo[:ACTION_DIM], np.float32)
            if e["command_stamp"] != names.NO_COMMAND:
                self.stats.latencies_s.append(e["command_stamp"] - from_stamp(stamp))
        reward = self._reward_value()
        terminated = bool(success and self.config.terminate_on_success)
        truncated = bool(not terminated and self._steps >= self.config.max_episode_steps)
        if not fresh:  # the bridge is holding the arm meanwhile; end the episode, the next reset re-checks
            info["stale_observation"] = True
            truncated = not terminated
            if self.node.context.ok():  # not the step that a shutdown (SIGTERM) interrupted
                self.stats.stale_steps += 1
                self.stats.incident("stale", episode_step, self.config.step_timeout_s * 1e3)
        self.stats.steps += 1
        self._returned_at = time.monotonic()
        return obs, reward, terminated, truncated, info

    @property
    def observation_stamp_ns(self) -> int | None:
        """The bridge's stamp of the observation last returned (ns), as recordings carry it."""
        stamp = self._obs_stamp
        return None if stamp is None else stamp.sec * 10**9 + stamp.nanosec

    # --- internals ---------------------------------------------------------------------------------------
    def _on_echo(self, msg: JointState) -> None:
        values = names.pick(msg.name, msg.position, names.EXECUTED_NAMES)
        if values is None:
            return
        with self._cond:
            self._echoes[(msg.header.stamp.sec, msg.header.stamp.nanosec)] = values
            while len(self._echoes) > 64:
                self._echoes.pop(next(iter(self._echoes)))
            self._cond.notify_all()

    def _poll(self, wait: Callable[[float], bool], timeout_s: float) -> bool:
        """``wait(t)`` in slices of ``STOP_POLL_S`` up to ``timeout_s``, checking ``should_stop`` in between."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = deadline - time.monotonic()
            if wait(max(0.0, min(left, STOP_POLL_S))):
                return True
            if left <= STOP_POLL_S:
                return False
            if self.should_stop():
                raise StopRequested("RosArmEnv: stop requested while waiting")

    def _cond_wait(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        with self._cond:
            return self._poll(lambda t: self._cond.wait_for(predicate, timeout=t), timeout_s)

    def _take_echo(self, stamp) -> np.ndarray | None:
        key = (stamp.sec, stamp.nanosec)
        if self._cond_wait(lambda: key in self._echoes, self.config.step_timeout_s):
            with self._cond:
                return self._echoes.pop(key)
        self.stats.missing_echoes += 1
        return None

    def _wait_next_tick(self) -> None:
        self._next_tick += self.period_s
        now = time.monotonic()
        if now > self._next_tick:  # the policy or a stall overran the period: count it and re-phase
            self.stats.missed_cycles += 1
            self.stats.incident("missed", self._steps, (now - self._next_tick) * 1e3, self._cycle)
            self._next_tick = now
        else:
            time.sleep(self._next_tick - now)
        self._cycle.clear()  # reused, not reallocated: the loop allocates no container per cycle

    def _wait_state(self, tick: float) -> bool:
        """A state newer than ``tick``, or, once ``fresh_state_wait`` of a period has passed, the latest state if
        it is newer than the last observation's (counted as a late observation)."""
        if self._wait_fresh(tick, self.config.fresh_state_wait * self.period_s, raise_=False):
            return True
        if self._state.time_s > self._obs_state_time:
            self.stats.late_observations += 1
            return True
        return self._wait_fresh(tick, self.config.step_timeout_s, raise_=False)

    def _wait_fresh(self, since: float, timeout_s: float, everything: bool = False, raise_: bool = True) -> bool:
        """Wait for robot state (``everything``: images, reward, privileged too) newer than ``since``."""
        wanted = [self._state]
        if everything:
            wanted += list(self._images.values())
            wanted += [self._reward] if self.config.reward else []
            wanted += [self._priv] if self.config.privileged_task else []
        ok = self._cond_wait(lambda: all(x.time_s > since for x in wanted), timeout_s)
        if not ok and raise_:
            missing = [k for k, x in self._topics().items() if x in wanted and x.time_s <= since]
            raise RobotUnavailable(f"RosArmEnv: no fresh {missing} within {timeout_s:.2f} s (the robot bridge "
                                   "publishes rl/robot_state only while every required input is healthy: see "
                                   "rl/status)")
        return ok

    def _topics(self) -> dict[str, _Latest]:
        out = {names.ROBOT_STATE: self._state, names.REWARD: self._reward, names.PRIVILEGED: self._priv}
        out.update({names.image_topic(k): v for k, v in self._images.items()})
        return out

    def _observation(self) -> tuple[dict[str, np.ndarray], bool]:
        with self._cond:
            state_msg, self._obs_state_time = self._state.msg, self._state.time_s
            self._obs_stamp = state_msg.header.stamp
            state = names.pick(state_msg.name, state_msg.position, names.STATE_NAMES)
            obs: dict[str, np.ndarray] = {"state": np.asarray(state, np.float32)}
            if self.config.privileged_task:
                priv = self._priv.msg
                obs["privileged"] = np.asarray(priv.position, np.float32)
            for name, latest in self._images.items():
                obs[image_key(name)] = np.array(image_from_msg(latest.msg))
            success = self._reward.msg is not None and self._reward.msg.position[1] >= 0.5
        return obs, bool(success)

    def _reward_value(self) -> float:
        msg = self._reward.msg
        return float(msg.position[0]) if msg is not None else 0.0
