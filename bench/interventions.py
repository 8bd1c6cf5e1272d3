"""Interventions vs none: env steps to a success threshold with the same demos, and the intervention rate.

    python bench/interventions.py --task pick_cube --budget 20000 --seeds 0 1 2

Methods: ``demos`` (RLPD with scripted demos, no human) and ``corrector`` (the same demos plus the scripted
corrector taking over when the policy drifts from the expert, HIL-SERL style: interventions go to the
online and the demo buffer). Evaluation is the policy alone, deterministic, on held-out seeds. The
intervention rate is reported over the first and last 10% of training episodes (it should fall).
Results: a markdown table on stdout and JSON under ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np

from robot_rl.agents.config import SACConfig
from robot_rl.teleop.corrector import CorrectorConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.loop import Trainer


def steps_to(curve: list[tuple[int, float]], threshold: float) -> int | None:
    return next((step for step, success in curve if success >= threshold - 1e-9), None)


def rate_first_last(rates: np.ndarray) -> tuple[float, float]:
    """Mean intervention rate over the first and the last 10% of episodes (at least one each)."""
    if len(rates) == 0:
        return float("nan"), float("nan")
    k = max(1, len(rates) // 10)
    return float(rates[:k].mean()), float(rates[-k:].mean())


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
    parser.add_argument("--task", default="pick_cube")
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--methods", nargs="+", default=["demos", "corrector"], choices=["demos", "corrector"])
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--demos", type=int, default=10)
    parser.add_argument("--learning-starts", type=int, default=500)
    parser.add_argument("--utd", type=int, default=SACConfig.utd_ratio)
    parser.add_argument("--num-critics", type=int, default=SACConfig.num_critics)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--drift", type=float, default=CorrectorConfig.threshold, help="corrector threshold")
    parser.add_argument("--takeover-steps", type=int, default=CorrectorConfig.takeover_steps)
    parser.add_argument("--cooldown", type=int, default=5, help="corrector cooldown steps after a hand-back")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_interventions"))
    args = parser.parse_args()

    stamp = time.strftime("%Y%m%d-%H%M%S")
    results: dict[str, list[dict]] = {}
    for method in args.methods:
        for seed in args.seeds:
            corrector = CorrectorConfig(threshold=args.drift, takeover_steps=args.takeover_steps,
                                        cooldown_steps=args.cooldown, seed=seed)
            cfg = TrainConfig(
                task=args.task, total_env_steps=args.budget, eval_every=args.eval_every,
                eval_episodes=args.eval_episodes, seed=seed, progress=False, scripted_demos=args.demos,
                learning_starts=args.learning_starts, video="off", torch_threads=args.threads,
                teleop="scripted" if method == "corrector" else "none", corrector=corrector,
                run_dir=args.out / f"{stamp}-{args.task}-{method}-s{seed}",
                agent=dataclasses.replace(SACConfig(), utd_ratio=args.utd, num_critics=args.num_critics,
                                          hidden_dims=(args.hidden, args.hidden)),
            )
            row = {"seed": seed, **run(cfg)}
            row["steps_to_threshold"] = steps_to(row["curve"], args.threshold)
            row["final_success"] = row["curve"][-1][1] if row["curve"] else None
            results.setdefault(method, []).append(row)
            print(method, json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stamp}-{args.task}.json").write_text(json.dumps(vars(args) | {"results": results},
                                                                   default=str, indent=1))
    pct = f"{args.threshold:.0%}"
    print(f"\n| method | steps to {pct} per seed | median | final success | intervention rate first -> last 10% |")
    print("|---|---|---|---|---|")
    medians = {}
    for method, rows in results.items():
        reached = [r["steps_to_threshold"] if r["steps_to_threshold"] is not None else np.inf for r in rows]
        medians[method] = statistics.median(reached)
        shown = ", ".join(f"{s:.0f}" if np.isfinite(s) else f">{args.budget}" for s in reached)
        finals = ", ".join(f"{r['final_success']:.0%}" for r in rows)
        rates = ", ".join(f"{r['rate_first']:.2f} -> {r['rate_last']:.2f}" for r in rows) if method != "demos" else "-"
        med = f"{medians[method]:.0f}" if np.isfinite(medians[method]) else "not reached"
        print(f"| {method} | {shown} | {med} | {finals} | {rates} |")
    if {"demos", "corrector"} <= set(medians) and np.isfinite(medians["corrector"]):
        print(f"steps-to-{pct} ratio demos / corrector: {medians['demos'] / medians['corrector']:.1f}x")


if __name__ == "__main__":
    main()
