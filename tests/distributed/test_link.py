"""Real processes over loopback: learner + actors, refusals, kill -9 and restart, learner absence, corruption.

Every test starts ``robot-rl learner`` / ``robot-rl actor`` subprocesses on ephemeral ports with the tiny
``CounterEnv`` (its observations encode episode and step, so content can be checked after a crash).
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools")

from link_helpers import (
    actor_summary,
    check_content,
    finish,
    learner_output,
    link_metrics,
    read_records,
    read_status,
    start_actor,
    start_learner,
    stop_learner,
    wait_for,
)

from robot_rl.distributed.replay_log import CHUNK_HEADER

pytestmark = pytest.mark.timeout(150)


def assert_exactly_once(records, n_expected: int | None = None) -> None:
    seqs = [r.seq for r in records]
    assert seqs == list(range(1, len(seqs) + 1)), "sequence numbers must be 1..N, each exactly once"
    if n_expected is not None:
        assert len(seqs) == n_expected


def test_learner_and_two_actors_exchange_transitions_and_weights(tmp_path: Path) -> None:
    run = tmp_path / "run"
    learner, port = start_learner(
        run,
        "--train.total-env-steps",
        "100000",
        "--weights-period-s",
        "0.2",
        "--flush-period-s",
        "0.2",
        "--max-update-ratio",
        "0.3",
    )
    try:
        actors = [
            start_actor(port, f"a{i}", "--max-steps", "300", "--control-hz", "100", "--seed", str(i))
            for i in range(2)
        ]
        summaries = []
        for proc in actors:
            code, out = finish(proc)
            assert code == 0, out
            summaries.append(actor_summary(out))
    finally:
        assert stop_learner(learner) == 0, learner_output(run)
    records = read_records(run)
    assert set(records) == {"a0", "a1"}
    for summary in summaries:
        recs = records[summary["actor_id"]]
        assert summary["acked_seq"] == summary["last_seq"] == len(recs) and summary["pending"] == 0
        assert_exactly_once(recs)
        check_content(recs)
        assert sum(r.is_step for r in recs) == summary["steps"] == 300
        # weights flowed: newer versions were used, and each transition says which version produced it
        assert len(summary["versions_used"]) > 2 and summary["weights_version"] > 2
        assert {r.policy_version for r in recs if r.is_step} == set(summary["versions_used"])
    # CounterEnv flags every 5th step an intervention: each such step reaches the learner's demo buffer
    # (no demos were given, so the demo buffer holds nothing else)
    demo = [float(r["value"]) for r in link_metrics(run) if r["key"] == "demo_transitions"]
    assert demo[-1] == sum(r.is_step and r.extras["intervention"] > 0 for recs in records.values() for r in recs) > 0


def test_wrong_token_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    learner, port = start_learner(run)
    try:
        code, out = finish(
            start_actor(port, "intruder", "--max-steps", "5", token="not-the-token-0123456789")
        )
        assert code == 3 and "missing or wrong token" in out, out
    finally:
        stop_learner(learner)
    assert "refused Hello from ipv4:127.0.0.1" in learner_output(run)
    assert read_records(run) == {}


def test_spec_mismatch_is_refused_at_handshake(tmp_path: Path) -> None:
    run = tmp_path / "run"
    learner, port = start_learner(run)
    try:
        code, out = finish(
            start_actor(port, "wrong-cam", "--max-steps", "5", env_kwargs='{"image_size": 40}')
        )
    finally:
        stop_learner(learner)
    assert code == 3, out
    assert "does not match the learner's spec" in out and "observation_space['images/front'].shape" in out, (
        out
    )
    assert "[40, 40, 3]" in out and "[32, 32, 3]" in out


def test_kill9_learner_then_restart_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    run, status = tmp_path / "run", tmp_path / "actor.json"
    common = (
        "--train.total-env-steps",
        "100000",
        "--flush-period-s",
        "0.3",
        "--checkpoint-period-s",
        "1",
        "--max-update-ratio",
        "0.2",
    )
    learner, port = start_learner(run, *common)
    actor = start_actor(port, "a0", "--max-steps", "400", "--control-hz", "60", "--status-file", str(status))
    wait_for(lambda: read_status(status).get("acked_seq", 0) > 100, 40, "the first acknowledgements")
    time.sleep(1.2)  # let a checkpoint with some updates land
    learner.send_signal(signal.SIGKILL)
    learner.wait()
    durable = len(read_records(run)["a0"])  # what the dead learner had flushed
    acked = read_status(status)["acked_seq"]
    assert acked <= durable, "an acknowledged record must be on disk"
    learner, _ = start_learner(run, *common, port=port, log_name="learner2.log")
    try:
        code, out = finish(actor, timeout_s=60)
        assert code == 0, out
        summary = actor_summary(out)
    finally:
        assert stop_learner(learner) == 0, learner_output(run, "learner2.log")
    restart_log = learner_output(run, "learner2.log")
    assert f"{durable} records from the replay log" in restart_log, restart_log
    records = read_records(run)["a0"]
    assert_exactly_once(records, summary["last_seq"])
    check_content(records)
    assert sum(r.is_step for r in records) == 400 and summary["reconnects"] >= 1
    versions = [r.policy_version for r in records if r.is_step]
    assert versions == sorted(versions), "weights versions only move forward, also across the restart"
    assert versions[-1] > versions[0]


def test_actor_survives_learner_absence_and_catches_up(tmp_path: Path) -> None:
    run, status = tmp_path / "run", tmp_path / "actor.json"
    common = ("--train.total-env-steps", "100000", "--flush-period-s", "0.2", "--max-update-ratio", "0.2")
    learner, port = start_learner(run, *common)
    actor = start_actor(port, "a0", "--max-steps", "500", "--control-hz", "50", "--status-file", str(status))
    wait_for(lambda: read_status(status).get("acked_seq", 0) > 20, 40, "the actor to start streaming")
    learner.send_signal(signal.SIGKILL)
    learner.wait()
    wait_for(lambda: not read_status(status).get("connected", True), 10, "the actor to notice")
    before = read_status(status)
    time.sleep(3.0)  # the learner is away: the control loop must keep stepping and buffering
    during = read_status(status)
    assert during["steps"] >= before["steps"] + 100, (before, during)
    assert during["pending"] > before["pending"] and during["dropped_steps"] == 0
    learner, _ = start_learner(run, *common, port=port, log_name="learner2.log")
    try:
        code, out = finish(actor, timeout_s=60)
        assert code == 0, out
        summary = actor_summary(out)
    finally:
        stop_learner(learner)
    assert summary["pending"] == 0 and summary["acked_seq"] == summary["last_seq"]
    records = read_records(run)["a0"]
    assert_exactly_once(records, summary["last_seq"])
    assert sum(r.is_step for r in records) == 500


def test_corrupted_chunk_is_detected_and_reported(tmp_path: Path) -> None:
    run = tmp_path / "run"
    learner, port = start_learner(run, "--flush-period-s", "0.1")
    try:
        code, out = finish(
            start_actor(port, "a0", "--max-steps", "120", "--control-hz", "200", "--send-batch", "8")
        )
        assert code == 0, out
    finally:
        stop_learner(learner)
    segment = sorted((run / "replay_log").glob("segment_*.rrl"))[0]
    data = bytearray(segment.read_bytes())
    data[8 + CHUNK_HEADER.size + 10] ^= 0x55  # a byte inside the payload of the segment's chunk 0
    segment.write_bytes(bytes(data))
    with pytest.raises(RuntimeError) as err:
        start_learner(run, log_name="learner2.log")
    message = str(err.value)
    assert f"{segment}: chunk 0 at byte 8: checksum mismatch" in message, message
