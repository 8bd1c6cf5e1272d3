"""``Actor``: the control loop of one actor process (env -> policy -> ``ActorClient``), and ``PolicyHolder``,
the double-buffered policy that weight updates swap into without stalling the loop.

A ROS 2 actor node uses the same two pieces: ``ActorClient.add`` in its step callback and
``PolicyHolder.maybe_swap`` / ``.active`` to act.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robot_rl.agents.config import SACConfig
from robot_rl.agents.policy import ActingPolicy
from robot_rl.data.transition import step_env
from robot_rl.distributed.client import ActorClient, LinkRefused
from robot_rl.distributed.codec import load_weights
from robot_rl.distributed.config import ActorConfig
from robot_rl.distributed.spec import run_spec
from robot_rl.training.base_policy import load_base_policy
from robot_rl.training.env_factory import make_env_from_config
from robot_rl.training.evaluate import TRAIN_SEED_BASE
from robot_rl.training.guide import JumpStart, guide_horizon
from robot_rl.training.hil import wrap_training_env
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import from_jsonable

log = logging.getLogger("robot_rl.distributed")


class PolicyHolder:
    """Two policy copies: the weights thread loads new weights into the spare one; the control loop's
    ``maybe_swap`` exchanges them in O(1) and never waits for a load in progress."""

    def __init__(self, make_policy: Callable[[], ActingPolicy]) -> None:
        self.active = make_policy()
        self._spare = make_policy()
        # One exploration stream across swaps: two equally seeded generators would replay each other's noise.
        self._spare.act_generator = self.active.act_generator
        self.version = 0
        self.guide_h: int | None = None
        """The jump-start guide's h that came with the active weights (None: the run has no guide)."""
        self._ready: tuple[int, float] | None = None
        self._ready_guide_h: int | None = None
        self._lock = threading.Lock()
        self.loaded = threading.Event()
        self.swaps: list[tuple[int, float, float]] = []
        """(version, learner publish time, swap time) of every swap (wall clock, for latency figures)."""
        self.loads: list[tuple[int, float, float]] = []
        """(version, learner publish time, time the spare finished loading it)."""

    def load(self, message: Any) -> None:
        """Weights thread: ``pb.Weights`` -> the spare policy."""
        with self._lock:
            self._ready_guide_h = load_weights(self._spare, message.state)
            self._ready = (int(message.version), float(message.publish_time))
            self.loads.append((*self._ready, time.time()))
        self.loaded.set()

    def maybe_swap(self) -> bool:
        """Control thread: use the newest loaded weights if any (skips, never blocks, while a load runs)."""
        if self._ready is None or not self._lock.acquire(blocking=False):
            return False
        try:
            assert self._ready is not None
            self.active, self._spare = self._spare, self.active
            (self.version, published), self._ready = self._ready, None
            self.guide_h = self._ready_guide_h
        finally:
            self._lock.release()
        self.swaps.append((self.version, published, time.time()))
        return True


def actor_jump_start(config: ActorConfig, env: gym.Env) -> JumpStart | None:
    """``--guide.policy``: this actor's guide in its own env, on its own draws of h (random schedule) or the
    learner's h (curriculum, sent with the weights)."""
    g = config.guide
    if g.policy is None:
        return None
    guide = load_base_policy(g.policy, env, g.noise, g.policy_sha256, seed=config.seed)
    return JumpStart(guide, g, guide_horizon(g, env, config.env.name), config.seed)


