"""Sample efficiency: env steps to a success threshold, ours (with / without demos) vs Stable-Baselines3 SAC.

    python bench/learning.py --task pick_cube --budget 20000 --seeds 0 1 2 --methods ours ours_no_demos sb3

Every method is evaluated the same way (deterministic actions, the same held-out seeds, every
``--eval-every`` env steps); "steps to X%" is the first evaluation at or above the threshold. Results are
printed as a markdown table and written as JSON next to the run folders (``--out``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from robot_rl.agents.config import SACConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import make_env_from_config
from robot_rl.training.evaluate import EVAL_SEED_BASE, evaluate
from robot_rl.training.loop import Trainer


def run_ours(cfg: TrainConfig) -> list[tuple[int, float]]:
    trainer = Trainer(cfg)
    trainer.run()
    steps, success = trainer.run_dir.read_metrics("eval", "success_rate")
    return list(zip(steps.tolist(), success.tolist()))


def run_sb3(cfg: TrainConfig) -> list[tuple[int, float]]:
    """SB3 SAC (MultiInputPolicy, its defaults but our network size and batch), no demos."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(cfg.torch_threads)
    env, eval_env = make_env_from_config(cfg), make_env_from_config(cfg)
    curve: list[tuple[int, float]] = []

    class EvalEvery(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % cfg.eval_every == 0:
                policy = lambda o: self.model.predict(o, deterministic=True)[0]  # noqa: E731
                result = evaluate(policy, eval_env, cfg.eval_episodes, EVAL_SEED_BASE)
                curve.append((self.num_timesteps, result.success_rate))
            return True

    model = SAC(
        "MultiInputPolicy",
        env,
        batch_size=cfg.batch_size,
        learning_starts=cfg.learning_starts,
        gradient_steps=cfg.agent.utd_ratio,
        policy_kwargs={"net_arch": list(cfg.agent.hidden_dims)},
        seed=cfg.seed,
        verbose=0,
        device="cpu",
    )
    model.learn(total_timesteps=cfg.total_env_steps, callback=EvalEvery())
    return curve


def steps_to(curve: list[tuple[int, float]], threshold: float) -> int | None:
    return next((step for step, success in curve if success >= threshold - 1e-9), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pick_cube")
    parser.add_argument("--obs", default="state", choices=["state", "pixels"])
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--budget", type=int, default=20_000)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument(
        "--methods",
        nargs="+",
        default=["ours", "ours_no_demos", "sb3"],
        choices=["ours", "ours_no_demos", "sb3"],
    )
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--eval-every", type=int, default=1000)
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--demos", type=int, default=10)
    parser.add_argument("--utd", type=int, default=SACConfig.utd_ratio)
    parser.add_argument("--num-critics", type=int, default=SACConfig.num_critics)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_learning"))
    args = parser.parse_args()

    results: dict[str, list[dict]] = {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for method in args.methods:
        for seed in args.seeds:
            cfg = TrainConfig(
                task=args.task,
                obs=args.obs,
                image_size=args.image_size,
                total_env_steps=args.budget,
                eval_every=args.eval_every,
                eval_episodes=args.eval_episodes,
                seed=seed,
                progress=False,
                scripted_demos=0 if method != "ours" else args.demos,
                video="off",
                run_dir=args.out / f"{stamp}-{args.task}-{args.obs}-{method}-s{seed}",
                agent=dataclasses.replace(SACConfig(), utd_ratio=args.utd, num_critics=args.num_critics),
            )
            start = time.time()
            curve = run_sb3(cfg) if method == "sb3" else run_ours(cfg)
            row = {
                "seed": seed,
                "curve": curve,
                "steps_to_threshold": steps_to(curve, args.threshold),
                "final_success": curve[-1][1] if curve else None,
                "wall_s": round(time.time() - start),
            }
            results.setdefault(method, []).append(row)
            print(method, json.dumps({k: v for k, v in row.items() if k != "curve"}), flush=True)

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{stamp}-{args.task}-{args.obs}.json").write_text(
        json.dumps(vars(args) | {"results": results}, default=str, indent=1)
    )
    pct = f"{args.threshold:.0%}"
    print(f"\n| method | steps to {pct} per seed | median | final success per seed | wall time |")
    print("|---|---|---|---|---|")
    medians = {}
    for method, rows in results.items():
        reached = [r["steps_to_threshold"] for r in rows]
        as_num = [s if s is not None else np.inf for s in reached]
        medians[method] = statistics.median(as_num)
        shown = ", ".join(str(s) if s is not None else f">{args.budget}" for s in reached)
        finals = ", ".join(f"{r['final_success']:.0%}" for r in rows)
        med = "not reached" if np.isinf(medians[method]) else f"{medians[method]:.0f}"
        print(f"| {method} | {shown} | {med} | {finals} | {sum(r['wall_s'] for r in rows)} s |")
    if "ours" in medians and np.isfinite(medians["ours"]):
        for other in ("sb3", "ours_no_demos"):
            if other in medians:
                ratio = medians[other] / medians["ours"]
                bound = (
                    "" if np.isfinite(ratio) else f" (>= {args.budget / medians['ours']:.1f}x: not reached)"
                )
                print(f"steps-to-{pct} ratio {other} / ours: {ratio:.1f}x{bound}")


if __name__ == "__main__":
    main()
