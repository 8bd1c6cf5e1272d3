"""RLIF with a degraded expert and no task reward: does the policy end up better than the expert?

    python bench/rlif.py --task pick_cube --expert-noise 0.8 --budget 20000 --seeds 0 1 2 3 4

1. The degraded expert (the scripted expert plus ``--expert-noise`` Gaussian action noise) is evaluated alone
   on the held-out evaluation seeds: its success rate is the bar (aim for 50-70%).
2. RLPD trains with ``intervention_mode=rlif``: the learner never sees the task reward (demos recorded by the
   degraded expert with rewards zeroed; online rewards 0 except -1 on the last policy step before each
   takeover). The corrector takes over when the policy drifts from the noise-free plan (probability
   ``--p-drift``, RLIF: 0.95) or at random (``--p-random``, RLIF: 0.05) and then acts *degraded* for k steps.
3. Reported: final deterministic success of the policy alone on the expert's evaluation seeds vs the expert,
   and the intervention rate over the first and last 10% of episodes.
"""

from __future__ import annotations

import argparse
import functools
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
    write_results,
)

from robot_rl.training.evaluate import EVAL_SEED_BASE, evaluate, wilson_interval
from robot_rl.training.loop import Trainer


def expert_success(task: str, noise: float, episodes: int, seed: int = 0) -> float:
    """Success rate of the degraded expert alone on the evaluation seeds."""
    from robot_rl.sim import make_env, make_expert

    env = make_env(task)
    successes = 0
    for i in range(episodes):
        env.reset(seed=EVAL_SEED_BASE + i)
        expert = make_expert(env, noise_std=noise, seed=seed * 100_000 + i)
        done, success = False, False
        while not done:
            _, _, terminated, truncated, info = env.step(expert.act(env.scene))
            success |= bool(info["is_success"])
            done = terminated or truncated
        successes += success
    return successes / episodes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser, eval_episodes=50, seeds=(0, 1, 2, 3, 4))
    parser.add_argument("--expert-noise", type=float, default=0.8)
    parser.add_argument("--expert-episodes", type=int, default=100,
                        help="evaluation seeds of the expert's bar and of each policy's final evaluation")
    add_corrector_args(parser, min_progress=0.3, takeover_steps=4, p_drift=0.95, p_random=0.05)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_rlif"))
    args = parser.parse_args()

    start = time.time()
    bar = expert_success(args.task, args.expert_noise, args.expert_episodes)
    lo, hi = wilson_interval(round(bar * args.expert_episodes), args.expert_episodes)
    print(f"degraded expert (noise {args.expert_noise}): success {bar:.0%} (95% CI {lo:.0%}-{hi:.0%}) over "
          f"{args.expert_episodes} eval episodes [{time.time() - start:.0f} s]", flush=True)

    stamp = run_stamp()
    rows = []
    for seed in args.seeds:
        corrector = corrector_config(args, seed, expert_noise_std=args.expert_noise)
        cfg = recipe_config(args, seed, demo_noise=args.expert_noise, teleop="scripted", intervention_mode="rlif",
                            corrector=corrector, run_dir=args.out / f"{stamp}-{args.task}-rlif-s{seed}")
        t0 = time.time()
        trainer = Trainer(cfg)
        trainer.run()
        # the final policy on the expert's evaluation seeds (the periodic evaluations use fewer)
        result = evaluate(functools.partial(trainer.agent.act, deterministic=True), trainer.eval_env,
                          args.expert_episodes)
        _, rates = trainer.run_dir.read_metrics("episode", "intervention_rate")
        _, takeovers = trainer.run_dir.read_metrics("episode", "takeovers")
        _, human_steps = trainer.run_dir.read_metrics("episode", "intervention_steps")
        first, last = rate_first_last(rates)
        row = {"seed": seed, "final_success": result.success_rate, "final_ci95": result.ci95, "rate_first": first,
               "rate_last": last, "intervention_steps": int(human_steps.sum()),
               "takeovers": int(takeovers.sum()), "wall_s": round(time.time() - t0)}
        rows.append(row)
        print("rlif", json.dumps(row), flush=True)

    doc = vars(args) | {"expert_success": bar, "results": rows}
    saved = write_results("rlif", results_name(stamp, args, "rlif"), doc)
    print(f"results: {saved}")
    finals = [r["final_success"] for r in rows]
    print("\n| | success | intervention rate first -> last 10% |\n|---|---|---|")
    print(f"| degraded expert | {bar:.0%} | - |")
    for r in rows:
        print(f"| RLIF seed {r['seed']} | {r['final_success']:.0%} | {r['rate_first']:.2f} -> {r['rate_last']:.2f} |")
    print(f"RLIF mean {np.mean(finals):.0%} vs expert {bar:.0%}: {100 * (np.mean(finals) - bar):+.0f} points")


if __name__ == "__main__":
    main()
