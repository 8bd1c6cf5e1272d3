"""``torchrun --nproc-per-node 2 -m robot_rl.cli train --num-envs N``: two data-parallel replicas (gloo on CPU)
share the worlds, log every world's episodes once, write one checkpoint that loads like any other, and resume.
The replicas' arithmetic against one process is held in tests/agents/test_data_parallel.py."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import torch

from robot_rl.training.loop import load_policy
from robot_rl.training.parallel import DEVICE_REPLAY_FILE

WORLDS = 4
TRAIN = ["--task", "reach", "--num-envs", str(WORLDS), "--backend", "mujoco-threads", "--num-threads", "1",
         "--learning-starts", "100", "--eval-every", "200", "--eval-episodes", "2", "--scripted-demos", "2",
         "--batch-size", "32", "--agent.num-critics", "2", "--agent.hidden-dims", "32", "32",
         "--no-progress", "--torch-threads", "1", "--seed", "5"]


def torchrun(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
                           "-m", "robot_rl.cli", "train", *args], capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def test_two_replicas_train_checkpoint_once_and_resume(tmp_path: Path) -> None:
    run = tmp_path / "run"
    out = torchrun(*TRAIN, "--total-env-steps", "400", "--run-dir", str(run)).stdout
    assert "4 worlds of reach in 2 data-parallel replicas of 2" in out
    assert out.count("run folder:") == 2, out  # the main replica speaks, the other does not
    checkpoints = run / "checkpoints"
    shard = checkpoints / DEVICE_REPLAY_FILE.replace(".pt", ".rank-1.pt")
    assert (checkpoints / "latest.pt").exists() and (checkpoints / DEVICE_REPLAY_FILE).exists() and shard.exists()
    first, second = (torch.load(p, weights_only=False) for p in (checkpoints / DEVICE_REPLAY_FILE, shard))
    assert not torch.equal(first["obs"]["state"], second["obs"]["state"]), "both replicas stepped the same worlds"

    rows = list(csv.DictReader((run / "metrics.csv").open()))
    ended = sum(float(r["value"]) for r in rows if r["key"] == "episodes_ended")
    assert ended >= WORLDS * (400 // WORLDS // 40), f"{ended} episodes logged: one replica's worlds only?"
    policy, config = load_policy(run)  # the one-process checkpoint format: loads for eval and deployment
    assert config.parallel.num_envs == WORLDS and policy is not None

    out = torchrun("--resume", str(run), "--total-env-steps", "600", "--no-progress").stdout
    assert "resumed" in out and "[600 steps] eval" in out
    assert torch.load(checkpoints / "latest.pt", weights_only=False)["env_steps"] == 600


def test_torchrun_without_many_worlds_is_refused(tmp_path: Path) -> None:
    env = {**os.environ, "WORLD_SIZE": "2"}
    proc = subprocess.run([sys.executable, "-m", "robot_rl.cli", "train", "--task", "reach", "--run-dir",
                           str(tmp_path / "run"), "--no-progress"], capture_output=True, text=True, timeout=120,
                          env=env)
    assert proc.returncode != 0 and "give --num-envs N" in proc.stderr + proc.stdout
