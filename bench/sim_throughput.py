"""Env steps/s of every task (state and pixels) against raw ``mujoco.mj_step`` of the same model, same run.

    python bench/sim_throughput.py [--steps 2000] [--pixel-steps 200] [--image-size 128]

Overhead = (time per env step) / (substeps x time per raw mj_step) - 1, measured back to back on the same
model and state so machine noise hits both. Goal: state-mode overhead <= 30%.
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("MUJOCO_GL", "egl")  # before mujoco is imported

import mujoco
import numpy as np

from robot_rl.sim import TASKS, make_env, make_expert


def time_env(task: str, steps: int, **overrides) -> tuple[float, object]:
    env = make_env(task, **overrides)
    env.reset(seed=0)
    expert = make_expert(env, noise_std=0.3, seed=0)  # realistic contact-rich motion, not idling
    actions_done, elapsed = 0, 0.0
    while actions_done < steps:
        action = expert.act(env.scene)
        start = time.perf_counter()
        _, _, terminated, truncated, _ = env.step(action)
        elapsed += time.perf_counter() - start
        actions_done += 1
        if terminated or truncated:
            env.reset()
            expert.reset()
    return elapsed / steps, env


def time_raw(env, physics_steps: int) -> float:
    model = env.scene.model
    data = mujoco.MjData(model)
    data.qpos[:] = env.scene.data.qpos
    data.ctrl[:] = env.scene.data.ctrl
    data.mocap_pos[:] = env.scene.data.mocap_pos
    data.mocap_quat[:] = env.scene.data.mocap_quat
    start = time.perf_counter()
    mujoco.mj_step(model, data, nstep=physics_steps)
    return (time.perf_counter() - start) / physics_steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000, help="env steps per state measurement")
    parser.add_argument("--pixel-steps", type=int, default=200, help="env steps per pixel measurement")
    parser.add_argument("--image-size", type=int, default=128)
    args = parser.parse_args()

    rows = []
    for task in sorted(TASKS):
        for mode, steps in (("state", args.steps), ("pixels", args.pixel_steps)):
            per_step, env = time_env(task, steps, obs_mode=mode, image_size=args.image_size)
            substeps = env.cfg.substeps
            raw = np.median([time_raw(env, substeps * 200) for _ in range(3)])
            rows.append(
                (task, mode, 1.0 / per_step, 1.0 / (raw * substeps), per_step / (raw * substeps) - 1.0)
            )
            env.close()
    print(
        f"| task | obs | env steps/s | raw mj_step control steps/s | overhead vs raw | (images {args.image_size}px)"
    )
    print("|---|---|---|---|---|")
    for task, mode, env_sps, raw_sps, overhead in rows:
        print(f"| {task} | {mode} | {env_sps:,.0f} | {raw_sps:,.0f} | {overhead * 100:+.0f}% |")


if __name__ == "__main__":
    main()
