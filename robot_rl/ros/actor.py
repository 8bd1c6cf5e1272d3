"""The policy actor loop over any contract env, with a pluggable policy source and learner link.

No ROS import here: the node builds a ``RosArmEnv`` and calls ``run_actor``. Two small registries decide
where the policy comes from and where transitions go:

``POLICIES``  checkpoint (``load_policy`` on a run folder / checkpoint file; a residual run's base policy runs
              here, next to the arm), network (an untrained SAC
              actor of the env's spaces: benchmarks), random, zero.
``LEARNERS``  none (act only): an entry returns a ``LearnerLink`` that receives every transition (``add``)
              and refreshes the policy (``sync``), called between steps, never inside a ROS callback.
``learner=remote`` hands the loop to the distributed actor (``robot_rl.distributed.actor.Actor``, gRPC
extra) with this env: weights come from the learner, transitions go to it (``run_remote``).
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import gymnasium as gym
import numpy as np

from robot_rl.data.transition import EnvStep, step_env
from robot_rl.envs.action_history import ActionHistory, check_action_history
from robot_rl.envs.contract import ACTION_HISTORY
from robot_rl.teleop.intervention import INTERVENTION_MODES, InterventionMode

if TYPE_CHECKING:
    from robot_rl.distributed.config import ActorConfig as LinkActorConfig
    from robot_rl.formats.rosbag import EpisodeBagWriter


@dataclass(frozen=True)
class PolicyActorConfig:
    policy: Literal["checkpoint", "network", "random", "zero"] = "zero"
    """zero (the default) holds the arm still: a dry run; checkpoint acts with a trained run; network: an
    untrained SAC actor (benchmarks); random."""
    checkpoint: str = ""
    """Run folder or checkpoint file (policy=checkpoint)."""
    deterministic: bool = True
    """Mean action (evaluation); False samples (exploration, when a learner is attached)."""
    episodes: int = 0
    """Episodes to run; 0: until shutdown."""
    learner: Literal["none", "remote"] = "none"
    """none: act with ``policy``; remote: the distributed link (policy weights from the learner)."""
    learner_address: str = "127.0.0.1:50051"
    """host:port of the learner (learner=remote); the shared token is read from $ROBOT_RL_TOKEN."""
    actor_id: str = "ros-actor-0"
    stats_path: str = ""
    """Write loop timing and episode results as JSON here when the actor stops."""
    torch_threads: int = 1
    seed: int = 0
    record: str = ""
    """Record every episode into this new rosbag2 folder (MCAP): the observations as the bridges produced them
    (with their stamps), the executed actions with intervention and safety flags, rewards and episode
    boundaries; ``robot-rl import-demos`` turns it into demos (learner=none)."""
    record_task: str = "robot"
    """The task name the recording's episodes carry (what ``robot-rl train --demos`` checks)."""
    base_policy: str = ""
    """learner=remote with a residual learner (``--train.base-policy``): the same base policy on this PC (a
    TorchScript file, a ``train-bc`` run folder or ``module:attr``); it proposes each action here, next to the
    arm, and the handshake checks it is the learner's (SHA-256 of the file). learner=none takes the base from
    the checkpoint's run."""
    action_history: int = 0
    """learner=remote: the learner's ``--train.action-history`` (the last N actions the arm was sent, observed:
    for an arm whose commands act late); the handshake refuses a mismatch. learner=none takes it from the
    checkpoint's run."""
    guide_policy: str = ""
    """learner=remote with jump-start RL (the learner's ``--train.guide.policy``): the guide, loaded on this PC,
    takes the first h steps of each episode before the learner's policy (a ``train-bc`` run folder, a TorchScript
    file or ``module:attr``)."""
    guide_schedule: Literal["curriculum", "random"] = "curriculum"
    """How h moves, as the learner's ``--train.guide.schedule`` says: ``curriculum`` takes it from the learner
    with the weights (a learner that cannot evaluate a real arm moves it on the training episodes);
    ``random`` draws it per episode here."""
    intervention_mode: InterventionMode = "hil"
    """learner=remote: ``hil`` (interventions also fill the learner's demo buffer) or ``rlif`` (the only
    reward is -1 on the policy step before each takeover); must match the learner's
    ``--train.intervention-mode``, or the handshake refuses."""

    def __post_init__(self) -> None:
        if self.policy == "checkpoint" and not self.checkpoint and self.learner == "none":
            raise ValueError("PolicyActorConfig.checkpoint must name a run folder or a checkpoint file")
        if self.intervention_mode not in INTERVENTION_MODES:
            raise ValueError(f"PolicyActorConfig.intervention_mode must be one of {INTERVENTION_MODES}, "
                             f"got {self.intervention_mode!r}")
        if self.episodes < 0:
            raise ValueError(f"PolicyActorConfig.episodes must be >= 0, got {self.episodes}")
        if self.guide_policy and self.learner != "remote":
            raise ValueError(f"PolicyActorConfig.guide_policy={self.guide_policy!r} guides a learning run "
                             "(learner=remote)")
        check_action_history(self.action_history, "PolicyActorConfig.action_history")
        if self.action_history and self.learner != "remote":
            raise ValueError(f"PolicyActorConfig.action_history={self.action_history} is for learner=remote; with "
                             "learner=none a checkpoint brings its run's own")
        if self.base_policy and self.learner != "remote":
            raise ValueError(f"PolicyActorConfig.base_policy={self.base_policy!r} is for learner=remote; with "
                             "learner=none a residual checkpoint brings its own base")
        if self.record and self.learner == "remote":
            raise ValueError("PolicyActorConfig.record records the actor's own loop (learner=none); with "
                             "learner=remote the learner keeps every transition in its replay log")


