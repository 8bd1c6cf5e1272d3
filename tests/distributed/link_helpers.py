"""Real-process helpers for the actor/learner tests: loopback only, ephemeral ports, bounded waits."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from robot_rl.distributed.codec import RecordData, decode_record
from robot_rl.distributed.replay_log import ReplayLog
from robot_rl.distributed.testing import CounterEnv

TOKEN = "test-token-0123456789abcdef"
FACTORY = "robot_rl.distributed.testing:counter_env"
TINY = [
    "--train.agent.hidden-dims",
    "32",
    "32",
    "--train.agent.num-critics",
    "2",
    "--train.agent.utd-ratio",
    "1",
    "--train.agent.cnn-channels",
    "8",
    "8",
    "8",
    "8",
    "--train.agent.image-latent-dim",
    "32",
    "--train.batch-size",
    "16",
    "--train.learning-starts",
    "40",
    "--train.torch-threads",
    "1",
    "--train.scripted-demos",
    "0",
    "--no-evaluate",
    "--train.no-progress",
    "--train.agent.compile",  # the link's tests time updates and weights; a compile would only stall them
    "off",
]


def env_vars(token: str = TOKEN) -> dict[str, str]:
    return {**os.environ, "ROBOT_RL_TOKEN": token, "PYTHONUNBUFFERED": "1"}


def start_learner(
    run: Path,
    *extra: str,
    port: int = 0,
    env_kwargs: str = "{}",
    log_name: str = "learner.log",
    timeout_s: float = 40.0,
) -> tuple[subprocess.Popen, int]:
    """Start ``robot-rl learner`` on ``run``; return (process, port) once it listens."""
    address = run / "learner_address.json"
    address.unlink(missing_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "robot_rl.cli",
        "learner",
        "--train.env-factory",
        FACTORY,
        "--train.env-kwargs",
        env_kwargs,
        "--train.run-dir",
        str(run),
        "--link.port",
        str(port),
        *TINY,
        *extra,
    ]
    run.parent.mkdir(parents=True, exist_ok=True)
    out = open(run.parent / f"{run.name}-{log_name}", "ab")  # noqa: SIM115 - the child owns it
    proc = subprocess.Popen(cmd, env=env_vars(), stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"learner exited with {proc.returncode}:\n{learner_output(run, log_name)}")
        if address.exists():
            return proc, int(json.loads(address.read_text())["port"])
        time.sleep(0.1)
    proc.kill()
    raise TimeoutError(f"learner did not start:\n{learner_output(run, log_name)}")


def learner_output(run: Path, log_name: str = "learner.log") -> str:
    path = run.parent / f"{run.name}-{log_name}"
    return path.read_text(errors="replace") if path.exists() else ""


def actor_cmd(port: int, actor_id: str, *extra: str, env_kwargs: str = "{}") -> list[str]:
    return [
        sys.executable,
        "-m",
        "robot_rl.cli",
        "actor",
        "--env-factory",
        FACTORY,
        "--env-kwargs",
        env_kwargs,
        "--link.port",
        str(port),
        "--actor-id",
        actor_id,
        "--connect-timeout-s",
        "30",
        "--backoff-max-s",
        "0.5",
        *extra,
    ]


def start_actor(
    port: int, actor_id: str, *extra: str, token: str = TOKEN, env_kwargs: str = "{}"
) -> subprocess.Popen:
    return subprocess.Popen(
        actor_cmd(port, actor_id, *extra, env_kwargs=env_kwargs),
        env=env_vars(token),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen, timeout_s: float = 60.0) -> tuple[int, str]:
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        raise AssertionError(f"process did not finish in {timeout_s} s:\n{out}") from None
    return proc.returncode, out or ""


def actor_summary(output: str) -> dict[str, Any]:
    lines = [line for line in output.splitlines() if line.startswith("actor summary: ")]
    assert lines, f"no actor summary in:\n{output}"
    return json.loads(lines[-1][len("actor summary: ") :])


def stop_learner(proc: subprocess.Popen, timeout_s: float = 30.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def read_records(run: Path, env: CounterEnv | None = None) -> dict[str, list[RecordData]]:
    """Every record in the run's replay log, per actor id, in log order."""
    env = env or CounterEnv()
    out: dict[str, list[RecordData]] = defaultdict(list)
    for actor_id, _, raws in ReplayLog(run / "replay_log").batches():
        out[actor_id].extend(decode_record(r, env.observation_space, env.action_space.shape[0]) for r in raws)
    return dict(out)


def check_content(records: list[RecordData]) -> None:
    """Each record's observation is the one ``CounterEnv`` emits for its (episode seed, step)."""
    for rec in records:
        seed, t = int(rec.obs["state"][0]), int(rec.obs["state"][1])
        assert t == rec.index, f"seq {rec.seq}: state says step {t}, record index {rec.index}"
        assert int(rec.obs["images/front"][0, 0, 0]) == (seed * 31 + t) % 256, f"seq {rec.seq}: wrong image"


def wait_for(predicate, timeout_s: float, what: str, interval_s: float = 0.1) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def read_status(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def link_metrics(run: Path) -> list[dict[str, str]]:
    """The learner's ``link`` rows of ``metrics.csv``."""
    with (run / "metrics.csv").open() as f:
        return [row for row in csv.DictReader(f) if row["kind"] == "link"]
