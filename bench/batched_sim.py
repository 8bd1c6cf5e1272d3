"""Env steps/s of the batched simulator against num_envs, per task and backend, with peers from the same run.

    python bench/batched_sim.py [--tasks reach pick_cube peg_insert push] [--num-envs 1 4 16 64 256]
                                [--backend mujoco-threads|warp] [--device cpu|cuda] [--env-steps 4000]
                                [--threads N]

For each task: the single CPU env (``make_env``) stepping random actions with its resets, the time of raw
``mujoco.mj_step`` inside those same env steps (the physics alone, one thread), and the batched env at every
``num_envs`` (random actions, auto-reset on), each for about ``--env-steps`` world steps (at least 10 vector
steps). Reported:

- ``vs single env``: batched env steps/s over the single CPU env's;
- ``per core vs raw mj_step`` (``mujoco-threads``): batched env steps/s per thread over raw single-thread
  ``mj_step``, what share of a core's bare physics rate each thread delivers as env steps (resets, gate,
  observations and rewards included);
- ``vs bare physics``: batched env steps/s over the backend stepping the same worlds with nothing else (the
  physics through the same backend: threads stepping MjData, or MuJoCo Warp's step), what the env costs on
  top of its physics.

Results go to ``bench/results/batched_sim/``.
"""

from __future__ import annotations

import argparse
import time

import mujoco
import numpy as np
import torch
from _recipe import run_stamp, write_results

from robot_rl.envs.contract import ACTION_DIM
from robot_rl.sim import TASKS, make_env
from robot_rl.sim.batched import BACKENDS, BatchedEnvConfig, WarpConfig, make_batched_env


def single_env(task: str, env_steps: int, seed: int = 0) -> tuple[float, float]:
    """(env steps/s of the CPU env with its resets, env steps/s of the raw ``mj_step`` inside its steps)."""
    env = make_env(task)
    env.reset(seed=seed)
    actions = np.random.default_rng(seed).uniform(-1, 1, (env_steps, ACTION_DIM)).astype(np.float32)
    model, data, physics = env.scene.model, env.scene.data, [0.0]

    def timed_step(nstep: int) -> None:
        start = time.perf_counter()
        mujoco.mj_step(model, data, nstep=nstep)
        physics[0] += time.perf_counter() - start

    total = 0.0
    for action in actions:
        start = time.perf_counter()
        env.scene.step = timed_step  # raw physics timed inside env.step only
        _, _, terminated, truncated, _ = env.step(action)
        del env.scene.step
        if terminated or truncated:
            env.reset()
        total += time.perf_counter() - start
    env.close()
    return env_steps / total, env_steps / physics[0]


def batched_env(task: str, num_envs: int, args: argparse.Namespace) -> dict:
    config = BatchedEnvConfig(num_envs, args.backend, args.threads, seed=0,
                              warp=WarpConfig(device=args.device, start_pool=args.start_pool))
    env = make_batched_env(task, config)
    env.reset(seed=0)
    steps = max(args.env_steps // num_envs, 10)
    generator = torch.Generator(device=env.device).manual_seed(0)
    env.step(env.actions)  # warm-up: thread start, kernel load, graph capture
    synchronize(env)
    start = time.perf_counter()
    for _ in range(steps):
        env.actions.uniform_(-1.0, 1.0, generator=generator)
        env.step(env.actions)
    synchronize(env)
    elapsed = time.perf_counter() - start
    bare = bare_physics(env, steps)
    env.close()
    physics = env.physics
    return {
        "num_envs": num_envs,
        "threads": getattr(physics, "num_threads", None),
        "device": str(env.device),
        "steps_per_s": num_envs * steps / elapsed,
        "bare_physics_steps_per_s": bare,
    }


def bare_physics(env, steps: int) -> float:
    """Env steps/s of the backend stepping the env's worlds alone (``substeps`` physics steps per env step)."""
    start = time.perf_counter()
    for _ in range(steps):
        env.physics.step(env.cfg.substeps)
    synchronize(env)
    return env.num_envs * steps / (time.perf_counter() - start)


def synchronize(env) -> None:
    if env.device.type == "cuda":
        torch.cuda.synchronize(env.device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 4, 16, 64, 256])
    parser.add_argument("--backend", default=BACKENDS[0], choices=BACKENDS)
    parser.add_argument("--device", default="auto", help="warp backend: cpu, cuda, cuda:N or auto")
    parser.add_argument("--start-pool", type=int, default=1024, help="warp backend: episode starts to draw from")
    parser.add_argument("--threads", type=int, default=None, help="worker threads (default: one per core)")
    parser.add_argument("--env-steps", type=int, default=4000, help="world steps per measurement")
    args = parser.parse_args()
    stamp, results = run_stamp(), []
    print("| task | backend | worlds | threads / device | env steps/s | vs single env | per core vs raw mj_step "
          "| vs bare physics |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for task in args.tasks:
        single, raw = single_env(task, min(args.env_steps // 4, 2000))
        print(f"| {task} | single CPU env | 1 | 1 | {single:,.0f} | 1.00x | {single / raw:.0%} | |")
        for n in args.num_envs:
            row = batched_env(task, n, args)
            row |= {"task": task, "single_env_steps_per_s": single, "raw_mj_step_steps_per_s": raw}
            results.append(row)
            per_core = f"{row['steps_per_s'] / row['threads'] / raw:.0%}" if row["threads"] else ""
            print(
                f"| {task} | {args.backend} | {n} | {row['threads'] or row['device']} | {row['steps_per_s']:,.0f} | "
                f"{row['steps_per_s'] / single:.2f}x | {per_core} | "
                f"{row['steps_per_s'] / row['bare_physics_steps_per_s']:.0%} |",
                flush=True,
            )
    path = write_results(
        "batched_sim",
        f"{stamp}-{args.backend}.json",
        {"backend": args.backend, "env_steps": args.env_steps, "results": results},
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
