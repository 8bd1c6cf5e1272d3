"""What the learning benchmarks share: the training recipe as flags, and how curves are read.

Defaults are ``robot-rl train``'s own (the CPU quick-start preset of ``TrainConfig``), so a benchmark row
"ours" is what a user gets from the CLI with the same flags.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import time
from pathlib import Path

import numpy as np

from robot_rl.data.replay import ReplayConfig
from robot_rl.teleop.corrector import CorrectorConfig
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig

_DEFAULTS = TrainConfig()


def add_recipe_args(parser: argparse.ArgumentParser, *, budget: int = 20_000, eval_every: int = 2_000,
                    eval_episodes: int = 20, seeds: tuple[int, ...] = (0, 1, 2)) -> None:
    parser.add_argument("--task", default="pick_cube")
    parser.add_argument("--budget", type=int, default=budget, help="env steps per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--eval-every", type=int, default=eval_every)
    parser.add_argument("--eval-episodes", type=int, default=eval_episodes)
    parser.add_argument("--demos", type=int, default=10, help="scripted demos")
    parser.add_argument("--learning-starts", type=int, default=_DEFAULTS.learning_starts)
    parser.add_argument("--utd", type=int, default=_DEFAULTS.agent.utd_ratio)
    parser.add_argument("--num-critics", type=int, default=_DEFAULTS.agent.num_critics)
    parser.add_argument("--hidden", type=int, nargs="+", default=list(_DEFAULTS.agent.hidden_dims))
    parser.add_argument("--n-step", type=int, default=_DEFAULTS.replay.n_step)
    parser.add_argument("--threads", type=int, default=1, help="torch threads per run")
    parser.add_argument("--td-target-min", type=float, default=None, help="clip TD targets from below")
    parser.add_argument("--td-target-max", type=float, default=None, help="clip TD targets from above")


def add_corrector_args(parser: argparse.ArgumentParser, *, min_progress: float = CorrectorConfig.min_progress,
                       takeover_steps: int = CorrectorConfig.takeover_steps,
                       p_drift: float = CorrectorConfig.p_takeover_on_drift,
                       p_random: float = CorrectorConfig.p_takeover_random,
                       cooldown: int = CorrectorConfig.cooldown_steps) -> None:
    """The scripted corrector's flags; keyword defaults are a benchmark's own (CorrectorConfig's otherwise)."""
    parser.add_argument("--metric", default=CorrectorConfig.drift_metric, choices=["progress", "direction", "rms"])
    parser.add_argument("--patience", type=int, default=CorrectorConfig.patience_steps)
    parser.add_argument("--drift", type=float, default=CorrectorConfig.threshold, help="action-metric threshold")
    parser.add_argument("--min-progress", type=float, default=min_progress,
                        help="progress rule: rise of Task.progress needed within --patience steps (0.3: a pace "
                             "that also catches a dawdling policy; 0.01: stalls only)")
    parser.add_argument("--takeover-steps", type=int, default=takeover_steps, help="k, steps per takeover")
    parser.add_argument("--p-drift", type=float, default=p_drift, help="takeover probability when the rule fires")
    parser.add_argument("--p-random", type=float, default=p_random, help="takeover probability on other steps")
    parser.add_argument("--cooldown", type=int, default=cooldown, help="steps after a hand-back without takeover")


def corrector_config(args: argparse.Namespace, seed: int, **overrides) -> CorrectorConfig:
    """A ``CorrectorConfig`` from the corrector flags; ``overrides`` are further fields."""
    fields = dict(drift_metric=args.metric, patience_steps=args.patience, threshold=args.drift,
                  min_progress=args.min_progress, takeover_steps=args.takeover_steps,
                  p_takeover_on_drift=args.p_drift, p_takeover_random=args.p_random,
                  cooldown_steps=args.cooldown, seed=seed)
    return CorrectorConfig(**(fields | overrides))


def recipe_config(args: argparse.Namespace, seed: int, **overrides) -> TrainConfig:
    """A ``TrainConfig`` from the recipe flags; ``overrides`` are further TrainConfig or EnvConfig fields."""
    env_fields = {f.name for f in dataclasses.fields(EnvConfig)}
    env = EnvConfig(task=args.task, **{k: v for k, v in overrides.items() if k in env_fields})
    overrides = {k: v for k, v in overrides.items() if k not in env_fields}
    fields = dict(
        env=env, total_env_steps=args.budget, eval_every=args.eval_every,
        eval_episodes=args.eval_episodes, seed=seed, progress=False, scripted_demos=args.demos,
        learning_starts=args.learning_starts, video="off", torch_threads=args.threads,
        agent=dataclasses.replace(_DEFAULTS.agent, utd_ratio=args.utd, num_critics=args.num_critics,
                                  num_min_critics=min(_DEFAULTS.agent.num_min_critics, args.num_critics),
                                  hidden_dims=tuple(args.hidden), td_target_min=args.td_target_min,
                                  td_target_max=args.td_target_max),
        replay=ReplayConfig(n_step=args.n_step),
    )
    return TrainConfig(**(fields | overrides))


def threshold_row(seed: int, run_dir: Path, eval_episodes: int, started: float, **more: object) -> dict:
    """One run's evaluation curve, steps to 80% / 90%, final success with its lower 95% bound, wall time."""
    from robot_rl.training.evaluate import wilson_interval
    from robot_rl.training.run_dir import RunDir

    steps, success = RunDir(run_dir).read_metrics("eval", "success_rate")
    curve = list(zip(steps.tolist(), success.tolist()))
    final = curve[-1][1]
    return {"seed": seed, "curve": curve, **more, "steps_to_80": steps_to(curve, 0.8),
            "steps_to_90": steps_to(curve, 0.9), "final_success": final,
            "final_ci_low": wilson_interval(round(final * eval_episodes), eval_episodes)[0],
            "wall_s": round(time.time() - started)}


def final_evaluation(run_dir: Path, episodes: int) -> dict:
    """A run's final policy (or a ``train-bc`` run's) on ``episodes`` held-out evaluation seeds, as ``robot-rl
    eval`` runs it: success with its 95% interval (more episodes than the curve's evaluations, to compare
    against a base with a tight bound)."""
    from robot_rl.training.env_factory import make_env_from_config, success_criterion
    from robot_rl.training.evaluate import evaluate
    from robot_rl.training.loop import deterministic_policy_of

    act, reset, env_config = deterministic_policy_of(run_dir)
    env = make_env_from_config(env_config)
    try:
        result = evaluate(act, env, episodes, criterion=success_criterion(env_config, env), reset=reset)
    finally:
        env.close()
    assert result.success_rate is not None and result.ci95 is not None
    return {"episodes": episodes, "success": result.success_rate, "ci_low": result.ci95[0],
            "ci_high": result.ci95[1]}


def print_threshold_table(results: dict[str, list[dict]], budget: int, base: bool = False) -> None:
    """A markdown table of ``threshold_row`` rows per method (with each seed's base success if ``base``)."""
    never = f">{budget}"
    print("\n| method | seed |" + (" base |" if base else "") + " steps to 80% | steps to 90% | final (95% CI low) "
          "| wall time |")
    print("|---|---|" + ("---:|" if base else "") + "---:|---:|---:|---:|")
    for method, rows in results.items():
        for r in rows:
            print(f"| {method} | {r['seed']} |" + (f" {r['base_success']:.0%} |" if base else "")
                  + f" {r['steps_to_80'] or never} | {r['steps_to_90'] or never} | {r['final_success']:.0%} "
                  f"({r['final_ci_low']:.0%}) | {r['wall_s']} s |")


def steps_to(curve: list[tuple[int, float]], threshold: float) -> int | None:
    """Env steps of the first evaluation at or above ``threshold`` (None: never)."""
    return next((step for step, success in curve if success >= threshold - 1e-9), None)


def rate_first_last(rates: np.ndarray) -> tuple[float, float]:
    """Mean intervention rate over the first and the last 10% of episodes (at least one each)."""
    if len(rates) == 0:
        return float("nan"), float("nan")
    k = max(1, len(rates) // 10)
    return float(rates[:k].mean()), float(rates[-k:].mean())


def median_steps(reached: list[int | None]) -> float:
    """Median steps-to-threshold with runs that never reached it counted as infinite."""
    return float(np.median([s if s is not None else np.inf for s in reached]))


def shown_steps(reached: list[int | None], budget: int) -> str:
    return ", ".join(str(s) if s is not None else f">{budget}" for s in reached)


def run_stamp() -> str:
    """Start time and process id: names the run folders and results of one benchmark invocation, so runs
    started in the same second (with other flags) never share a folder."""
    return f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


RESULTS = Path(__file__).resolve().parent / "results"
"""Raw results of every benchmark run, one JSON file each (``bench/results/<benchmark>/``): the tables of
docs/benchmarks.md are built from them (``python bench/report.py``)."""


def results_name(stamp: str, args: argparse.Namespace, *parts: str) -> str:
    """File name of a benchmark's JSON results: time, task, ``parts`` and seeds (runs started in the same
    second with other seeds or methods must not overwrite each other)."""
    seeds = "-".join(str(s) for s in args.seeds)
    return "-".join([stamp, task_slug(args.task), *parts, f"s{seeds}"]) + ".json"


def task_slug(task: str) -> str:
    """A task name as a file name part (``module:EnvId`` without the colon)."""
    return task.replace(":", "-").replace("/", "-")


def provenance() -> dict[str, object]:
    """Where and when a result was measured: date, commit (``+dirty`` with local changes), CPU, cores."""
    root = Path(__file__).resolve().parents[1]

    def git(*cmd: str) -> str:
        done = subprocess.run(["git", *cmd], cwd=root, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    cpuinfo = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
             if line.startswith("model name")] if cpuinfo.exists() else []
    cpu = names[0] if names else platform.processor()
    commit = git("rev-parse", "--short", "HEAD")
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {"date": time.strftime("%Y-%m-%d"), "commit": commit + ("+dirty" if dirty else ""),
            "cpu": cpu, "cores": os.cpu_count()}


STARTED = provenance()
"""The provenance of this process, taken when it starts: the code it runs is the code of that moment."""


def percentiles(values) -> dict[str, float] | None:
    """p50 / p99 / max and the count of a timing series, as result files keep it (None: no samples)."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return None
    p50, p99 = np.percentile(a, [50, 99])
    return {"n": int(a.size), "p50": float(p50), "p99": float(p99), "max": float(a.max())}


def write_results(benchmark: str, name: str, doc: dict) -> Path:
    """``doc`` with its provenance as ``bench/results/<benchmark>/<name>``; returns the path."""
    path = RESULTS / benchmark / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"provenance": STARTED} | doc, default=str, indent=1) + "\n")
    return path


def steps_columns(rows: list[dict], budget: int) -> tuple[float, list[str]]:
    """Median steps-to-threshold of one method's runs and its table cells: per seed, median, final success."""
    reached = [r["steps_to_threshold"] for r in rows]
    median = median_steps(reached)
    finals = ", ".join(f"{r['final_success']:.0%}" for r in rows)
    shown_median = f"{median:.0f}" if np.isfinite(median) else "not reached"
    return median, [shown_steps(reached, budget), shown_median, finals]
