"""``robot-rl train --actors N``: one learner (this process) and N simulated actor processes on loopback.

Same run-folder outputs as single-process ``train`` (config.json, metrics.csv, checkpoints/latest.pt, eval
curve), plus the replay log and one ``actor-<i>.log`` per actor. A random token is made for the run and
handed to the actors through their environment; it is never written to disk.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import os
import secrets
import subprocess
import sys
from pathlib import Path

from robot_rl.distributed.config import ActorConfig, LearnerConfig, LinkConfig
from robot_rl.distributed.learner import Learner
from robot_rl.training.config import TrainConfig
from robot_rl.training.hil import check_rlif_has_device, few_critics_warning
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import from_jsonable, to_jsonable
from robot_rl.utils.shutdown import GracefulStop

log = logging.getLogger("robot_rl.distributed")


def actor_config(cfg: TrainConfig, index: int, port: int, n: int) -> ActorConfig:
    """Sim actor ``index`` of ``n``: the run's env, its own seed and share of the random steps (and its own
    scripted corrector with ``--teleop scripted``), pacing itself to the learner."""
    seed = cfg.seed * 1000 + index + 1
    return ActorConfig(
        link=LinkConfig(port=port), env=cfg.env, actor_id=f"sim-{index}", seed=seed,
        random_steps=math.ceil(cfg.random_steps / n), device=cfg.device, connect_timeout_s=120.0,
        follow_learner_pace=True, teleop=cfg.teleop, intervention_mode=cfg.intervention_mode,
        corrector=dataclasses.replace(cfg.corrector, seed=cfg.corrector.seed * 1000 + index + 1), guide=cfg.guide,
    )  # fmt: skip


def actor_command(config: ActorConfig, path: Path) -> list[str]:
    """The process that runs ``config`` (written to ``path``, in the run folder; the token is never written)."""
    atomic_write(path, json.dumps(to_jsonable(config), indent=2))
    return [sys.executable, "-m", "robot_rl.distributed.launch", str(path)]


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
            folder = Path(learner.run_dir.path)
            out = open(folder / f"actor-{i}.log", "ab")  # noqa: SIM115 - closed below
            logs.append(out)
            command = actor_command(actor_config(learner.train, i, port, n), folder / f"actor-{i}.json")
            procs.append(subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT))
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


def main(argv: list[str]) -> int:
    """``python -m robot_rl.distributed.launch ACTOR_CONFIG.json``: a sim actor process of ``--actors N``."""
    from robot_rl.cli import run_actor_command

    (path,) = argv
    return run_actor_command(from_jsonable(ActorConfig, json.loads(Path(path).read_text()), where=path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
