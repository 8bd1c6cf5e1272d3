"""``robot-rl train --actors N``: one learner (this process) and N simulated actor processes on loopback.

Same run-folder outputs as single-process ``train`` (config.json, metrics.csv, checkpoints/latest.pt, eval
curve), plus the replay log and one ``actor-<i>.log`` per actor. A random token is made for the run and
handed to the actors through their environment; it is never written to disk.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import secrets
import subprocess
import sys
from pathlib import Path

from robot_rl.distributed.config import LearnerConfig, LinkConfig
from robot_rl.distributed.learner import Learner
from robot_rl.training.config import TrainConfig
from robot_rl.training.hil import check_rlif_has_device, few_critics_warning
from robot_rl.utils.shutdown import GracefulStop

log = logging.getLogger("robot_rl.distributed")


def config_flags(prefix: str, config: object) -> list[str]:
    """tyro flags reproducing a flat dataclass of scalars (``--prefix.field value``)."""
    flags = []
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        name, value = f"{prefix}.{f.name.replace('_', '-')}", getattr(config, f.name)
        if isinstance(value, bool):
            flags.append(f"--{prefix}.{'' if value else 'no-'}{f.name.replace('_', '-')}")
        else:
            flags += [f"--{name}", str(value)]
    return flags


def actor_command(cfg: TrainConfig, index: int, port: int, n: int) -> list[str]:
    """``robot-rl actor`` for sim actor ``index`` of ``n``: the run's env settings, its own seed (and its own
    scripted corrector with ``--teleop scripted``)."""
    random_steps = math.ceil(cfg.random_steps / n)
    teleop = ["--teleop", cfg.teleop, "--intervention-mode", cfg.intervention_mode]
    if cfg.teleop == "scripted":
        corrector = dataclasses.replace(cfg.corrector, seed=cfg.corrector.seed * 1000 + index + 1)
        teleop += config_flags("corrector", corrector)
    reward = []
    if cfg.reward_classifier is not None:  # computed on the actor, where the cameras are
        reward = ["--reward-classifier", str(cfg.reward_classifier)]
        if cfg.classifier_threshold is not None:
            reward += ["--classifier-threshold", str(cfg.classifier_threshold)]
        if cfg.classifier_state_checks:
            reward += ["--classifier-state-checks", *cfg.classifier_state_checks]
    return [
        sys.executable, "-m", "robot_rl.cli", "actor", "--link.port", str(port), "--actor-id", f"sim-{index}",
        "--task", cfg.task, "--obs", cfg.obs, "--image-size", str(cfg.image_size), "--cameras", *cfg.cameras,
        "--dense-reward" if cfg.dense_reward else "--no-dense-reward",
        "--seed", str(cfg.seed * 1000 + index + 1), "--random-steps", str(random_steps), "--device", cfg.device,
        "--connect-timeout-s", "120", "--follow-learner-pace", *teleop, *reward,
    ]  # fmt: skip


def train_distributed(cfg: TrainConfig, learner_overrides: dict | None = None) -> int:
    check_rlif_has_device(cfg)
    if advice := few_critics_warning(cfg):
        print(advice, file=sys.stderr)
    n = cfg.actors
    token = secrets.token_urlsafe(32)
    # Sim actors keep the learner's pace, a few steps ahead at most, on weights at most 0.25 s old: what one
    # process does exactly (act on the newest policy, one update per step), as near as a link allows.
    overrides = {"max_actor_lead": 10 * n, "weights_period_s": 0.25, **(learner_overrides or {})}
    config = LearnerConfig(train=cfg, link=LinkConfig(port=0), **overrides)
    learner = Learner(config, token=token)
    with GracefulStop(on_request=learner.stop) as stop:  # Ctrl-C reaches the actors too (one process group)
        return _run_with_actors(cfg, learner, token, stop)


def _run_with_actors(cfg: TrainConfig, learner: Learner, token: str, stop: GracefulStop) -> int:
    n = cfg.actors
    port = learner.start()
    print(f"run folder: {learner.run_dir.path}")
    env = {**os.environ, "ROBOT_RL_TOKEN": token}
    procs: list[subprocess.Popen] = []
    logs = []
    try:
        for i in range(n):
            out = open(Path(learner.run_dir.path) / f"actor-{i}.log", "ab")  # noqa: SIM115 - closed below
            logs.append(out)
            procs.append(
                subprocess.Popen(
                    actor_command(learner.train, i, port, n), env=env, stdout=out, stderr=subprocess.STDOUT
                )
            )
        result = learner.run()
    except KeyboardInterrupt:
        result = None
    finally:
        learner.stop()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                log.warning("actor process %d did not exit; terminating it", p.pid)
                p.terminate()
                p.wait(timeout=10)
        learner.close()
        for f in logs:
            f.close()
    bad = [i for i, p in enumerate(procs) if p.returncode not in (0, None)]
    if bad:
        print(f"actor(s) {bad} exited with an error; see actor-<i>.log in the run folder", file=sys.stderr)
    if stop.requested:
        print(f"robot-rl train: stopped ({stop.signal_name}) after {learner.env_steps} transitions, replay log and "
              f"checkpoint saved; continue with --resume {learner.run_dir.path}")
    elif result is not None:
        print(f"final eval: {result.summary()}")
    if not stop.requested:
        print(f"run folder: {learner.run_dir.path}")
    return 1 if bad else 0
