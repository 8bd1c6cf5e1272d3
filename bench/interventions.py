"""Interventions vs none: env steps to a success threshold with the same demos, and the intervention rate.

    python bench/interventions.py --task pick_cube --seeds 0 1 2 --demos 2 --num-critics 10 --eval-every 1000

Methods: ``demos`` (RLPD with scripted demos, no human) and ``corrector`` (the same demos plus the scripted
corrector taking over when the policy drifts from the expert, HIL-SERL style: interventions go to the
online and the demo buffer). Evaluation is the policy alone, deterministic, on held-out seeds. The
intervention rate is reported over the first and last 10% of training episodes (it should fall).
Results: a markdown table on stdout and JSON under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from _recipe import (
    add_corrector_args,
    add_recipe_args,
    corrector_config,
    rate_first_last,
    recipe_config,
    results_name,
    run_stamp,
    steps_columns,
    steps_to,
    write_results,
)

from robot_rl.training.config import TrainConfig
from robot_rl.training.loop import Trainer


def run(cfg: TrainConfig) -> dict:
    start = time.time()
    trainer = Trainer(cfg)
    trainer.run()
    steps, success = trainer.run_dir.read_metrics("eval", "success_rate")
    _, rates = trainer.run_dir.read_metrics("episode", "intervention_rate")
    first, last = rate_first_last(rates)
    curve = list(zip(steps.tolist(), success.tolist()))
    return {"curve": curve, "rate_first": first, "rate_last": last, "episodes": trainer.episodes,
            "demo_transitions": len(trainer.demo_replay), "wall_s": round(time.time() - start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser)
    parser.add_argument("--methods", nargs="+", default=["demos", "corrector"], choices=["demos", "corrector"])
    parser.add_argument("--threshold", type=float, default=0.9)
    add_corrector_args(parser, cooldown=5)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_interventions"))
    args = parser.parse_args()

    stamp = run_stamp()
    results: dict[str, list[dict]] = {}
    for method in args.methods:
        for seed in args.seeds:
            cfg = recipe_config(args, seed, teleop="scripted" if method == "corrector" else "none",
                                corrector=corrector_config(args, seed),
                                run_dir=args.out / f"{stamp}-{args.task}-{method}-s{seed}")
            row = {"seed": seed, **run(cfg)}
            row["steps_to_threshold"] = steps_to(row["curve"], args.threshold)
            row["final_success"] = row["curve"][-1][1] if row["curve"] else None
            results.setdefault(method, []).append(row)
            print(method, json.dumps(row), flush=True)

    saved = write_results("interventions", results_name(stamp, args, *args.methods), vars(args) | {"results": results})
    print(f"results: {saved}")
    pct = f"{args.threshold:.0%}"
    print(f"\n| method | steps to {pct} per seed | median | final success | intervention rate first -> last 10% |")
    print("|---|---|---|---|---|")
    medians = {}
    for method, rows in results.items():
        medians[method], cells = steps_columns(rows, args.budget)
        rates = ", ".join(f"{r['rate_first']:.2f} -> {r['rate_last']:.2f}" for r in rows) if method != "demos" else "-"
        print(f"| {method} | {' | '.join(cells)} | {rates} |")
    if {"demos", "corrector"} <= set(medians) and np.isfinite(medians["corrector"]):
        print(f"steps-to-{pct} ratio demos / corrector: {medians['demos'] / medians['corrector']:.1f}x")


if __name__ == "__main__":
    main()
