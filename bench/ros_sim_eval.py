"""A trained checkpoint, unchanged, through the ROS 2 sim robot against the CPU env: deterministic success.

    python bench/ros_sim_eval.py RUN [--episodes 20] [--domain 58]

The processes ``ros2 launch robot_rl_ros sim_robot.launch.py task:=T policy:=checkpoint checkpoint:=RUN``
starts, from its launch plan (not a copy of it), started as ``bench/ros_latency.py`` starts its nodes: the sim
robot speaking the driver's topics in real time at the arm's control rate, the robot bridge with its safety
filter, and the policy actor; Fast DDS on loopback, so every observation and command crosses real ROS 2
transport and waits its real latency. The peer: ``robot-rl eval RUN``'s evaluation on the CPU env with the same
episode count. Needs rclpy and the built package (``bash scripts/build_ros.sh``, ``source
ros2_ws/install/setup.bash``). Results go to ``bench/results/ros_sim_eval/``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

from _recipe import run_stamp, write_results
from ros_latency import start_node, stop_nodes


def ros_success(run: Path, task: str, episodes: int, max_steps: int, domain: int, logs: Path) -> dict:
    """Deterministic episodes of ``run`` through the sim robot launch plan; the actor's own stats."""
    from robot_rl_ros.plans import NodePlan, plan

    stats = logs / "actor_stats.json"
    procs: list[subprocess.Popen] = []
    try:
        for p in plan("sim_robot", task=task, policy="checkpoint", checkpoint=str(run)):
            assert isinstance(p, NodePlan)
            overrides = dict(p.overrides)
            if p.spec == "policy_actor":
                overrides.update({"actor.episodes": episodes, "actor.stats_path": str(stats), "actor.seed": 1,
                                  "env.max_episode_steps": max_steps})
            procs.append(start_node(p.spec, domain, logs, p.name, **overrides))
        procs[-1].wait(timeout=episodes * max_steps * 0.1 * 4 + 120)  # the actor stops after its episodes
    finally:
        stop_nodes(procs[::-1])
    if not stats.exists():
        raise SystemExit(f"the policy actor wrote no stats; logs in {logs}")
    return json.loads(stats.read_text())


def cpu_success(run: Path, episodes: int) -> float:
    from robot_rl.training.env_factory import make_env_from_config, success_criterion
    from robot_rl.training.evaluate import EVAL_SEED_BASE, evaluate
    from robot_rl.training.loop import load_policy

    policy, cfg = load_policy(run)
    env = make_env_from_config(cfg.env)
    result = evaluate(lambda o: policy.act(o, deterministic=True), env, episodes, EVAL_SEED_BASE,
                      criterion=success_criterion(cfg.env, env))
    return float(result.success_rate or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="run folder (robot-rl train, also --num-envs)")
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--domain", type=int, default=58, help="ROS_DOMAIN_ID of this benchmark's processes")
    args = parser.parse_args()
    from robot_rl.sim.registry import default_config
    from robot_rl.training.core import load_run_config

    task = load_run_config(args.run).env.task
    max_steps = default_config(task).env.max_episode_steps  # the CPU env's episodes, for a like comparison
    stamp = run_stamp()
    with tempfile.TemporaryDirectory(prefix="ros_sim_eval_") as tmp:
        start = time.monotonic()
        ros = ros_success(args.run, task, args.episodes, max_steps, args.domain, Path(tmp))
        ros_s = time.monotonic() - start
    ros_rate = ros["successes"] / max(ros["episodes"], 1)
    cpu_rate = cpu_success(args.run, args.episodes)
    print(f"{task}, {args.run}: deterministic success over {args.episodes} episodes")
    print(f"  ROS 2 sim robot (real time, {ros['episodes']} episodes in {ros_s:.0f} s): {ros_rate:.0%}")
    print(f"  CPU env (robot-rl eval):                                    {cpu_rate:.0%}")
    path = write_results("ros_sim_eval", f"{stamp}-{task}.json",
                         {"run": str(args.run), "task": task, "episodes": args.episodes, "ros": ros,
                          "ros_success": ros_rate, "ros_seconds": ros_s, "cpu_success": cpu_rate})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