class Actor:
    """Runs ``config``'s env with the learner's policy until ``max_steps`` or the learner says stop."""

    def __init__(self, config: ActorConfig, token: str | None = None, env: gym.Env | None = None) -> None:
        self.config = cfg = config
        torch.set_num_threads(cfg.torch_threads)
        self.env = env or make_env_from_config(cfg.env, training=True)  # with a classifier, only it ends episodes
        self.spec = run_spec(self.env, cfg.env, cfg.intervention_mode)
        self.env = wrap_training_env(self.env, cfg)  # after env_spec: the spec names the task, not the wrappers
        self.jump_start = actor_jump_start(cfg, self.env)
        self.client = ActorClient(
            cfg.link,
            cfg.actor_id,
            self.spec,
            token or cfg.link.token(),
            buffer_mb=cfg.buffer_mb,
            send_batch=cfg.send_batch,
            compression=cfg.compression,
            backoff_max_s=cfg.backoff_max_s,
        )
        self.policy: PolicyHolder | None = None
        self.steps = self.episodes = 0
        self.versions_used: set[int] = set()
        self.step_seconds: list[float] = []
        """Per step: seconds spent in link calls (``client.add`` + ``maybe_swap``), for latency figures."""

    def connect(self) -> None:
        cfg = self.config
        reply = self.client.connect(cfg.connect_timeout_s)
        agent_config = from_jsonable(SACConfig, json.loads(reply.agent_config_json), "learner agent config")
        space, action_space = self.env.observation_space, self.env.action_space
        self.policy = PolicyHolder(lambda: ActingPolicy(agent_config, space, action_space, cfg.device, cfg.seed))
        self.client.on_weights = self.policy.load
        self.client.start()
        if cfg.wait_for_weights_s > 0 and not self.policy.loaded.wait(cfg.wait_for_weights_s):
            log.warning(
                "actor %s: no weights after %.0f s; acting with the initial policy (version 0)",
                cfg.actor_id,
                cfg.wait_for_weights_s,
            )
        self.policy.maybe_swap()

    def run(self, should_stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
        """Connect, act until done (or ``should_stop``: SIGINT/SIGTERM), close the episode, wait for the
        acknowledgements (what the learner is owed is flushed on every way out); return a summary."""
        cfg = self.config
        if self.policy is None:
            self.connect()
        assert self.policy is not None
        env, client, policy = self.env, self.client, self.policy
        period = 1.0 / cfg.control_hz if cfg.control_hz > 0 else 0.0
        next_tick, last_status = time.perf_counter(), 0.0
        jump, t_episode = self.jump_start, 0
        try:
            obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
            self._start_episode(policy)
            while not (cfg.max_steps and self.steps >= cfg.max_steps) and not should_stop():
                if client.error is not None:
                    raise client.error
                if client.stop_requested:
                    log.info("actor %s: the learner asked to stop", cfg.actor_id)
                    break
                if cfg.follow_learner_pace and client.hold:
                    time.sleep(0.005)
                    continue
                t0 = time.perf_counter()
                policy.maybe_swap()
                link_s = time.perf_counter() - t0
                if jump is not None and jump.acts(t_episode):
                    action = jump.guide(obs)
                elif self.steps < cfg.random_steps:
                    action = env.action_space.sample()
                else:
                    action = policy.active.act(obs, deterministic=cfg.deterministic)
                step = step_env(env, obs, action)
                t = step.transition
                success = bool(step.info.get("is_success", False))  # the learner's episode success
                t1 = time.perf_counter()
                client.add(dataclasses.replace(t, extras={**t.extras, "is_success": success}), policy.version)
                self.step_seconds.append(link_s + time.perf_counter() - t1)
                self.versions_used.add(policy.version)
                self.steps += 1
                t_episode += 1
                obs = t.next_obs
                if step.done:
                    self.episodes += 1
                    obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
                    self._start_episode(policy)
                    t_episode = 0
                if cfg.status_file is not None and time.monotonic() - last_status > 0.5:
                    last_status = time.monotonic()
                    atomic_write(cfg.status_file, json.dumps(self.summary()))
                if period:
                    next_tick += period
                    time.sleep(max(0.0, next_tick - time.perf_counter()))
        finally:
            client.end_episode()
            drained = client.error is None and client.drain(cfg.drain_timeout_s)
            if not drained and client.error is None:
                log.warning(
                    "actor %s: %d records still unacknowledged after %.0f s",
                    cfg.actor_id,
                    client.pending(),
                    cfg.drain_timeout_s,
                )
            summary = self.summary()
            if cfg.status_file is not None:
                atomic_write(cfg.status_file, json.dumps(summary))
            client.close()
            self.env.close()
        if isinstance(client.error, LinkRefused):
            raise client.error
        return summary

    def _start_episode(self, policy: PolicyHolder) -> None:
        """A new episode: on the curriculum the guide's h is the learner's, sent with the weights in use. Newer
        weights are taken first, so that the episode's h is the one that came with its first step's weights
        (what the learner reads it from)."""
        if self.jump_start is None:
            return
        policy.maybe_swap()
        if self.jump_start.config.schedule == "curriculum" and policy.guide_h is not None:
            self.jump_start.h = policy.guide_h
        self.jump_start.start_episode()

    def summary(self) -> dict[str, Any]:
        link = np.asarray(self.step_seconds[-10_000:]) * 1e3
        return {
            "actor_id": self.config.actor_id,
            "steps": self.steps,
            "episodes": self.episodes,
            "policy_version": self.policy.version if self.policy else 0,
            **({"guide_h": self.jump_start.episode_h} if self.jump_start is not None else {}),
            "versions_used": sorted(self.versions_used),
            **self.client.status(),
            "link_ms_p50": float(np.percentile(link, 50)) if len(link) else 0.0,
            "link_ms_p99": float(np.percentile(link, 99)) if len(link) else 0.0,
        }
