"""The whole real-robot path learns: sim_robot + robot_bridge + policy_actor (``learner=remote``) + ``robot-rl
learner`` learn ``reach`` over ROS 2 and gRPC in real time (10 Hz), then a second policy_actor evaluates the
learner's checkpoint deterministically over ROS 2. Real processes throughout; the learner sees the arm only
through its spec env (``robot_rl.ros.spec_env:make_contract_env``), as on a GPU box.

The learner starts with 20 scripted reach demos recorded in simulation (same contract, same spaces: the sim is
the ROS arm's twin), as a real user would seed it with demos recorded by teleop. The learner runs at most one
``update()`` per arriving transition (as ``robot-rl train``), so the budget compares with the sim figures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("mujoco")
pytest.importorskip("grpc_tools")

from conftest import ros_session
from ros_harness import wait_for

from robot_rl.sim import make_env
from robot_rl.training.record import record_scripted_demos

NS = "/arm"
BUDGET = 6000  # env steps over ROS (about 11 min at 10 Hz with resets; sim reach: 87% at 4k, 97% at 5k)
# 4.5k gave 95% once and 75% in a CI run: the real-time path is not seeded, so the budget keeps a margin.
EVAL_EPISODES = 20
EPISODE_STEPS = 40  # the sim reach task's time limit
TOKEN = "ros-learning-test-token-0123456789"
SPEC_ENV = "robot_rl.ros.spec_env:make_contract_env"


def start_learner(run: Path, demos: Path) -> subprocess.Popen:
    cmd = [
        sys.executable, "-m", "robot_rl.cli", "learner", "--train.env-factory", SPEC_ENV,
        "--train.env-kwargs", json.dumps({"privileged_task": "reach"}), "--train.run-dir", str(run),
        "--train.demos", str(demos), "--train.total-env-steps", str(BUDGET), "--train.learning-starts", "200",
        "--train.torch-threads", "1", "--train.no-progress", "--link.port", "0", "--no-evaluate",
        "--weights-period-s", "1", "--checkpoint-period-s", "30",
        "--train.agent.compile", "off",  # paced by the 10 Hz robot: compiling gains nothing, its burst competes
    ]  # fmt: skip
    log = open(run.parent / "learner.log", "wb")  # noqa: SIM115 - the child owns it
    return subprocess.Popen(cmd, env={**os.environ, "ROBOT_RL_TOKEN": TOKEN}, stdout=log,
                            stderr=subprocess.STDOUT)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_reach_is_learned_over_ros2_with_a_remote_learner(tmp_path: Path, monkeypatch) -> None:
    demos = tmp_path / "demos"
    _, stats = record_scripted_demos(make_env("reach"), "reach", 20, demos, noise_std=0.1, seed=0)
    assert stats.kept == 20
    run = tmp_path / "run"
    learner = start_learner(run, demos)
    monkeypatch.setenv("ROBOT_RL_TOKEN", TOKEN)  # the actor node reads it from its environment
    env_params = {"env.privileged_task": "reach", "env.max_episode_steps": EPISODE_STEPS, "env.reward": True}
    try:
        address = run / "learner_address.json"
        wait_for(lambda: address.exists() or learner.poll() is not None, 60.0, "the learner to listen")
        assert learner.poll() is None, (tmp_path / "learner.log").read_text()
        port = json.loads(address.read_text())["port"]
        with ros_session("learning", tmp_path, namespace=NS) as (procs, _):
            procs.start("sim_robot", namespace=NS)
            procs.start("robot_bridge", namespace=NS)
            procs.start("policy_actor", namespace=NS, **env_params, **{
                "actor.learner": "remote", "actor.learner_address": f"127.0.0.1:{port}",
                "actor.deterministic": False, "actor.actor_id": "ros-arm"})
            # The learner stops the actor once BUDGET transitions arrived, then checkpoints and exits.
            deadline = time.monotonic() + 950
            while learner.poll() is None and time.monotonic() < deadline:
                time.sleep(1.0)
            assert learner.poll() == 0, (tmp_path / "learner.log").read_text()[-3000:] + procs.logs()[-3000:]

            stats_path = tmp_path / "eval.json"
            evaluator = procs.start("policy_actor", name="evaluator", namespace=NS, **env_params, **{
                "actor.policy": "checkpoint", "actor.checkpoint": str(run), "actor.deterministic": True,
                "actor.episodes": EVAL_EPISODES, "actor.stats_path": str(stats_path), "actor.seed": 1})
            evaluator.wait(timeout=EVAL_EPISODES * EPISODE_STEPS / 10 * 3 + 60)
            result = json.loads(stats_path.read_text())
    finally:
        if learner.poll() is None:
            learner.kill()
    metrics = (run / "metrics.csv").read_text()
    assert "episode," in metrics  # the learner logged the ROS episodes it trained on
    assert result["episodes"] == EVAL_EPISODES
    success = result["successes"] / result["episodes"]
    assert success >= 0.8, f"reach over ROS 2: {success:.0%} deterministic success after {BUDGET} steps ({result})"
