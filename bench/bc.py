"""Behaviour cloning alone: the deterministic success of ``robot-rl train-bc`` from scripted demos, per
observation mode, with its 95% interval on held-out evaluation seeds.

    python bench/bc.py --task pick_cube --demos 20 --obs state pixels --seeds 0

Per seed and observation mode: ``--demos`` scripted demos (noise 0.1, the seed's own expert draws, so both
modes clone the same episodes), ``train-bc`` on them (chunks of ``--chunk``, temporal ensembling; pixels:
two cameras of ``--image-size`` px with the learner's DrQ shifts), then ``--eval-episodes`` held-out
episodes. Results go to ``bench/results/bc/``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from _recipe import results_name, run_stamp, write_results

from robot_rl.training.bc import BCConfig, train_bc
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.record import record_scripted_demos


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="pick_cube")
    parser.add_argument("--demos", type=int, default=20)
    parser.add_argument("--obs", nargs="+", default=["state", "pixels"], choices=["state", "pixels"])
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--chunk", type=int, default=BCConfig.chunk)
    parser.add_argument("--bc-steps", type=int, default=BCConfig.steps)
    parser.add_argument("--eval-episodes", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_bc"))
    args = parser.parse_args()
    stamp = run_stamp()
    results: dict[str, list[dict]] = {}
    for obs in args.obs:
        for seed in args.seeds:
            env_config = EnvConfig(task=args.task, obs=obs, image_size=args.image_size)
            folder = args.out / f"{stamp}-{args.task}-{obs}-s{seed}"
            started = time.time()
            env = make_env_from_config(env_config)
            record_scripted_demos(env, args.task, args.demos, folder / "demos", noise_std=0.1, seed=seed)
            env.close()
            config = BCConfig(demos=folder / "demos", env=env_config, chunk=args.chunk, steps=args.bc_steps,
                              eval_episodes=args.eval_episodes, seed=seed, run_dir=folder / "bc",
                              torch_threads=args.threads)
            _, result = train_bc(config, say=lambda _: None)
            assert result is not None and result.success_rate is not None
            low, high = result.ci95
            row = {"seed": seed, "success": result.success_rate, "ci_low": low, "ci_high": high,
                   "episodes": args.eval_episodes, "wall_s": round(time.time() - started)}
            results.setdefault(obs, []).append(row)
            print(obs, row, flush=True)
            # after every run, so a benchmark stopped part-way keeps the runs it finished
            path = write_results("bc", results_name(stamp, args, *args.obs),
                                 {k: v for k, v in vars(args).items() if k != "out"} | {"results": results})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
