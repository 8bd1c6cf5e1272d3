"""Residual RL over a deliberately weak base: a BC policy cloned from a few demos, then a bounded residual
learned over it, against RLPD from scratch with the same demos and against the frozen base itself.

    python bench/residual.py --task pick_cube --base-demos 3 --budget 8000 --eval-every 1000 --seeds 0 1 2
    python bench/residual.py --methods residual --residual-scale 0.4 ...        # one variant at a time
    python bench/residual.py --methods residual --exploration-std 0.25 ...      # or --target-entropy -14

Per seed: ``--base-demos`` scripted demos (noise 0.1, the seed's own), ``robot-rl train-bc`` on them (chunks
of 4, temporal ensembling), the base's deterministic success on the held-out evaluation seeds, then each
method with those same demos in its demo buffer and the same budget, recipe and evaluation (every
``--eval-every`` env steps on the same held-out seeds). ``residual`` is ``--preset residual --base-policy
BC_RUN``; ``rlpd`` the CPU quick-start preset ``robot-rl train`` uses; ``jsrl`` that preset with the BC
policy as a jump-start guide (``--guide.policy BC_RUN``). Results go to
``bench/results/residual/`` with date, commit and CPU; the table reports steps to 80% and 90%, the final
success and its lower 95% bound against the base's success + 30 points; ``--final-episodes N`` also evaluates
the base and every run's final policy on N held-out episodes, for a tighter bound. ``--base-band 0.2 0.5``
redraws a seed's base demos (demo seed ``seed + 1000 * k``) until the base succeeds part of the time, as the
experiment asks; the draw used is in the results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

from _recipe import (
    add_recipe_args,
    final_evaluation,
    print_threshold_table,
    recipe_config,
    results_name,
    run_stamp,
    threshold_row,
    write_results,
)

from robot_rl.training.bc import BCConfig, train_bc
from robot_rl.training.config import PRESETS
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.guide import GuideConfig
from robot_rl.training.loop import Trainer
from robot_rl.training.record import record_scripted_demos


def weak_base(args: argparse.Namespace, seed: int, out: Path, draw: int = 0) -> tuple[Path, Path, float]:
    """(demo folder, BC run folder, the base's success on the held-out seeds) for ``seed``; ``draw`` > 0 clones
    from demos of another demo seed (``seed + 1000 * draw``)."""
    suffix = f"-draw{draw}" if draw else ""
    demos, bc = out / f"demos{suffix}", out / f"bc{suffix}"
    env = make_env_from_config(EnvConfig(task=args.task))
    record_scripted_demos(env, args.task, args.base_demos, demos, noise_std=0.1, seed=seed + 1000 * draw)
    config = BCConfig(demos=demos, env=EnvConfig(task=args.task), chunk=args.chunk, steps=args.bc_steps,
                      eval_episodes=args.eval_episodes, seed=seed, run_dir=bc, torch_threads=args.threads)
    _, result = train_bc(config, say=lambda _: None)
    assert result is not None and result.success_rate is not None
    return demos, bc, result.success_rate


def base_in_band(args: argparse.Namespace, seed: int, out: Path) -> tuple[Path, Path, float, dict | None, int]:
    """``weak_base`` redrawn until its success lies in ``--base-band`` (measured on ``--final-episodes`` held-out
    episodes when given): the experiment asks for a base that works part of the time. Returns the base, its
    success on the curve's evaluation episodes, its final evaluation (or None) and the draw used."""
    tried = []
    for draw in range(args.base_draws if args.base_band else 1):
        demos, bc, success = weak_base(args, seed, out, draw)
        final = final_evaluation(bc, args.final_episodes) if args.final_episodes else None
        measured = final["success"] if final else success
        if not args.base_band or args.base_band[0] <= measured <= args.base_band[1]:
            return demos, bc, success, final, draw
        tried.append(f"{measured:.0%}")
        print(f"seed {seed}: base draw {draw} at {measured:.0%}, outside {args.base_band}", flush=True)
    raise SystemExit(f"seed {seed}: no base within --base-band {args.base_band} in {args.base_draws} draws "
                     f"(successes {', '.join(tried)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser, budget=8_000, eval_every=1_000)
    parser.add_argument("--methods", nargs="+", default=["residual", "rlpd", "jsrl"],
                        choices=["residual", "rlpd", "jsrl"])
    parser.add_argument("--base-demos", type=int, default=3, help="demos the BC base is cloned from")
    parser.add_argument("--chunk", type=int, default=4, help="BC action chunk")
    parser.add_argument("--bc-steps", type=int, default=2_000, help="BC gradient steps")
    residual = PRESETS["residual"]
    parser.add_argument("--residual-scale", type=float, default=residual.residual_scale)
    parser.add_argument("--residual-gripper-scale", type=float, default=residual.residual_gripper_scale,
                        help="the residual's bound on the gripper latch (1.5: any command from any base command)")
    parser.add_argument("--warmup", type=int, default=residual.critic_warmup_updates, help="critic warm-up updates")
    parser.add_argument("--target-entropy", type=float, default=None, help="residual's target entropy")
    parser.add_argument("--exploration-std", type=float, default=None,
                        help="residual's fixed exploration std (in units of its bound; no entropy term)")
    parser.add_argument("--guide-schedule", default="curriculum", choices=["curriculum", "random"])
    parser.add_argument("--final-episodes", type=int, default=0,
                        help="also evaluate the base and each run's final policy on this many held-out episodes")
    parser.add_argument("--base-band", type=float, nargs=2, metavar=("LO", "HI"), default=None,
                        help="redraw a seed's base demos until the base's success lies in [LO, HI]")
    parser.add_argument("--base-draws", type=int, default=5, help="draws tried for --base-band")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_residual"))
    args = parser.parse_args()

    stamp = run_stamp()
    results: dict[str, list[dict]] = {}
    bases, base_final, base_draws = {}, {}, {}
    for seed in args.seeds:
        folder = args.out / f"{stamp}-{args.task}-s{seed}"
        demos, bc, base_success, final, base_draws[seed] = base_in_band(args, seed, folder)
        bases[seed] = base_success
        if final:
            base_final[seed] = final
        print(f"seed {seed}: base (BC on {args.base_demos} demos, draw {base_draws[seed]}) {base_success:.0%}",
              flush=True)
        for method in args.methods:
            cfg = recipe_config(args, seed, demos=demos, run_dir=folder / method)
            if method == "residual":
                cfg = dataclasses.replace(
                    cfg, preset="residual", env=dataclasses.replace(cfg.env, base_policy=str(bc)),
                    agent=dataclasses.replace(cfg.agent, residual_scale=args.residual_scale,
                                              residual_gripper_scale=args.residual_gripper_scale,
                                              critic_warmup_updates=args.warmup,
                                              target_entropy=args.target_entropy,
                                              exploration_std=args.exploration_std))
            if method == "jsrl":
                cfg = dataclasses.replace(cfg, guide=GuideConfig(policy=str(bc), schedule=args.guide_schedule))
            start = time.time()
            Trainer(cfg).run()
            row = threshold_row(seed, cfg.run_dir, args.eval_episodes, start, base_success=base_success)
            if args.final_episodes:
                row["final_evaluation"] = final_evaluation(cfg.run_dir, args.final_episodes)
            results.setdefault(method, []).append(row)
            print(method, json.dumps(row), flush=True)
            # after every run, so a benchmark stopped part-way keeps the runs it finished
            saved = write_results("residual", results_name(stamp, args, "state", *args.methods),
                                  vars(args) | {"results": results, "base_success": bases,
                                                "base_final_evaluation": base_final, "base_draw": base_draws})
    print(f"results: {saved}")
    print_threshold_table(results, args.budget, base=True)


if __name__ == "__main__":
    main()