class Policy(Protocol):
    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray: ...


class LearnerLink(Protocol):
    def add(self, step: EnvStep) -> None: ...

    def sync(self, policy: Policy) -> None: ...

    def close(self) -> None: ...


class NoLearner:
    def add(self, *args: Any, **kwargs: Any) -> None:
        pass

    def sync(self, policy: Policy) -> None:
        pass

    def close(self) -> None:
        pass


class AgentPolicy:
    def __init__(self, agent: Any, deterministic: bool) -> None:
        self.agent, self.deterministic = agent, deterministic

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.agent.act(obs, deterministic=self.deterministic)


class RandomPolicy:
    def __init__(self, space: gym.spaces.Box, seed: int) -> None:
        self.space = space
        self.space.seed(seed)

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.space.sample()


class ZeroPolicy:
    def __init__(self, dim: int) -> None:
        self.action = np.zeros(dim, np.float32)

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.action


class BasedPolicy:
    """A residual run's policy on the robot: its base policy runs here, next to the arm, and proposes each
    action (the ``base_action`` observation); the residual corrects it."""

    def __init__(self, policy: Policy, base: Any) -> None:
        self.policy, self.base = policy, base

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.policy.act(self.base.with_base_action(obs))

    def executed(self, action: np.ndarray) -> None:
        _executed(self.policy, action)

    def reset(self) -> None:
        self.base.base.reset()
        _reset(self.policy)


class HistoryPolicy:
    """A run's policy that observes its action history (``--action-history``) on an env that does not add it:
    the history of the actions executed (``executed``, the human's while intervening) is kept here."""

    def __init__(self, policy: Policy, k: int, action_space: gym.spaces.Box) -> None:
        self.policy, self.history = policy, ActionHistory(k, action_space.low, action_space.high)

    def act(self, obs: dict[str, np.ndarray]) -> np.ndarray:
        return self.policy.act({**obs, ACTION_HISTORY: self.history.vector()})

    def executed(self, action: np.ndarray) -> None:
        self.history.push(action)

    def reset(self) -> None:
        self.history.reset()
        _reset(self.policy)


def _reset(policy: Any) -> None:
    """Start an episode afresh in a policy with memory (a base's chunk queue, an action history)."""
    if (reset := getattr(policy, "reset", None)) is not None:
        reset()


def _executed(policy: Any, action: np.ndarray) -> None:
    """Tell a policy that keeps an action history which action the arm carried out."""
    if (executed := getattr(policy, "executed", None)) is not None:
        executed(action)


def _checkpoint(cfg: PolicyActorConfig, env: gym.Env) -> Policy:
    from robot_rl.training.base_policy import BaseActionObservation, load_base_policy
    from robot_rl.training.loop import load_policy

    policy, train_cfg = load_policy(Path(cfg.checkpoint))
    trained = train_cfg.env
    base = None
    if trained.base_policy is not None:  # the base's action is an observation the robot's env does not have
        base = BaseActionObservation(env, load_base_policy(trained.base_policy, env, trained.base_noise,
                                                           trained.base_policy_sha256), trained.base_policy)
    keys = sorted([*(base or env).observation_space.spaces, *([ACTION_HISTORY] if trained.action_history else [])])
    if policy.obs_keys != keys:
        raise ValueError(f"checkpoint {cfg.checkpoint} (task {trained.task}, obs {trained.obs}) expects "
                         f"keys {policy.obs_keys}; the env gives {keys}")
    acting: Policy = AgentPolicy(policy, cfg.deterministic)
    if trained.action_history:  # inside the base: the base sees the env's own observations, as in training
        acting = HistoryPolicy(acting, trained.action_history, env.action_space)
    return acting if base is None else BasedPolicy(acting, base)


def _network(cfg: PolicyActorConfig, env: gym.Env) -> Policy:
    from robot_rl.agents.policy import ActingPolicy
    from robot_rl.training.config import PRESETS

    policy = ActingPolicy(PRESETS["rlpd"], env.observation_space, env.action_space, seed=cfg.seed)
    return AgentPolicy(policy, cfg.deterministic)


POLICIES: dict[str, Callable[[PolicyActorConfig, gym.Env], Policy]] = {
    "checkpoint": _checkpoint,
    "network": _network,
    "random": lambda cfg, env: RandomPolicy(env.action_space, cfg.seed),
    "zero": lambda cfg, env: ZeroPolicy(env.action_space.shape[0]),
}
LEARNERS: dict[str, Callable[[PolicyActorConfig, gym.Env], LearnerLink]] = {
    "none": lambda cfg, env: NoLearner(),
}


