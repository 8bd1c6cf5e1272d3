"""The robot bridge's per-step cost at 100 Hz with its input checks, against the bridge of another git revision
(the peer: e.g. the one before the checks), in the same run.

One control step is what the bridge does in 10 ms of a 100 Hz loop fed by a driver: a TCP pose, a joint state
and a wrench message, one ``rl/action`` (through the safety filter to a ``target_pose`` command) and one watchdog
tick. The callbacks run in-process on a real rclpy node with real publishers (no subscribers, so no DDS
transfer); the time per step is the bridge's own CPU on the observation -> command path. Rounds alternate
between this tree and the peer's (``git worktree`` of ``--peer``, in a subprocess each, since both are
``robot_rl``), and the median round of each is reported, with their ratio.

    python bench/bridge_overhead.py --peer 1bc9848 [--rounds 5] [--steps 3000]
    python bench/bridge_overhead.py --measure      # one round of this tree (what each subprocess runs)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(steps: int) -> dict:
    """Per-step time (µs) of this process's ``robot_rl`` bridge on the sim_panda config."""
    import numpy as np
    import rclpy
    from geometry_msgs.msg import WrenchStamped
    from rclpy.context import Context
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from robot_rl.envs import names
    from robot_rl.ros.bridge import RobotBridge
    from robot_rl.ros.hardware import load_arm_config
    from robot_rl.ros.messages import named_vector, pose_msg

    context = Context()
    rclpy.init(context=context)
    node = Node("bench_bridge", context=context)
    arm = load_arm_config("sim_panda")
    RobotBridge(node, arm, state_hz=500.0)
    callbacks = {s.topic_name.lstrip("/"): s.callback for s in list(node.subscriptions)}
    tick = next(iter(node.timers)).callback  # the watchdog / streaming tick is the bridge's first timer
    joints = [*arm.joint_names, *arm.gripper.joint_names]
    position, rotation = np.array([0.5, 0.0, 0.3]), np.diag([1.0, -1.0, -1.0])
    rng = np.random.default_rng(0)
    times = []
    for i in range(steps + 200):
        stamp = node.get_clock().now().to_msg()
        t0 = time.perf_counter()
        js = JointState(name=joints, position=[0.0] * 7 + [0.04, 0.04], velocity=[0.0] * 9)
        js.header.stamp = stamp
        callbacks[arm.topics.joint_states](js)
        wrench = WrenchStamped()
        wrench.header.stamp, wrench.header.frame_id = stamp, arm.base_frame
        callbacks[arm.topics.wrench](wrench)
        position = position + rng.normal(0, 1e-4, 3)
        callbacks[arm.topics.current_pose](pose_msg(position, rotation, arm.base_frame, stamp))
        callbacks[names.ACTION](named_vector(names.ACTION_NAMES, rng.uniform(-0.3, 0.3, 7), stamp))
        tick()
        if i >= 200:  # the first steps warm caches and the filter up
            times.append((time.perf_counter() - t0) * 1e6)
        time.sleep(0.0005)  # time passes between steps, as at 100 Hz (the watchdog sees fresh actions)
    node.destroy_node()
    rclpy.try_shutdown(context=context)
    a = np.asarray(times)
    return {"steps": len(a), "p50_us": float(np.percentile(a, 50)), "p99_us": float(np.percentile(a, 99)),
            "mean_us": float(a.mean())}


def run_round(tree: Path, steps: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree), ROS_DOMAIN_ID="97", ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    out = subprocess.run([sys.executable, str(REPO / "bench" / "bridge_overhead.py"), "--measure", "--steps",
                          str(steps)], env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--peer", default="", help="git revision of the peer bridge (e.g. before the checks)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.steps)))
        return
    if not args.peer:
        parser.error("--peer REV is required (the revision to compare against)")
    with tempfile.TemporaryDirectory() as tmp:
        peer = Path(tmp) / "peer"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(peer), args.peer], check=True,
                       capture_output=True)
        try:
            ours, theirs = [], []
            for r in range(args.rounds):
                ours.append(run_round(REPO, args.steps))
                theirs.append(run_round(peer, args.steps))
                print(f"round {r + 1}: ours p50 {ours[-1]['p50_us']:.1f} µs, peer p50 {theirs[-1]['p50_us']:.1f} µs",
                      flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(peer)], check=True)
    for key in ("p50_us", "p99_us", "mean_us"):
        a, b = statistics.median(x[key] for x in ours), statistics.median(x[key] for x in theirs)
        print(f"{key}: ours {a:.1f}, peer {args.peer} {b:.1f}, ratio {a / b:.2f}x")
    from _recipe import run_stamp, write_results  # here: --measure rounds (also the peer's) stay light

    saved = write_results("bridge_overhead", f"{run_stamp()}.json", vars(args) | {"ours": ours, "peer": theirs})
    print(f"results: {saved}")


if __name__ == "__main__":
    main()
