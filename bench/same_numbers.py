"""Does this tree compute the same numbers as another commit? Env, demos and learner, side by side.

    python bench/same_numbers.py --against 49cc0ec [--task pick_cube --updates 500]

A learning curve is too noisy to show that a change left learning alone (two seeds of state pick_cube can
differ by 30 points at the same step). This compares the pieces a curve is made of, each tree in its own
process (a git worktree of ``--against``):

- **env**: episodes of seeded random actions; max |difference| of every observation and reward.
- **demos**: the scripted demos ``robot-rl train`` records for the seed; max |difference| of states and actions.
- **run**: ``robot-rl train`` for ``--run-steps`` env steps in both trees (eager); the first env step at which
  the actions taken or the states seen differ.
- **learner**: both trees load one replay (the one this tree's run above wrote) and one set of initial
  weights, then run ``--updates`` updates from the same seed; max |difference| of every logged metric and of
  the final weights. The initial draw of the weights is compared too, on its own line: where
  they differ the trees sample their networks differently (an equally good draw, not a changed learner).

Zeros mean the trees are the same function; a difference at float32 rounding (~1e-7 relative) in the env
means its arithmetic was reordered, which changes every later step of a seeded run as a new seed would.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from _recipe import run_stamp, write_results

ROOT = Path(__file__).resolve().parents[1]

# Run inside each tree (``python -c``) with that tree first on sys.path: only APIs both layouts share.
PROBE = r'''
import json, sys
from pathlib import Path
import numpy as np, torch
from robot_rl import cli
from robot_rl.training import env_factory, loop

args = json.loads(sys.argv[1])
out = Path(args["out"])
torch.set_num_threads(1)
flags = ["train", "--task", args["task"], "--seed", str(args["seed"]), "--torch-threads", "1", "--no-progress",
         "--total-env-steps", "1", "--scripted-demos", str(args["demos"]), "--run-dir", str(out / "run")]
cfg = cli.parse(flags)
env = env_factory.make_env_from_config(getattr(cfg, "env", cfg), training=True)
rng = np.random.default_rng(args["seed"])
rollout = {"state": [], "privileged": [], "reward": []}
for episode in range(args["episodes"]):
    obs, _ = env.reset(seed=10_000 + episode)
    done = False
    while not done:
        obs, reward, terminated, truncated, _ = env.step(rng.uniform(-1, 1, env.action_space.shape).astype(np.float32))
        rollout["state"].append(obs["state"])
        rollout["privileged"].append(obs["privileged"])
        rollout["reward"].append(reward)
        done = terminated or truncated
np.savez(out / "env.npz", **{k: np.asarray(v) for k, v in rollout.items()})

trainer = loop.Trainer(cfg)  # records the scripted demos into its demo replay
trainer.demo_replay.save(out / "demos.npz")
agent = trainer.agent
names = [n for n in ("encoder", "actor", "gripper_q", "critic", "temperature", "target_encoder", "target_critic",
                     "target_gripper_q") if isinstance(getattr(agent, n, None), torch.nn.Module)]
drawn = {n: getattr(agent, n).state_dict() for n in names}
torch.save(drawn, out / "drawn.pt")
if args["weights"]:
    for n, state in torch.load(args["weights"]).items():
        getattr(agent, n).load_state_dict(state)
trainer.replay.load(Path(args["replay"]) / "replay.npz")
trainer.demo_replay.load(Path(args["replay"]) / "demo_replay.npz")
batch = cfg.batch_size
metrics = []
for _ in range(args["updates"]):
    m = agent.update(lambda: trainer.sampler.sample(batch, cfg.device))
    metrics.append({k: float(v) for k, v in sorted(m.items())})
(out / "metrics.json").write_text(json.dumps(metrics))
torch.save({n: getattr(agent, n).state_dict() for n in names}, out / "trained.pt")
'''


def tree_env(tree: Path) -> dict[str, str]:
    """A process that imports ``tree``'s robot_rl, on one thread."""
    return {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}


def probe(tree: Path, out: Path, **args) -> None:
    out.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps({"out": str(out), **args})], cwd=tree,
                          env=tree_env(tree),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the probe failed in {tree}:\n{done.stderr[-3000:]}")


def max_diff_arrays(a: Path, b: Path, keys: list[str] | None = None) -> dict[str, float]:
    x, y = np.load(a), np.load(b)
    out = {}
    for k in keys or x.files:
        if x[k].shape != y[k].shape:
            out[k] = float("inf")
        else:
            out[k] = float(np.abs(x[k].astype(np.float64) - y[k].astype(np.float64)).max(initial=0.0))
    return out


