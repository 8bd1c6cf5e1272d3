"""Env steps/s of the batched simulator against num_envs, per task, with two peers measured in the same run.

    python bench/batched_sim.py [--tasks reach pick_cube peg_insert push] [--num-envs 1 4 16 64 256]
                                [--backend mujoco-threads] [--env-steps 4000] [--threads N]

For each task: the single CPU env (``make_env``) stepping random actions with its resets, the time of raw
``mujoco.mj_step`` inside those same env steps (the physics alone, one thread), and the batched env at every
``num_envs`` (random actions, auto-reset on), each run for about ``--env-steps`` world steps. Reported:

- ``vs single env``: batched env steps/s over the single CPU env's;
- ``per core vs raw mj_step``: batched env steps/s per thread over raw single-thread ``mj_step`` (what share of
  a core's bare physics rate each thread delivers as env steps, resets and Python included);
- ``vs raw threads``: batched env steps/s over raw ``mj_step`` of the same worlds on the same threads.

Results go to ``bench/results/batched_sim/``.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ThreadPoolExecutor

import mujoco
import numpy as np
import torch
from _recipe import run_stamp, write_results

from robot_rl.envs.contract import ACTION_DIM
from robot_rl.sim import TASKS, make_env
from robot_rl.sim.batched import BACKENDS, BatchedEnvConfig, make_batched_env


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


def batched_env(task: str, num_envs: int, backend: str, threads: int | None, env_steps: int) -> dict:
    env = make_batched_env(task, BatchedEnvConfig(num_envs, backend, threads))
    env.reset(seed=0)
    steps = max(env_steps // num_envs, 10)
    rng = np.random.default_rng(0)
    env.step(env.actions)  # warm-up (thread start)
    start = time.perf_counter()
    for _ in range(steps):
        env.actions.copy_(torch_uniform(rng, num_envs))
        env.step(env.actions)
    elapsed = time.perf_counter() - start
    raw = raw_threads(env, steps)
    env.close()
    return {
        "num_envs": num_envs,
        "threads": env.physics.num_threads,
        "steps_per_s": num_envs * steps / elapsed,
        "raw_threads_steps_per_s": raw,
    }


def raw_threads(env, steps: int) -> float:
    """Env steps/s of bare ``mj_step`` (the env's substeps per step) on the env's worlds and thread count."""
    physics = env.physics
    worlds = [(w.scene.model, w.scene.data) for w in physics.worlds]
    substeps = env.cfg.substeps
    shares = np.array_split(np.arange(len(worlds)), physics.num_threads)

    def run(share: np.ndarray) -> None:
        for _ in range(steps):
            for i in share:
                mujoco.mj_step(*worlds[i], nstep=substeps)

    start = time.perf_counter()
    with ThreadPoolExecutor(physics.num_threads) as pool:
        list(pool.map(run, shares))
    return len(worlds) * steps / (time.perf_counter() - start)


def torch_uniform(rng: np.random.Generator, n: int) -> torch.Tensor:
    return torch.from_numpy(rng.uniform(-1, 1, (n, ACTION_DIM)).astype(np.float32))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument("--num-envs", nargs="+", type=int, default=[1, 4, 16, 64, 256])
    parser.add_argument("--backend", default=BACKENDS[0], choices=BACKENDS)
    parser.add_argument("--threads", type=int, default=None, help="worker threads (default: one per core)")
    parser.add_argument("--env-steps", type=int, default=4000, help="world steps per measurement")
    args = parser.parse_args()
    stamp, results = run_stamp(), []
    print("| task | num_envs | threads | env steps/s | vs single env | per core vs raw mj_step | vs raw threads |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for task in args.tasks:
        single, raw = single_env(task, args.env_steps // 4)
        print(f"| {task} | single CPU env | 1 | {single:,.0f} | 1.00x | {single / raw:.0%} | |")
        for n in args.num_envs:
            row = batched_env(task, n, args.backend, args.threads, args.env_steps)
            row |= {"task": task, "single_env_steps_per_s": single, "raw_mj_step_steps_per_s": raw}
            results.append(row)
            print(
                f"| {task} | {n} | {row['threads']} | {row['steps_per_s']:,.0f} | "
                f"{row['steps_per_s'] / single:.2f}x | {row['steps_per_s'] / row['threads'] / raw:.0%} | "
                f"{row['steps_per_s'] / row['raw_threads_steps_per_s']:.0%} |",
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
