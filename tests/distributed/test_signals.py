"""Ctrl-C (SIGINT) and SIGTERM stop ``robot-rl actor`` and ``robot-rl learner`` cleanly: exit status 0, one
``stopped`` line, no traceback, and nothing the actor sent is lost (the actor flushes what the learner is owed;
the learner flushes its replay log)."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from link_helpers import finish, learner_output, read_records, start_actor, start_learner, wait_for

pytestmark = pytest.mark.timeout(150)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_actor_and_learner_stop_cleanly_and_lose_nothing(tmp_path: Path, sig) -> None:
    run = tmp_path / "run"
    learner, port = start_learner(run, "--train.total-env-steps", "1000000")
    actor = start_actor(port, "a0")
    try:
        wait_for(lambda: sum(len(r) for r in read_records(run).values()) > 50, 60.0, "records at the learner")
        actor.send_signal(sig)
        code, out = finish(actor, timeout_s=30.0)
        assert code == 0 and "Traceback" not in out, out
        stop_lines = [line for line in out.splitlines() if line.startswith("robot-rl actor: stopped")]
        assert len(stop_lines) == 1 and f"({sig.name})" in stop_lines[0] and "0 records unacknowledged" in stop_lines[0]
        steps = int(stop_lines[0].split(" after ")[1].split(" steps")[0])
        time.sleep(0.5)
    finally:
        if actor.poll() is None:
            actor.kill()
        learner.send_signal(sig)
        learner_code = learner.wait(timeout=60)
    log = learner_output(run)
    assert learner_code == 0 and "Traceback" not in log, log
    assert sum(line.startswith("robot-rl learner: stopped") for line in log.splitlines()) == 1, log
    records = read_records(run)["a0"]
    assert sum(r.is_step for r in records) == steps, "a step the actor took is missing at the learner"
    assert [r.seq for r in records] == list(range(1, len(records) + 1))
