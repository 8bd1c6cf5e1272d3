"""Symmetry augmentation: env steps to 80% / 90% success with the task's declared group against without it,
and the negative control that moves the states but not the actions.

    python bench/symmetry.py --task reach --demos 10 --budget 6000 --eval-every 500 --seeds 0 1 2
    python bench/symmetry.py --methods symmetry --mode copies --copies 3 ...   # one variant at a time
    python bench/symmetry.py --task reach --obs pixels --batch-size 128 --utd 2 ...   # images warped too

Per seed: ``--demos`` scripted demos (noise 0.1, the seed's own) recorded once and put in every method's demo
buffer; the CPU quick-start recipe of ``robot-rl train``; the same budget and evaluation (every
``--eval-every`` env steps on the held-out seeds). ``none`` trains without augmentation, ``symmetry`` with
``--symmetry.mode MODE`` over the task's group, ``states_only`` the same with ``--symmetry.actions false``.
Results go to ``bench/results/symmetry/`` with date, commit and CPU.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from _recipe import (
    add_recipe_args,
    print_threshold_table,
    recipe_config,
    results_name,
    run_stamp,
    threshold_row,
    write_results,
)

from robot_rl.data.symmetry import SymmetryConfig
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.loop import Trainer
from robot_rl.training.record import record_scripted_demos

METHODS = ("none", "symmetry", "states_only")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser, budget=6_000, eval_every=500)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--mode", default="random", choices=["random", "copies"])
    parser.add_argument("--fraction", type=float, default=SymmetryConfig.fraction)
    parser.add_argument("--copies", type=int, default=SymmetryConfig.copies)
    parser.add_argument("--obs", default="state", choices=["state", "pixels"])
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=None, help="default: the recipe's")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_symmetry"))
    args = parser.parse_args()
    env_config = EnvConfig(task=args.task, obs=args.obs, image_size=args.image_size)

    stamp = run_stamp()
    results: dict[str, list[dict]] = {}
    for seed in args.seeds:
        folder = args.out / f"{stamp}-{args.task}-s{seed}"
        demos = folder / "demos"
        record_scripted_demos(make_env_from_config(env_config), args.task, args.demos, demos, noise_std=0.1,
                              seed=seed)
        for method in args.methods:
            symmetry = SymmetryConfig() if method == "none" else SymmetryConfig(
                mode=args.mode, fraction=args.fraction, copies=args.copies, actions=method == "symmetry",
                force=method == "states_only")
            batch = {} if args.batch_size is None else {"batch_size": args.batch_size}
            cfg = recipe_config(args, seed, demos=demos, run_dir=folder / method, obs=args.obs,
                                image_size=args.image_size, symmetry=symmetry, **batch)
            start = time.time()
            Trainer(cfg).run()
            row = threshold_row(seed, cfg.run_dir, args.eval_episodes, start)
            results.setdefault(method, []).append(row)
            print(method, json.dumps(row), flush=True)

    saved = write_results("symmetry", results_name(stamp, args, args.obs, args.mode, *args.methods),
                          vars(args) | {"results": results})
    print(f"results: {saved}")
    print_threshold_table(results, args.budget)


if __name__ == "__main__":
    main()
