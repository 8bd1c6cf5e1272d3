"""Typed configs of the actor/learner link (no gRPC needed to import them).

The shared token is never a config value: configs are dumped into the run folder, so only where to read the
token from (a file or an environment variable) is configured.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Literal

import tyro

from robot_rl.teleop.base import TeleopName
from robot_rl.teleop.corrector import CorrectorConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig
from robot_rl.training.guide import GuideConfig

MIN_TOKEN_CHARS = 16


@dataclass(frozen=True)
class LinkConfig:
    """Where the learner listens (the actor connects) and how the link is secured."""

    host: str = "127.0.0.1"
    """Learner: address to bind (loopback by default; 0.0.0.0 = all interfaces). Actor: the learner's
    address."""
    port: int = 50051
    """TCP port. 0 on the learner picks a free one (written to ``<run>/learner_address.json``)."""
    token_file: Path | None = None
    """File holding the shared token. Without it, the token is read from the variable ``token_env``."""
    token_env: str = "ROBOT_RL_TOKEN"
    tls_cert: Path | None = None
    """Learner: PEM certificate chain; with ``tls_key`` it turns TLS on."""
    tls_key: Path | None = None
    """Learner: PEM private key of ``tls_cert``."""
    tls_ca: Path | None = None
    """Actor: PEM certificate(s) to verify the learner with; turns TLS on."""
    tls_server_name: str | None = None
    """Actor: name expected in the learner's certificate when it differs from ``host``."""
    max_message_mb: int = 64
    """Largest gRPC message either way (weights, transition batches)."""
    rpc_timeout_s: float = 10.0
    """Deadline of one Hello/Push call."""

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise ValueError(f"LinkConfig.port must be in [0, 65535], got {self.port}")
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("LinkConfig.tls_cert and LinkConfig.tls_key must be given together")
        if self.max_message_mb < 1 or self.rpc_timeout_s <= 0:
            raise ValueError("LinkConfig.max_message_mb must be >= 1 and rpc_timeout_s > 0")

    def token(self) -> str:
        """The shared token (file, else environment variable); ``ValueError`` says where it looked."""
        if self.token_file is not None:
            try:
                value = Path(self.token_file).read_text().strip()
            except OSError as e:
                raise ValueError(f"LinkConfig.token_file: cannot read {self.token_file} ({e})") from e
            where = f"token file {self.token_file}"
        else:
            value = os.environ.get(self.token_env, "").strip()
            where = f"environment variable {self.token_env}"
        if len(value) < MIN_TOKEN_CHARS:
            raise ValueError(
                f"a shared token of at least {MIN_TOKEN_CHARS} characters is required; {where} "
                f"{'is empty or unset' if not value else 'is too short'} "
                "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))')"
            )
        return value


