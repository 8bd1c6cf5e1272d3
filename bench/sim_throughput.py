"""Env steps/s of every task (state and pixels) against raw ``mujoco.mj_step`` of the same model, same run.

    python bench/sim_throughput.py [--steps 2000] [--pixel-steps 200] [--image-size 128]

Overhead = (time per env step) / (time inside raw mj_step for that env step) - 1, timed around the same
mj_step calls (same contacts, same motion), so machine noise hits both. Goal: state-mode overhead <= 30%.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is imported

import mujoco
from _recipe import run_stamp, write_results

from robot_rl.sim import TASKS, make_env, make_expert


def time_env(task: str, steps: int, **overrides) -> tuple[float, float, object]:
    """(seconds per env step, seconds of raw ``mj_step`` physics per env step, env) over the same transitions.

    The physics time is measured around the very ``mj_step`` calls the env makes, so both figures cover the
    same contacts and motions; the difference is the env's own overhead (controller target, observation,
    reward terms, rendering)."""
    env = make_env(task, **overrides)
    env.reset(seed=0)
    expert = make_expert(env, noise_std=0.3, seed=0)  # realistic contact-rich motion, not idling
    physics = [0.0]
    model, data = env.scene.model, env.scene.data

    def timed_step(nstep: int) -> None:
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=nstep)
        physics[0] += time.perf_counter() - start

    total = 0.0
    for _ in range(steps):
        action = expert.act(env.scene)
        env.scene.step = timed_step  # only inside env.step: resets are not timed
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        total += time.perf_counter() - start
        del env.scene.step
        if terminated or truncated:
            env.reset()
            expert.reset()
    return total / steps, physics[0] / steps, env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="env steps per state measurement")
    parser.add_argument("--pixel-steps", type=int, default=200, help="env steps per pixel measurement")
    parser.add_argument("--image-size", type=int, default=128)
    args = parser.parse_args()

    rows = []
    for task in sorted(TASKS):
        for mode, steps in (("state", args.steps), ("pixels", args.pixel_steps)):
            per_step, physics, env = time_env(task, steps, obs_mode=mode, image_size=args.image_size)
            rows.append((task, mode, 1.0 / per_step, 1.0 / physics, per_step / physics - 1.0))
            env.close()
    print(f"| task | obs | env steps/s | raw mj_step only, steps/s | overhead vs raw | (images {args.image_size}px)")
    print("|---|---|---|---|---|")
    for task, mode, env_sps, raw_sps, overhead in rows:
        print(f"| {task} | {mode} | {env_sps:,.0f} | {raw_sps:,.0f} | {overhead * 100:+.0f}% |")
    keys = ("task", "obs", "env_steps_per_s", "raw_mj_step_per_s", "overhead")
    saved = write_results("sim_throughput", f"{run_stamp()}.json",
                          vars(args) | {"results": [dict(zip(keys, row)) for row in rows]})
    print(f"results: {saved}")


if __name__ == "__main__":
    main()