def train(tree: Path, run_dir: Path, args: argparse.Namespace, steps: int) -> None:
    """``robot-rl train`` in ``tree``; short enough that ``compile="auto"`` stays eager in every version."""
    subprocess.run([sys.executable, "-m", "robot_rl.cli", "train", "--task", args.task, "--seed", str(args.seed),
                    "--total-env-steps", str(steps), "--eval-every", str(max(steps // 3, 1)), "--eval-episodes", "5",
                    "--scripted-demos", str(args.demos), "--torch-threads", "1", "--no-progress", "--run-dir",
                    str(run_dir)], cwd=tree, check=True, capture_output=True,
                   env=tree_env(tree))


def compare_runs(a: Path, b: Path) -> dict[str, object]:
    """The first env step at which two runs' replays (actions taken, states seen) differ; None: none does."""
    x, y = (np.load(d / "checkpoints" / "replay.npz") for d in (a, b))
    n = min(len(x["action"]), len(y["action"]))
    differs = (x["action"][:n] != y["action"][:n]).any(1) | (x["frames/state"][:n] != y["frames/state"][:n]).any(1)
    env_steps = np.cumsum(x["is_step"][:n])  # a frame that ends an episode is not an env step of its own
    first = np.flatnonzero(differs)
    if len(first):
        return {"first_difference_at_step": int(env_steps[first[0]])}
    return {"first_difference_at_step": None if len(x["action"]) == len(y["action"]) else int(env_steps[-1])}


def max_diff_states(a: Path, b: Path) -> float:
    import torch

    x, y = torch.load(a), torch.load(b)
    worst = 0.0
    for name in x:
        for key, value in x[name].items():
            if torch.is_tensor(value) and value.is_floating_point():
                worst = max(worst, float((value.double() - y[name][key].double()).abs().max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", required=True, help="commit to compare with (a git revision)")
    parser.add_argument("--task", default="pick_cube")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--demos", type=int, default=10)
    parser.add_argument("--episodes", type=int, default=5, help="random-action episodes compared")
    parser.add_argument("--updates", type=int, default=500)
    parser.add_argument("--run-steps", type=int, default=1500, help="env steps of the compared training runs")
    args = parser.parse_args()
    stamp = run_stamp()
    with tempfile.TemporaryDirectory(prefix="same-numbers-") as tmp:
        tmp = Path(tmp)
        other = tmp / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(other), args.against], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            train(ROOT, tmp / "run-ours", args, args.run_steps)
            train(other, tmp / "run-theirs", args, args.run_steps)
            run = compare_runs(tmp / "run-ours", tmp / "run-theirs")
            common = {"task": args.task, "seed": args.seed, "demos": args.demos, "episodes": args.episodes,
                      "updates": args.updates, "replay": str(tmp / "run-ours" / "checkpoints")}
            probe(ROOT, tmp / "ours", weights=None, **common)
            probe(other, tmp / "theirs", weights=str(tmp / "ours" / "drawn.pt"), **common)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=ROOT, capture_output=True)
        ours, theirs = tmp / "ours", tmp / "theirs"
        env = max_diff_arrays(ours / "env.npz", theirs / "env.npz")
        demos = max_diff_arrays(ours / "demos.npz", theirs / "demos.npz", ["frames/state", "action", "reward"])
        mine, other_metrics = (json.loads((d / "metrics.json").read_text()) for d in (ours, theirs))
        metric_diff = {k: max(abs(a[k] - b[k]) for a, b in zip(mine, other_metrics)) for k in mine[0]}
        learner = {"metrics": metric_diff, "final_weights": max_diff_states(ours / "trained.pt",
                                                                            theirs / "trained.pt"),
                   "initial_draw": max_diff_states(ours / "drawn.pt", theirs / "drawn.pt")}
    rows = [("env, random actions: observation / reward", f"{max(env['state'], env['privileged']):.2g} / "
             f"{env['reward']:.2g}"),
            (f"run, {args.run_steps} env steps: first step that differs",
             "none" if run["first_difference_at_step"] is None else str(run["first_difference_at_step"])),
            ("demos: state / action", f"{demos['frames/state']:.2g} / {demos['action']:.2g}"),
            (f"learner, {args.updates} updates: worst metric / final weights",
             f"{max(metric_diff.values()):.2g} / {learner['final_weights']:.2g}"),
            ("initial weights as each tree draws them", f"{learner['initial_draw']:.2g}")]
    print(f"max |this tree - {args.against}|, {args.task}, seed {args.seed}:")
    for name, value in rows:
        print(f"  {name:<60} {value}")
    path = write_results("same_numbers", f"{stamp}-{args.task}-against-{args.against}.json",
                         {"args": vars(args), "env": env, "demos": demos, "run": run, "learner": learner})
    print(f"results: {path}")


if __name__ == "__main__":
    main()
