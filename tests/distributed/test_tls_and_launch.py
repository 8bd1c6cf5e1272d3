"""TLS with a self-signed certificate made in the test, and ``robot-rl train --actors N`` on a sim task."""

from __future__ import annotations

import csv
import datetime
import ipaddress
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("grpc_tools")
x509 = pytest.importorskip("cryptography.x509")

from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.x509.oid import NameOID  # noqa: E402
from link_helpers import (  # noqa: E402
    actor_summary,
    env_vars,
    finish,
    learner_output,
    read_records,
    start_actor,
    start_learner,
    stop_learner,
)

from robot_rl.data.demos import load_demos  # noqa: E402

pytestmark = pytest.mark.timeout(150)


def self_signed(folder: Path) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "robot-rl-test-learner")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            ),
            False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = folder / "learner.crt", folder / "learner.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


def test_tls_link_and_plaintext_client_refused(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    run = tmp_path / "run"
    learner, port = start_learner(
        run, "--link.tls-cert", str(cert), "--link.tls-key", str(key), "--flush-period-s", "0.2"
    )
    try:
        code, out = finish(start_actor(port, "tls", "--max-steps", "60", "--link.tls-ca", str(cert)))
        assert code == 0, out
        assert actor_summary(out)["acked_seq"] > 60
        code, out = finish(start_actor(port, "plain", "--max-steps", "5", "--connect-timeout-s", "3"))
        assert code == 4 and "no learner at" in out, out  # a plaintext client cannot talk to a TLS learner
    finally:
        stop_learner(learner)
    assert "(TLS)" in learner_output(run)
    assert set(read_records(run)) == {"tls"}


def test_train_with_actors_and_scripted_correctors_writes_the_usual_run_folder(tmp_path: Path) -> None:
    pytest.importorskip("mujoco")
    run = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "robot_rl.cli",
        "train",
        "--actors",
        "2",
        "--task",
        "reach",
        "--total-env-steps",
        "300",
        "--eval-every",
        "150",  # the first evaluation comes before learning starts: the paced actors must be released after it
        "--eval-episodes",
        "2",
        "--scripted-demos",
        "2",
        "--learning-starts",
        "200",
        "--batch-size",
        "16",
        "--agent.hidden-dims",
        "32",
        "32",
        "--agent.num-critics",
        "2",
        "--agent.utd-ratio",
        "1",
        "--torch-threads",
        "1",
        "--no-progress",
        "--teleop",
        "scripted",
        "--corrector.takeover-steps",
        "3",
        "--run-dir",
        str(run),
    ]
    proc = subprocess.run(cmd, env=env_vars(""), capture_output=True, text=True, timeout=80)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in (
        "config.json",
        "metrics.csv",
        "learning_curve.png",
        "checkpoints/latest.pt",
        "replay_log",
        "actor-0.log",
        "actor-1.log",
    ):
        assert (run / name).exists(), name
    assert json.loads((run / "config.json").read_text())["actors"] == 2
    from robot_rl.training.loop import load_agent

    agent, cfg = load_agent(run)  # `robot-rl eval RUN` works on it
    assert cfg.env.task == "reach" and agent.num_critic_updates > 0
    metrics = (run / "metrics.csv").read_text()
    assert "eval," in metrics
    assert "episode," in metrics and "link," in metrics
    # each actor ran its own corrector; the learner put the corrections into its demo buffer
    rows = list(csv.DictReader(metrics.splitlines()))
    rates = [float(r["value"]) for r in rows if r["key"] == "intervention_rate"]
    assert rates and max(rates) > 0
    demos = sum(len(e) for e in load_demos(run / "demos"))
    final = {r["key"]: float(r["value"]) for r in rows if r["kind"] == "link"}
    assert final["demo_transitions"] > demos
