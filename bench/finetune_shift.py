"""Keep learning from a pretrained agent where the world differs: fine-tuning under a held-out dynamics shift
against learning from scratch under it.

    python bench/finetune_shift.py --task pick_cube --seeds 0 --shift "joint damping x5" --demos 0 --anchor-weight 0.1

Per seed: the agent pretrained on the batched simulator without randomisation (``bench/robustness.py``'s
nominal run, reused from ``--out`` when it is there), its deterministic success under the shift, then
single-env runs in the shifted CPU env with the same recipe, demos and evaluation: ``finetune`` starts from the
pretrained agent (``robot-rl train --init-from RUN``: networks, targets, temperature and optimisers; an empty
replay; ``--anchor-weight`` holds its actor near the pretrained one), ``residual`` keeps it frozen as the base
of a bounded residual (``--preset residual --base-policy RUN``), ``scratch`` starts from nothing. The shift is
one of ``robustness.SHIFTS`` (the scripted demos are recorded under it too). Results go to
``bench/results/finetune_shift/``.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from robustness import SHIFTS, success_under, train

from robot_rl.training.config import PRESETS
from robot_rl.training.loop import Trainer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recipe_args(parser, budget=10_000, eval_every=1_000, seeds=(0,))
    shifts = {name: shift for group in SHIFTS.values() for name, shift in group.items() if name != "nominal"}
    parser.add_argument("--shift", choices=sorted(shifts), default="action latency 3 steps")
    parser.add_argument("--pretrain-budget", type=int, default=30_000)
    parser.add_argument("--pretrain-demos", type=int, default=10,
                        help="scripted demos of the nominal pretraining (--demos are the fine-tuning's)")
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--updates-per-step", type=int, default=2)
    parser.add_argument("--parallel-batch", type=int, default=512)
    parser.add_argument("--episodes", type=int, default=40, help="evaluation episodes of the pretrained agent")
    parser.add_argument("--methods", nargs="+", default=["finetune", "scratch"],
                        choices=["finetune", "residual", "scratch"])
    parser.add_argument("--critic-warmup", type=int, default=None,
                        help="critic updates before the first actor update (default: 0; the residual preset's for "
                             "residual)")
    parser.add_argument("--residual-scale", type=float, default=PRESETS["residual"].residual_scale)
    parser.add_argument("--actor-lr", type=float, default=None, help="actor learning rate (default: the recipe's)")
    parser.add_argument("--anchor-weight", type=float, default=0.0,
                        help="finetune: hold the actor near the pretrained policy (--agent.anchor-weight)")
    parser.add_argument("--demos-from", choices=["expert", "pretrained"], default="expert",
                        help="who records the --demos episodes under the shift: the task's scripted expert, or "
                             "the pretrained agent itself (its successful episodes; needs no expert)")
    parser.add_argument("--action-history", type=int, default=0,
                        help="pretrained and fine-tuned policies observe their last N actions (--action-history)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_robustness"))
    args = parser.parse_args()
    shifted = json.dumps(dataclasses.asdict(shifts[args.shift]))  # the fine-tuning env's --randomization
    stamp = run_stamp()
    results: dict[str, list[dict]] = {}
    pretrained_success = {}
    for seed in args.seeds:
        # Pretraining has its own budget and demos, and the recipe's own UTD and start, whatever fine-tuning uses.
        pretrain = argparse.Namespace(**{**vars(args), "budget": args.pretrain_budget, "demos": args.pretrain_demos,
                                         "utd": parser.get_default("utd"), "reuse": True,
                                         "learning_starts": parser.get_default("learning_starts")})
        pretrained = train(pretrain, seed, "none")
        pretrained_success[seed] = success_under(pretrained, args.task, shifts[args.shift], args.episodes)
        print(f"seed {seed}: pretrained agent {pretrained}, {pretrained_success[seed]:.0%} under {args.shift!r}",
              flush=True)
        for method in args.methods:
            run = args.out / f"{stamp}-{method}-{args.task}-s{seed}"
            cfg = recipe_config(args, seed, run_dir=run, randomization=shifted, action_history=args.action_history,
                                init_from=pretrained if method == "finetune" else None,
                                demo_policy=str(pretrained) if args.demos_from == "pretrained" else None)
            default_warmup = PRESETS["residual"].critic_warmup_updates if method == "residual" else 0
            agent = dataclasses.replace(cfg.agent, actor_lr=args.actor_lr or cfg.agent.actor_lr,
                                        anchor_weight=args.anchor_weight if method == "finetune" else 0.0,
                                        critic_warmup_updates=default_warmup if args.critic_warmup is None
                                        else args.critic_warmup)
            if method == "residual":
                agent = dataclasses.replace(agent, residual_scale=args.residual_scale)
                cfg = dataclasses.replace(cfg, preset="residual",
                                          env=dataclasses.replace(cfg.env, base_policy=str(pretrained)))
            cfg = dataclasses.replace(cfg, agent=agent)
            started = time.time()
            Trainer(cfg).run()
            row = threshold_row(seed, run, args.eval_episodes, started, base_success=pretrained_success[seed])
            results.setdefault(method, []).append(row)
            print(method, row, flush=True)
    path = write_results("finetune_shift", results_name(stamp, args, *args.methods),
                         {**{k: v for k, v in vars(args).items() if k != "out"},
                          "shift_config": dataclasses.asdict(shifts[args.shift]),
                          "pretrained_success": pretrained_success, "results": results})
    print(f"results: {path}")
    print_threshold_table(results, args.budget, base=True)


if __name__ == "__main__":
    main()
