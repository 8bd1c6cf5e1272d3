"""Wall-clock to a success threshold: the many-worlds trainer (``--num-envs N``) against the single-env learner,
same task, same recipe, same machine, run one after the other in this process.

    python bench/parallel_training.py --task pick_cube --seeds 0 1 2 --budget 40000 \
        --worlds 16 --updates-per-step 4 --parallel-batch 1024

Both learners use ``robot-rl train``'s recipe (``_recipe.py``: the CPU quick-start preset, the task's scripted
demos) and are evaluated the same way (deterministic actions on the held-out seeds every ``--eval-every`` env
steps); the parallel run changes only what ``--num-envs`` changes: N worlds on the ``mujoco-threads`` backend
(one thread per core), ``--updates-per-step`` agent updates per vector step of N env steps, and its batch
size. "Wall to 90%" is the time from the trainer's construction (demos recorded, worlds built) to the first
evaluation at or above 90%, evaluations included. Results go to ``bench/results/parallel_training/``.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import time
from pathlib import Path

from _recipe import add_recipe_args, recipe_config, run_stamp, write_results

from robot_rl.training.config import ParallelConfig
from robot_rl.training.loop import Trainer
from robot_rl.training.parallel import ParallelTrainer


def eval_curve(run: Path, started: float) -> list[tuple[int, float, float]]:
    """(env steps, success rate, seconds since ``started``) of each evaluation in a run folder."""
    with (run / "metrics.csv").open() as f:
        return [(int(r["step"]), float(r["value"]), round(float(r["time"]) - started, 1))
                for r in csv.DictReader(f) if r["kind"] == "eval" and r["key"] == "success_rate"]


def run(method: str, args: argparse.Namespace, seed: int) -> dict:
    out = args.out / f"{method}-{args.task}-s{seed}"
    if method == "single":
        trainer_type, config = Trainer, recipe_config(args, seed, run_dir=out)
    else:
        parallel = ParallelConfig(num_envs=args.worlds, backend="mujoco-threads",
                                  updates_per_step=args.updates_per_step)
        trainer_type = ParallelTrainer
        config = recipe_config(args, seed, run_dir=out, parallel=parallel, batch_size=args.parallel_batch)
        if method == "parallel_c51":  # the same run with a distributional critic over the task's returns
            config = dataclasses.replace(config, agent=dataclasses.replace(
                config.agent, critic_atoms=args.atoms, critic_v_min=args.v_min, critic_v_max=args.v_max))
    started = time.time()
    trainer_type(config).run()
    curve = eval_curve(out, started)
    reached = next(((s, t) for s, v, t in curve if v >= args.threshold - 1e-9), (None, None))
    return {"method": method, "seed": seed, "curve": curve, "steps_to_threshold": reached[0],
            "wall_to_threshold_s": reached[1], "final_success": curve[-1][1], "wall_s": round(time.time() - started)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recipe_args(parser, budget=40_000, eval_every=2_000)
    parser.add_argument("--methods", nargs="+", default=["single", "parallel"],
                        choices=["single", "parallel", "parallel_c51"])
    parser.add_argument("--atoms", type=int, default=51, help="parallel_c51: atoms of the distributional critic")
    parser.add_argument("--v-min", type=float, default=-1.0, help="parallel_c51: lowest return of its support")
    parser.add_argument("--v-max", type=float, default=1.0, help="parallel_c51: highest return of its support")
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--updates-per-step", type=int, default=4)
    parser.add_argument("--parallel-batch", type=int, default=1024)
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_parallel"))
    args = parser.parse_args()
    stamp, rows = run_stamp(), []
    for seed in args.seeds:
        for method in args.methods:
            rows.append(run(method, args, seed))
            r = rows[-1]
            print(f"{method} seed {seed}: {args.threshold:.0%} at {r['steps_to_threshold']} env steps, "
                  f"{r['wall_to_threshold_s']} s; final {r['final_success']:.0%}; {r['wall_s']} s in all", flush=True)
    print(f"\n| method | seed | steps to {args.threshold:.0%} | wall to {args.threshold:.0%} | final | wall |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['method']} | {r['seed']} | {r['steps_to_threshold'] or f'>{args.budget}'} | "
              f"{r['wall_to_threshold_s'] or '-'} s | {r['final_success']:.0%} | {r['wall_s']} s |")
    settings = {k: getattr(args, k) for k in ("task", "budget", "worlds", "updates_per_step", "parallel_batch",
                                              "threshold", "eval_every", "eval_episodes", "utd", "demos",
                                              "atoms", "v_min", "v_max")}
    path = write_results("parallel_training", f"{stamp}-{args.task}.json", {**settings, "runs": rows})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