@dataclass
class ActorStats:
    episodes: int = 0
    successes: int = 0
    steps: int = 0
    interventions: int = 0
    policy_time_s: deque[float] = field(default_factory=lambda: deque(maxlen=10_000))  # bounded: runs are long

    def summary(self, env: gym.Env) -> dict[str, Any]:
        out: dict[str, Any] = {k: v for k, v in asdict(self).items() if k != "policy_time_s"}
        pt = np.asarray(self.policy_time_s) * 1e3
        if pt.size:
            out["policy_ms_p50"] = float(np.percentile(pt, 50))
            out["policy_ms_p99"] = float(np.percentile(pt, 99))
        env_stats = getattr(env.unwrapped, "stats", None)
        if env_stats is not None:
            lat = np.asarray(env_stats.latencies_s) * 1e3
            out.update(missed_cycles=env_stats.missed_cycles, missing_echoes=env_stats.missing_echoes,
                       stale_steps=env_stats.stale_steps, late_observations=env_stats.late_observations,
                       incidents=list(env_stats.incidents),
                       latencies_ms=lat.round(4).tolist())
        return out


def run_actor(env: gym.Env, policy: Policy, learner: LearnerLink, episodes: int = 0,
              should_stop: Callable[[], bool] = lambda: False, stats: ActorStats | None = None,
              recorder: EpisodeBagWriter | None = None) -> ActorStats:
    """Reset/act/step until ``episodes`` are done (0: until ``should_stop``). The executed action (the
    human's during an intervention) is what the learner receives, and what ``recorder`` records, at the
    observations' own stamps where the env has them."""
    stats = stats if stats is not None else ActorStats()
    stamp = lambda: getattr(env.unwrapped, "observation_stamp_ns", None)  # noqa: E731
    while not should_stop() and (episodes == 0 or stats.episodes < episodes):
        obs, _ = env.reset()
        if recorder is not None:
            recorder.begin(obs, stamp())
        _reset(policy)
        done = False
        while not done and not should_stop():
            t0 = time.perf_counter()
            action = policy.act(obs)
            stats.policy_time_s.append(time.perf_counter() - t0)
            step = step_env(env, obs, action)
            _executed(policy, step.transition.action)
            info = step.info
            stats.interventions += int(step.transition.intervention)
            learner.add(step)
            if recorder is not None:
                recorder.record(step, stamp())
            learner.sync(policy)
            obs, done = step.transition.next_obs, step.done
            stats.steps += 1
        if done:
            stats.episodes += 1
            stats.successes += int(bool(info.get("is_success")))
    return stats


def make_recorder(cfg: PolicyActorConfig, env: gym.Env) -> EpisodeBagWriter | None:
    if not cfg.record:
        return None
    from robot_rl.data.demos import DemoMeta
    from robot_rl.formats.rosbag import EpisodeBagWriter

    return EpisodeBagWriter(cfg.record, DemoMeta.for_env(cfg.record_task, env, notes="ROS 2 policy actor"))


def write_stats(path: str, stats: ActorStats, env: gym.Env) -> None:
    if path:
        Path(path).write_text(json.dumps(stats.summary(env)))


def link_config(cfg: PolicyActorConfig, env_kwargs: dict[str, Any]) -> LinkActorConfig:
    """The distributed actor's config for this ROS actor: the learner must describe the same spaces, so start
    it with ``env_factory=robot_rl.ros.spec_env:make_contract_env`` and the same ``env_kwargs``
    (hardware_config, cameras, privileged_task) and intervention mode."""
    from robot_rl.distributed.config import ActorConfig as LinkActorConfig
    from robot_rl.distributed.config import LinkConfig
    from robot_rl.training.env_factory import EnvConfig
    from robot_rl.training.guide import GuideConfig

    host, _, port = cfg.learner_address.rpartition(":")
    return LinkActorConfig(
        link=LinkConfig(host=host or "127.0.0.1", port=int(port)), actor_id=cfg.actor_id, seed=cfg.seed,
        env=EnvConfig(env_factory="robot_rl.ros.spec_env:make_contract_env",
                      env_kwargs=json.dumps(env_kwargs, sort_keys=True), base_policy=cfg.base_policy or None,
                      action_history=cfg.action_history),
        deterministic=cfg.deterministic, control_hz=0.0,
        intervention_mode=cfg.intervention_mode,
        guide=GuideConfig(policy=cfg.guide_policy or None, schedule=cfg.guide_schedule),
        env_interventions=True)  # the bridge's mux flags them in every step's echo


def run_remote(env: gym.Env, cfg: PolicyActorConfig, env_kwargs: dict[str, Any],
               should_stop: Callable[[], bool] = lambda: False) -> dict[str, Any]:
    """The distributed actor loop over ``env`` (needs ``robot_rl[dist]``), configured by ``link_config``."""
    from robot_rl.distributed.actor import Actor
    from robot_rl.training.env_factory import with_observation_extras

    link = link_config(cfg, env_kwargs)
    return Actor(link, env=with_observation_extras(env, link.env)).run(should_stop)
