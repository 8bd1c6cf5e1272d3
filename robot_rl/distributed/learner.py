"""``Learner``: the training process of the actor/learner split.

Composes what ``Trainer`` uses (``SACAgent``, ``ReplayBuffer``, ``MixedSampler``, ``RunDir``, ``evaluate``)
with the link: ``LinkServer`` (gRPC), ``Ingestor`` (de-duplication, acknowledgements) and ``ReplayLog``
(durability). The run folder has ``Trainer``'s layout (``config.json`` holds the ``TrainConfig``, so
``robot-rl eval RUN`` works) plus ``distributed.json``, ``replay_log/`` and ``learner_address.json``.
Started again on the same run folder it resumes: model, optimisers and counters from the last checkpoint,
replay and de-duplication state from the replay log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
import uuid
from collections import deque
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.data.routing import TransitionRouter, rlif_rewards
from robot_rl.data.spaces import describe_space
from robot_rl.data.transition import Transition, typed_extras
from robot_rl.distributed.assembler import AssembledEpisode
from robot_rl.distributed.codec import dump_weights
from robot_rl.distributed.config import LearnerConfig
from robot_rl.distributed.ingest import Ingestor
from robot_rl.distributed.prior import load_prior_episodes
from robot_rl.distributed.replay_log import ReplayLog
from robot_rl.distributed.server import LinkServer
from robot_rl.distributed.spec import run_spec
from robot_rl.training.base_policy import pin_policies
from robot_rl.training.core import CHECKPOINT, DISTRIBUTED_FILE, LearnerCore, resumed_config, start_process
from robot_rl.training.env_factory import make_env_from_config
from robot_rl.training.evaluate import EvalResult
from robot_rl.training.hil import RLIF_PENALTY, make_router
from robot_rl.training.run_dir import RunDir
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import to_jsonable

log = logging.getLogger("robot_rl.distributed")
ADDRESS_FILE = "learner_address.json"
VERSION_FILE = "weights_version.json"


def actors_ahead(taken: int, update_calls: int, learning_starts: int, ratio: float, lead: int,
                 replay_ready: bool) -> bool:
    """Whether paced sim actors must wait: more than ``lead`` of the ``taken`` env steps are not matched by
    ``update()`` calls at ``ratio`` per step. Never before learning starts, nor while the replay holds no
    sampleable transition (updates need one, and the actors must send it). ``lead`` or ``ratio`` 0: never."""
    if lead <= 0 or ratio <= 0 or taken < learning_starts or not replay_ready:
        return False
    return taken - learning_starts + 1 - update_calls / ratio > lead


class Learner(LearnerCore):
    """``start()`` serves, ``run()`` trains until the budget or ``stop()``, ``close()`` flushes and
    checkpoints."""

    def __init__(self, config: LearnerConfig, token: str | None = None) -> None:
        t = config.train
        if t.parallel.num_envs > 0:
            raise ValueError(f"robot-rl learner learns from its actors; --train.num-envs {t.parallel.num_envs} is "
                             "robot-rl train's (many simulated worlds in one process)")
        path = Path(t.resume or t.run_dir or RunDir.default_path(t.env.task, t.env.obs))
        self.resuming = (path / DISTRIBUTED_FILE).exists()
        if t.resume is not None and not self.resuming:
            raise FileNotFoundError(f"--resume {path}: not a distributed run folder (no {DISTRIBUTED_FILE})")
        t = resumed_config(t, path) if self.resuming else dataclasses.replace(pin_policies(t), run_dir=path)
        self.config = cfg = dataclasses.replace(config, train=t)
        self._token = token or cfg.link.token()
        start_process(t)
        self.env = make_env_from_config(t.env)
        self.spec = run_spec(self.env, t.env, t.intervention_mode)
        self.eval_env = self.env if cfg.evaluate else None
        space, action_space = self.env.observation_space, self.env.action_space
        action_dim = action_space.shape[0]
        super().__init__(t, self.env, RunDir(path), say=log.info)
        self.start_guide(self.env, None)  # the actors step with the guide; this process keeps h
        self._judge_episodes = self.jump_start is not None and t.guide.schedule == "curriculum" \
            and self.eval_env is None
        """The curriculum moves on the actors' training episodes: this learner does not evaluate (a real arm)."""
        self._h_of_version: dict[int, int] = {}
        """The guide's h published with each weights version (an episode starts at its first step's version's)."""
        if self._judge_episodes:
            log.info("jump-start curriculum without evaluations: h moves on every %d training episodes that "
                     "started at the current h", t.eval_episodes)
        self._replay_lock = threading.Lock()
        self.weights_version = 0
        self._published_updates = -1
        self._events: deque[tuple[int, dict[str, float]]] = deque()  # ingest threads -> main thread
        self._stop = threading.Event()
        self._fatal: BaseException | None = None
        if not self.resuming:
            self.run_dir.create(t)
            doc = {k: v for k, v in to_jsonable(cfg).items() if k != "train"}
            atomic_write(path / DISTRIBUTED_FILE, json.dumps(doc, indent=2))
        meta = {"observation_space": describe_space(space), "action_dim": int(action_dim), "spec": self.spec}
        self.replay_log = ReplayLog(path / "replay_log", meta, segment_bytes=cfg.segment_mb * 2**20)
        self._routers: dict[str, TransitionRouter] = {}  # per actor: its replay streams, RLIF labels
        self.ingestor = Ingestor(space, action_dim, self.replay_log, self._on_episode, self._on_step, self._on_cut)
        if self.resuming:
            self._restore_model()
            n = self.ingestor.restore(cfg.skip_corrupt_chunks)
            log.info(
                "resumed %s: %d records from the replay log -> %d transitions in %d episodes, %d updates",
                path,
                n,
                self.env_steps,
                self.episodes,
                self.updates,
            )
        else:
            self.replay_log.open_for_append()
        self._load_demos()
        version_file = path / VERSION_FILE  # every version ever published is above all earlier ones
        published = json.loads(version_file.read_text())["version"] if version_file.exists() else 0
        self.weights_version = max(self.weights_version, self.ingestor.max_policy_version, published)
        self.learner_id = uuid.uuid4().hex
        self.server = LinkServer(
            cfg.link,
            self._token,
            self.spec,
            json.dumps(to_jsonable(t.agent)),
            self.ingestor,
            cfg.max_actors,
            self.learner_id,
        )
        self._flusher: threading.Thread | None = None
        self.port = 0
        self._next_eval = (self.env_steps // t.eval_every + 1) * t.eval_every

    # --------------------------------------------------------------------------------------------- data
    def _router(self, actor_id: str) -> TransitionRouter:
        """``robot-rl train``'s router for one actor, over that actor's streams of the online and demo replay."""
        router = self._routers.get(actor_id)
        if router is None:
            online, demo = self.replay.stream(actor_id), self.demo_replay.stream(actor_id)
            router = self._routers[actor_id] = make_router(self.train, online, demo)
        return router

    def _on_step(self, actor_id: str, step: Transition, restoring: bool) -> None:
        """Ingest threads (or ``restore``): a complete transition -> the actor's replay streams at once, routed
        by the rules of ``robot-rl train`` (intervention segments also to the demo buffer, RLIF rewards). The
        replay log keeps what the actor sent, so a restart inserts and routes again the same way."""
        with self._replay_lock:
            self._router(actor_id).add(dataclasses.replace(step, extras=typed_extras(step.extras)))
        self.env_steps += 1

    def _on_cut(self, actor_id: str) -> None:
        """An actor's open episode was cut short (gap, new session): close its streams, bootstrapped."""
        with self._replay_lock:
            self._router(actor_id).flush()
            self.replay.end_episode(actor_id)

    def _on_episode(self, done: AssembledEpisode, restoring: bool) -> None:
        """Ingest threads (or ``restore``): a finished episode (its transitions are in already) -> counters and
        metrics."""
        self.episodes += 1
        if restoring:
            return
        episode = done.episode
        flags = episode.infos.get("intervention", np.zeros(len(episode), np.bool_))
        rewards = rlif_rewards(flags, RLIF_PENALTY) if self.train.intervention_mode == "rlif" else episode.rewards
        lag = self.weights_version - float(done.policy_versions.mean())
        self._events.append(
            (
                self.env_steps,
                {
                    "return": float(rewards.sum()),
                    "length": len(episode),
                    "success": float(episode.success),
                    "interventions": float(np.sum(flags)),
                    "intervention_rate": float(np.mean(flags)) if len(flags) else 0.0,
                    "policy_lag": lag,
                    **({"guide_h": float(h)} if (h := self._h_of_version.get(int(done.policy_versions[0])))
                       is not None else {}),
                },
            )
        )

    def _load_demos(self) -> None:
        """Demos (recorded once into the run folder, so a restart loads the same ones) and prior runs' replay."""
        cfg = self.config
        episodes, source = self.demo_episodes(self.env if self.train.env.env_factory is None else None)
        for run in cfg.prior_replay:
            prior = load_prior_episodes(run, self.env.observation_space, self.env.action_space.shape[0])
            episodes = [*episodes, *prior]
            source += f"; {len(prior)} prior episodes from {run}"
        self.add_demos(episodes)
        log.info("demos/prior: %s; %d transitions", source, len(self.demo_replay))

    def _sample(self) -> Any:
        with self._replay_lock:
            return self.sampler.sample(self.batch_size, self.train.device)

    # ---------------------------------------------------------------------------------------- lifecycle
    def start(self) -> int:
        """Listen (returns the port), publish the current weights, start the replay-log flusher."""
        self.port = self.server.start()
        address = {"host": self.config.link.host, "port": self.port, "learner_id": self.learner_id}
        atomic_write(self.run_dir.path / ADDRESS_FILE, json.dumps(address))
        self._publish()
        self._flusher = threading.Thread(target=self._flush_loop, name="replay-log-flush", daemon=True)
        self._flusher.start()
        return self.port

    def _flush_loop(self) -> None:
        while not self._stop.wait(self.config.flush_period_s):
            try:
                self.ingestor.flush()
            except BaseException as e:  # disk full, I/O error: nothing more can be acknowledged
                log.error("replay log flush failed, stopping the learner: %s", e)
                self._fatal = e
                self._stop.set()

    def stop(self) -> None:
        """Ask ``run`` to return (signal handlers, other threads)."""
        self._stop.set()

    def _publish(self) -> None:
        """Publish the actor weights under a new version, made durable first (unique across restarts)."""
        self.weights_version += 1
        doc = json.dumps({"version": self.weights_version}).encode()
        atomic_write(self.run_dir.path / VERSION_FILE, doc)
        guide_h = None if self.jump_start is None else self.jump_start.h
        if guide_h is not None:
            self._h_of_version[self.weights_version] = guide_h
        self.server.publish(self.weights_version, self.updates, dump_weights(self.agent.policy, guide_h))
        self._published_updates = self.updates

    def _steps_taken(self) -> int:
        """Env steps the actors took, as far as received: the transitions in replay plus each open episode's
        newest step (complete once the next record brings its next observation). Updates are matched against
        these, as ``robot-rl train`` updates after every step."""
        return self.env_steps + self.ingestor.open_steps()

    def _may_update(self, taken: int) -> bool:
        t, ratio = self.train, self.config.max_update_ratio
        if taken < t.learning_starts or len(self.replay) == 0:
            return False
        return ratio == 0 or self.update_calls < ratio * (taken - t.learning_starts + 1)

    def run(self) -> EvalResult | None:
        """Train until ``train.total_env_steps`` transitions arrived (then stop the actors) or ``stop()``."""
        cfg, t = self.config, self.train
        if self._flusher is None:
            self.start()
        now = time.monotonic()
        next_publish, next_ckpt, next_log = now + cfg.weights_period_s, now + cfg.checkpoint_period_s, now
        last_steps, last_time, budget_done, budget_time = self.env_steps, now, False, 0.0
        while not self._stop.is_set():
            self._log_events()
            if cfg.stop_at_budget and self.env_steps >= t.total_env_steps and not budget_done:
                budget_done, budget_time = True, time.monotonic()  # actors stop; owed updates still run
                self.server.stop_requested = True
                log.info("budget of %d transitions reached: asking actors to stop", t.total_env_steps)
            taken = self._steps_taken()
            may_update = self._may_update(taken)
            if budget_done and not (cfg.max_update_ratio > 0 and may_update) and self._actors_gone(budget_time):
                break
            self.server.hold = actors_ahead(
                taken, self.update_calls, t.learning_starts, cfg.max_update_ratio, cfg.max_actor_lead,
                len(self.replay) > 0,
            )
            if may_update:
                self._update()
            else:
                self._stop.wait(0.005)
            now = time.monotonic()
            if now >= next_publish:
                next_publish = now + cfg.weights_period_s
                if self.updates != self._published_updates:
                    self._publish()
            if now >= next_ckpt:
                next_ckpt = now + cfg.checkpoint_period_s
                self.save_checkpoint()
            self.evaluate_if_due()
            if now >= next_log:
                rate = (self.env_steps - last_steps) / max(now - last_time, 1e-9)
                self._log_link(rate)
                next_log, last_steps, last_time = now + cfg.log_period_s, self.env_steps, now
        if self._fatal is not None:
            raise RuntimeError(f"learner stopped: {self._fatal}") from self._fatal
        if budget_done and self.eval_env is not None:
            self._evaluate()
        return self.last_eval

    def _update(self) -> None:
        if not self._updated_in_process and self.config.max_actor_lead > 0:
            self.server.hold = True  # the first update compiles for seconds: paced actors wait, as for evaluations
        self.update(self._sample)

    def update_if_due(self) -> bool:
        """One update if the received transitions are owed one (``max_update_ratio``); False if not."""
        if not self._may_update(self._steps_taken()):
            return False
        self._update()
        return True

    def evaluate_if_due(self) -> None:
        """Evaluate once the received transitions pass the next multiple of ``train.eval_every``."""
        every = self.train.eval_every
        if self.eval_env is not None and self.env_steps >= self._next_eval:
            self._next_eval = (self.env_steps // every + 1) * every
            self._evaluate()

    def _actors_gone(self, since: float, grace_s: float = 30.0) -> bool:
        """Every actor delivered its last episode and left (no push for 2 s), or ``grace_s`` passed."""
        if time.monotonic() - since > grace_s:
            return True
        return all(time.time() - a.last_seen > 2.0 for a in self.ingestor.snapshot())

    def close(self) -> None:
        """Final flush and checkpoint; stop serving. Safe to call more than once."""
        self._stop.set()
        if self._flusher is not None:
            self._flusher.join(5.0)
        self.server.stop()
        if self._fatal is None:
            self.ingestor.flush()
        self.replay_log.close()
        self.save_checkpoint()
        self._log_events()
        self._log_link(None)
        self.run_dir.plot_learning_curve()
        self.run_dir.close()
        self.env.close()

    # --------------------------------------------------------------------------------------- reporting
    def _log_events(self) -> None:
        """Main thread: log the episodes the ingest threads finished; without evaluations they also move the
        jump-start curriculum (the actors' next episodes start at a new h with the next weights)."""
        while self._events:
            step, values = self._events.popleft()
            self.run_dir.log("episode", step, values)
            if self._judge_episodes and "guide_h" in values and self.jump_start is not None:
                h = self.jump_start.h
                if self.jump_start.after_episode(int(values["guide_h"]), values["success"], values["length"]):
                    log.info("[%d transitions] %d training episodes guided for %d steps were as good as the best "
                             "so far: h -> %d", step, self.train.eval_episodes, h, self.jump_start.h)
                    self.run_dir.log("guide", step, {"h": float(self.jump_start.h)})
                    if not self._stop.is_set():
                        self._publish()

    def _log_link(self, rate: float | None) -> None:
        """Link and buffer numbers; ``rate`` (transitions/s since the last row) is None for the final row."""
        actors = self.ingestor.snapshot()
        stats = {
            **({"transitions_per_s": rate} if rate is not None else {}),
            "actors_connected": float(sum(time.time() - a.last_seen < 5 for a in actors)),
            "dropped_steps": float(sum(a.stats.get("dropped_steps", 0) for a in actors)),
            "duplicates": float(sum(a.duplicates for a in actors)),
            "weights_version": float(self.weights_version),
            "unflushed_records": float(self.ingestor.pending_records),
            "updates": float(self.updates),
            "online_transitions": float(len(self.replay)),
            "demo_transitions": float(len(self.demo_replay)),  # demos + prior + intervention segments
        }
        self.run_dir.log("link", self.env_steps, stats)
        if self.train.progress and rate is not None:
            log.info(
                "[learner] %d transitions (%.0f/s), %d episodes, %d updates, weights v%d, %d actors, "
                "%d dropped by actors, %d duplicates ignored",
                self.env_steps,
                rate,
                self.episodes,
                self.updates,
                self.weights_version,
                stats["actors_connected"],
                stats["dropped_steps"],
                stats["duplicates"],
            )

    def _evaluate(self) -> None:
        assert self.eval_env is not None
        if self.config.max_actor_lead > 0:  # no updates while evaluating: paced actors wait meanwhile
            self.server.hold = True
        result = self.evaluate(self.eval_env)
        h_moved = self.advance_guide(self.eval_env)
        self.server.hold = False  # the run loop holds the actors again if they are still ahead of the updates
        log.info("[%d transitions] eval: %s", self.env_steps, result.summary())
        if h_moved:
            self._publish()  # the actors' next episodes start at the new h

    # --------------------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, extra: dict[str, Any] | None = None, with_replay: bool = False) -> Path:
        """Model, optimisers and counters; the replay is in the replay log."""
        return super().save_checkpoint({"weights_version": self.weights_version, **(extra or {})}, with_replay)

    def _restore_model(self) -> None:
        """Model, optimisers and update counters from the checkpoint; the transitions and episodes come from the
        replay log (``Ingestor.restore``), which may hold more than the checkpoint saw."""
        state = self.load_checkpoint(with_replay=False)
        if state is None:
            log.warning("%s: no checkpoint yet; the model starts fresh (the replay log is still used)",
                        self.run_dir.checkpoints / CHECKPOINT)
            return
        self.weights_version = int(state.get("weights_version", 0))
