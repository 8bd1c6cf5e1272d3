"""Does domain randomisation buy robustness? Two policies trained on the batched simulator, one with
``--randomization robust`` and one without, each evaluated in the CPU env under held-out shifts of the dynamics
and the sensing that neither saw in training.

    python bench/robustness.py --task pick_cube --seeds 0 --budget 30000 --episodes 40

Both learners are ``robot-rl train --num-envs N``'s (the quick-start recipe, the task's scripted demos, N
worlds on the ``mujoco-threads`` backend); each checkpoint is then loaded as ``robot-rl eval`` loads it and run
deterministically on the evaluation seeds, nominal and under each shift of ``SHIFTS``, one at a time. The
shifts lie outside the ``robust`` preset's ranges. Results go to ``bench/results/robustness/``.

``--trained-with expert`` trains nothing and runs the task's scripted expert (it reads the simulator's state)
under the same shifts: the hand-written controller's robustness beside the learned ones'. Its phases are timed
for the nominal arm, so its failing under a shift does not mean the task is out of reach.
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from _recipe import add_recipe_args, recipe_config, run_stamp, write_results

from robot_rl.sim import make_env
from robot_rl.sim.config import RANDOMIZATION_PRESETS, RandomizationConfig
from robot_rl.training.base_policy import EXPERT, load_base_policy
from robot_rl.training.config import ParallelConfig
from robot_rl.training.env_factory import with_observation_extras
from robot_rl.training.evaluate import EVAL_SEED_BASE, evaluate
from robot_rl.training.loop import load_policy
from robot_rl.training.parallel import ParallelTrainer

SHIFTS: dict[str, dict[str, RandomizationConfig]] = {
    "held_out": {
        "nominal": RandomizationConfig(),
        "friction x0.3": RandomizationConfig(friction_scale=(0.3, 0.3)),
        "object mass x3": RandomizationConfig(mass_scale=(3.0, 3.0)),
        "controller gains x0.5": RandomizationConfig(actuator_gain_scale=(0.5, 0.5)),
        "action latency 2 steps": RandomizationConfig(action_latency_steps=2),
        "observation noise 6 mm": RandomizationConfig(obs_noise_std=0.006),
    },
    "severe": {
        "nominal": RandomizationConfig(),
        "friction x0.1": RandomizationConfig(friction_scale=(0.1, 0.1)),
        "object mass x8": RandomizationConfig(mass_scale=(8.0, 8.0)),
        "controller gains x0.25": RandomizationConfig(actuator_gain_scale=(0.25, 0.25)),
        "action latency 3 steps": RandomizationConfig(action_latency_steps=3),
        "observation noise 2 cm": RandomizationConfig(obs_noise_std=0.02),
    },
    "extreme": {
        "nominal": RandomizationConfig(),
        "joint damping x5": RandomizationConfig(joint_damping_scale=(5.0, 5.0)),
        "joint damping x10": RandomizationConfig(joint_damping_scale=(10.0, 10.0)),
        "controller gains x0.07": RandomizationConfig(actuator_gain_scale=(0.07, 0.07)),
        "object mass x10": RandomizationConfig(mass_scale=(10.0, 10.0)),
    },
    "latency": {
        "nominal": RandomizationConfig(),
        "action latency 1 step": RandomizationConfig(action_latency_steps=1),
        "action latency 2 steps": RandomizationConfig(action_latency_steps=2),
        "action latency 3 steps": RandomizationConfig(action_latency_steps=3),
    },
    "adaptation": {
        "nominal": RandomizationConfig(),
        "controller gains x0.1": RandomizationConfig(actuator_gain_scale=(0.1, 0.1)),
        "joint damping x5": RandomizationConfig(joint_damping_scale=(5.0, 5.0)),
        "observation noise 4 cm": RandomizationConfig(obs_noise_std=0.04),
    },
}
"""Sets of evaluation conditions, each one shift at a time. ``held_out``: just beyond the ``robust`` preset's
ranges (friction 0.5-1.5x, mass 0.5-2x, gains 0.7-1.3x, noise 2 mm, latency 0-1 steps); ``severe``: far beyond
them; ``extreme``: where the nominal pick_cube policy drops to 0-60%; ``latency``: commands that act 1-3 control steps
late (``--trained-with latency-0-3 --action-history 3`` trains for it); ``adaptation``: shifts that cost it part
of its success, to keep learning under (``bench/finetune_shift.py``)."""


BENCH_RANDOMIZATIONS = {
    "latency-0-3": '{"action_latency_steps": [0, 3]}',
    "damping-1-8": '{"joint_damping_scale": [1, 8]}',
    "robust-damping-1-8": '{"preset": "robust", "joint_damping_scale": [1, 8]}',
}
"""Training conditions of this benchmark besides the product's presets (``--randomization`` specs): each
episode's commands act 0-3 control steps late; each episode's joint damping is 1-8x nominal (``extreme``'s x10
lies beyond it), alone or with the rest of the ``robust`` preset."""


def train(args: argparse.Namespace, seed: int, randomization: str) -> Path:
    history = getattr(args, "action_history", 0)
    out = args.out / f"{randomization}-{args.task}-s{seed}{f'-h{history}' if history else ''}"
    if args.reuse and (out / "checkpoints" / "latest.pt").exists():
        return out
    parallel = ParallelConfig(num_envs=args.worlds, backend="mujoco-threads", updates_per_step=args.updates_per_step)
    config = recipe_config(args, seed, run_dir=out, parallel=parallel, batch_size=args.parallel_batch,
                           randomization=BENCH_RANDOMIZATIONS.get(randomization, randomization),
                           action_history=history)
    ParallelTrainer(config).run()
    return out


def success_under(run: Path | None, task: str, shift: RandomizationConfig, episodes: int) -> float:
    """A checkpoint's deterministic success under ``shift``; ``run`` None: the scripted expert's."""
    if run is None:
        env = make_env(task, randomization=shift)
        expert = load_base_policy(EXPERT, env)
        act, reset = expert, expert.reset
    else:
        policy, config = load_policy(run)
        env = with_observation_extras(make_env(task, randomization=shift), config.env)  # as `robot-rl eval` does
        act, reset = (lambda o: policy.act(o, deterministic=True)), None
    result = evaluate(act, env, episodes, EVAL_SEED_BASE, reset=reset)
    env.close()
    return result.success_rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_recipe_args(parser, budget=30_000, eval_every=5_000, seeds=(0,))
    parser.add_argument("--episodes", type=int, default=40, help="evaluation episodes per condition")
    parser.add_argument("--worlds", type=int, default=16)
    parser.add_argument("--updates-per-step", type=int, default=2)
    parser.add_argument("--parallel-batch", type=int, default=512)
    parser.add_argument("--shifts", choices=sorted(SHIFTS), default="held_out")
    parser.add_argument("--reuse", action="store_true", help="evaluate the runs already in --out, if trained")
    parser.add_argument("--trained-with", nargs="+", default=["none", "robust"],
                        choices=sorted({*RANDOMIZATION_PRESETS, *BENCH_RANDOMIZATIONS, EXPERT}),
                        help="randomisations to train with; expert: the scripted expert, untrained")
    parser.add_argument("--action-history", type=int, default=0,
                        help="the policies observe their last N actions (--action-history)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_robustness"))
    args = parser.parse_args()
    stamp, rows = run_stamp(), []
    for seed in args.seeds:
        for randomization in args.trained_with:
            if randomization == EXPERT and seed != args.seeds[0]:
                continue  # trains nothing and acts without noise: the same figures for every seed
            started = time.time()
            run = None if randomization == EXPERT else train(args, seed, randomization)
            trained_s = round(time.time() - started)
            success = {name: success_under(run, args.task, shift, args.episodes)
                       for name, shift in SHIFTS[args.shifts].items()}
            rows.append({"seed": seed, "randomization": randomization, "action_history": args.action_history,
                         "train_s": trained_s, "success": success})
            print(f"seed {seed}, trained with randomization {randomization} ({trained_s} s): "
                  + ", ".join(f"{k} {v:.0%}" for k, v in success.items()), flush=True)
    print("\n| trained with | seed | " + " | ".join(SHIFTS[args.shifts]) + " |")
    print("|---|---|" + "---:|" * len(SHIFTS[args.shifts]))
    for r in rows:
        nominal = r["success"]["nominal"]
        cells = [f"{v:.0%}" + ("" if name == "nominal" or not nominal else f" ({v / nominal:.0%})")
                 for name, v in r["success"].items()]
        print(f"| {r['randomization']} | {r['seed']} | " + " | ".join(cells) + " |")
    settings = {k: getattr(args, k) for k in ("task", "budget", "worlds", "updates_per_step", "parallel_batch",
                                              "episodes", "demos", "shifts")}
    shifts = {name: dataclasses.asdict(shift) for name, shift in SHIFTS[args.shifts].items()}
    path = write_results("robustness", f"{stamp}-{args.task}.json", {**settings, "conditions": shifts, "runs": rows})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