@dataclass(frozen=True)
class LearnerConfig:
    """``robot-rl learner``: trains on what actors stream in; pushes policy weights back."""

    train: TrainConfig = field(default_factory=TrainConfig)
    """Task, agent, replay and run-folder settings, as for ``robot-rl train``."""
    link: LinkConfig = field(default_factory=LinkConfig)
    flush_period_s: float = 1.0
    """Replay-log flush period: transitions are acknowledged to actors only once flushed (fsynced)."""
    segment_mb: int = 256
    """Replay-log segment size before a new file is started."""
    checkpoint_period_s: float = 60.0
    """Model + optimiser + counter checkpoint period (and at shutdown)."""
    weights_period_s: float = 1.0
    """Publish the actor weights this often (when they changed)."""
    max_update_ratio: float = 1.0
    """At most this many ``update()`` calls per received transition, as ``robot-rl train`` does (1.0);
    0 = update as fast as the learner can (SERL / HIL-SERL)."""
    prior_replay: tuple[Path, ...] = ()
    """Run folders whose replay goes into the prior (demo) half of every batch (RaE)."""
    evaluate: bool = True
    """Evaluate on a local copy of the env every ``train.eval_every`` transitions (off for real robots)."""
    max_actors: int = 8
    max_actor_lead: int = 0
    """Simulation: ask actors with ``follow_learner_pace`` to wait while more than this many transitions
    are not yet matched by updates (``max_update_ratio``), so sample efficiency compares with ``robot-rl
    train``. 0: off (robots never wait)."""
    skip_corrupt_chunks: bool = False
    """Default: a corrupt replay-log chunk stops the learner with its file and chunk named. True: log each
    one as an error and leave it out."""
    stop_at_budget: bool = True
    """Stop (and tell actors to stop) once ``train.total_env_steps`` transitions arrived."""
    log_period_s: float = 10.0

    def __post_init__(self) -> None:
        for name in ("flush_period_s", "checkpoint_period_s", "weights_period_s", "log_period_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"LearnerConfig.{name} must be > 0, got {getattr(self, name)}")
        if self.max_update_ratio < 0:
            raise ValueError(f"LearnerConfig.max_update_ratio must be >= 0, got {self.max_update_ratio}")
        if self.max_actors < 1 or self.segment_mb < 1:
            raise ValueError("LearnerConfig.max_actors and segment_mb must be >= 1")


@dataclass(frozen=True)
class ActorConfig:
    """``robot-rl actor``: runs the control loop, streams transitions, follows the learner's weights."""

    link: LinkConfig = field(default_factory=LinkConfig)
    env: Annotated[EnvConfig, tyro.conf.arg(name="")] = field(default_factory=EnvConfig)
    """Task, observations, cameras and reward source: the learner's ``train`` env (the handshake compares
    them); a reward classifier is computed here, where the cameras are."""
    actor_id: str = "actor-0"
    """Unique per actor: the learner de-duplicates by (actor_id, session, seq)."""
    seed: int = 0
    max_steps: int = 0
    """Stop after this many control steps (0: until the learner says stop)."""
    random_steps: int = 0
    """Initial steps with uniformly random actions."""
    deterministic: bool = False
    """Act with the policy mean (evaluation / deployment) instead of sampling."""
    control_hz: float = 0.0
    """Pace the loop at this rate (0: as fast as the env steps; real envs pace themselves)."""
    buffer_mb: float = 512.0
    """Unacknowledged data kept for resending. When full, new steps are dropped (counted, logged) and the
    current episode is cut; nothing already buffered is ever dropped."""
    send_batch: int = 32
    """Records per Push call."""
    compression: int = 1
    """zlib level for images (0: raw)."""
    connect_timeout_s: float = 60.0
    """First handshake: give up after this long (the policy config comes from the learner)."""
    wait_for_weights_s: float = 10.0
    """Wait this long for the learner's weights before the first step (then act with version 0)."""
    backoff_max_s: float = 5.0
    """Longest wait between reconnection attempts (exponential back-off from 0.1 s)."""
    drain_timeout_s: float = 30.0
    """At exit, wait this long for the learner to acknowledge everything recorded."""
    status_file: Path | None = None
    """Write a JSON status (steps, acked, versions, drops) here about once a second."""
    torch_threads: int = 1
    device: str = "cpu"
    follow_learner_pace: bool = False
    """Simulation only: pause stepping while the learner says it is behind (``max_actor_lead``)."""
    teleop: TeleopName = "none"
    """A device that can take over (interventions are flagged and sent; the learner routes them to its demo
    buffer). ``scripted``: the task's expert corrects the policy (simulation)."""
    intervention_mode: Literal["hil", "rlif"] = "hil"
    """Must match the learner's ``train.intervention_mode``: ``rlif`` sends no task reward."""
    env_interventions: bool = False
    """The env flags interventions itself (``info["intervention"]``): the ROS 2 env does, from the robot
    bridge's teleop mux, so ``teleop`` stays ``none`` there and RLIF still has its reward signal."""
    corrector: CorrectorConfig = field(default_factory=CorrectorConfig)
    """The scripted corrector (``--teleop scripted``)."""
    guide: GuideConfig = field(default_factory=GuideConfig)
    """Jump-start RL (``--guide.policy``, the learner's ``train.guide``): the guide acts for the first h steps of
    each episode here, next to the robot; on the curriculum h comes from the learner with the weights."""

    def __post_init__(self) -> None:
        if self.intervention_mode == "rlif" and self.teleop == "none" and not self.env_interventions:
            raise ValueError("ActorConfig.intervention_mode='rlif' needs a teleop device (its only reward), "
                             "or an env that flags interventions itself (env_interventions)")
        if not self.actor_id or any(c.isspace() for c in self.actor_id):
            raise ValueError(
                f"ActorConfig.actor_id must be a non-empty name without spaces, got {self.actor_id!r}"
            )
        for name in ("buffer_mb", "connect_timeout_s", "backoff_max_s", "drain_timeout_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"ActorConfig.{name} must be > 0, got {getattr(self, name)}")
        for name in ("max_steps", "random_steps", "wait_for_weights_s", "control_hz"):
            if getattr(self, name) < 0:
                raise ValueError(f"ActorConfig.{name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.compression <= 9:
            raise ValueError(
                f"ActorConfig.compression must be a zlib level in [0, 9], got {self.compression}"
            )
        if self.send_batch < 1 or self.torch_threads < 1:
            raise ValueError("ActorConfig.send_batch and torch_threads must be >= 1")
