"""Reward classifier: held-out accuracy on simulated frames, and a policy trained on its reward.

    python bench/classifier.py --task pick_cube --episodes 60 --steps 600 --budget 20000 --seeds 0 1 2

1. Record ``--episodes`` episodes of success / failure frames unattended (a noisy scripted expert drives;
   labels = the task's true success; the env does not end on success, so held-up frames accumulate), plus
   ``--random-episodes`` of near-random actions (the failures an untrained policy shows the classifier).
2. Train the classifier (episode-level split: train / validation for the threshold / test for the report;
   ``--max-fpr`` bounds the validation false-positive rate instead of maximising balanced accuracy).
   ``--mining-rounds R``: R times, train a state policy ``--mining-steps`` on the classifier's reward, record
   ``--mining-episodes`` of its rollouts labelled by true success (the frames it learned to fool the
   classifier with), report how often the classifier fired on their failure frames, and retrain on all frames.
3. With ``--budget > 0``: train a state policy twice per seed, once on the task's true sparse reward
   and once on the classifier's (cameras rendered for the classifier from the sim scene, the env's own
   success termination turned into a truncation), and compare deterministic success on held-out seeds
   (judged by the task's true success), both with the recipe flags of ``_recipe.py`` and the same demos.
   Goal: classifier >= 80% of true-reward success.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from _recipe import add_recipe_args, recipe_config, results_name, run_stamp, write_results

from robot_rl.commands.classifier import policy_recording_env
from robot_rl.rewards.classifier import load_classifier, save_classifier
from robot_rl.rewards.config import ClassifierConfig
from robot_rl.rewards.dataset import load_frames, record_success_fail, true_success_label
from robot_rl.rewards.train import ClassifierReport, train_classifier
from robot_rl.teleop.corrector import CorrectorConfig, ScriptedCorrector
from robot_rl.training.loop import Trainer


def noisy_expert(noise: float, seed: int) -> ScriptedCorrector:
    """The scripted expert in control of every step, with Gaussian action noise (3.0: nearly random)."""
    return ScriptedCorrector(CorrectorConfig(threshold=float("inf"), p_takeover_random=1.0, takeover_steps=1,
                                             expert_noise_std=noise, seed=seed))


def record_frames(args: argparse.Namespace, env, root: Path) -> list[Path]:
    """The noisy expert's episodes, plus ``--random-episodes`` near-random ones; returns their folders."""
    t0 = time.time()
    _, stats = record_success_fail(env, args.task, noisy_expert(args.noise, seed=0), args.episodes, root / "frames",
                                   true_success_label)
    print(f"recorded {stats.frames} frames ({stats.positives} success) in {time.time() - t0:.0f} s", flush=True)
    folders = [root / "frames"]
    if args.random_episodes > 0:
        _, extra = record_success_fail(env, args.task, noisy_expert(3.0, seed=1), args.random_episodes,
                                       root / "frames_random", true_success_label, seed=1)
        folders.append(root / "frames_random")
        print(f"recorded {extra.frames} near-random frames ({extra.positives} success)", flush=True)
    return folders


def fit_classifier(folders: list[Path], config: ClassifierConfig, path: Path) -> tuple[Path, ClassifierReport]:
    t0 = time.time()
    model, report = train_classifier(load_frames(folders), config)
    save_classifier(path, model, report.threshold, report.as_dict())
    print(f"classifier {path.name}: {report.summary()} [{time.time() - t0:.0f} s]", flush=True)
    return path, report


def false_positives(classifier: Path, folder: Path) -> dict[str, int]:
    """How often ``classifier`` calls a failure frame of ``folder`` success: frames, and episodes with any."""
    loaded = load_classifier(classifier)
    frames = load_frames([folder], loaded.model.keys)
    fired = (loaded.model.predict_proba(frames.observations) >= loaded.threshold) & ~frames.labels
    return {"frames": int(fired.sum()), "negatives": int((~frames.labels).sum()),
            "episodes": len(np.unique(frames.episode[fired]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser, budget=0, seeds=(0,))
    parser.add_argument("--episodes", type=int, default=60)
    parser.add_argument("--noise", type=float, default=0.6)
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--random-episodes", type=int, default=30,
                        help="extra episodes of near-random actions (expert noise 3.0): the negatives a policy early "
                             "in training produces; without them it found frames the classifier mistook for success")
    parser.add_argument("--arms", nargs="+", default=["true_reward", "classifier_reward"],
                        choices=["true_reward", "classifier_reward"])
    parser.add_argument("--max-fpr", type=float, default=None,
                        help="threshold rule: at most this false-positive rate on validation frames (default: "
                             "best balanced accuracy)")
    parser.add_argument("--mining-rounds", type=int, default=0,
                        help="rounds of: train a policy on the classifier, record its rollouts, retrain on them")
    parser.add_argument("--mining-steps", type=int, default=3000)
    parser.add_argument("--mining-episodes", type=int, default=30)
    parser.add_argument("--state-checks", nargs="*", default=[],
                        help="field:index:low:high checks ANDed with the classifier in the policy runs, e.g. "
                             "gripper_opening:0:0.3:0.7 (something held) tcp_pos:2:0.07:inf (raised)")
    parser.add_argument("--frames", type=Path, nargs="*", default=[],
                        help="record-success-fail folders to start from instead of recording (e.g. an earlier run's "
                             "frames, frames_random and frames_policy<r>, to mine further rounds)")
    parser.add_argument("--classifier", type=Path, default=None,
                        help="a trained classifier file: skip recording and training, train the policies only")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_classifier"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    from robot_rl.sim import make_env

    stamp = run_stamp()
    root = args.out / f"{stamp}-{args.task}"
    root.mkdir(parents=True)
    env = make_env(args.task, obs_mode="pixels", image_size=args.image_size, terminate_on_success=False)
    config = ClassifierConfig(steps=args.steps, torch_threads=args.threads, max_false_positive_rate=args.max_fpr)
    if args.classifier is not None:  # reuse a trained classifier: policies only
        if args.mining_rounds:
            parser.error("--mining-rounds needs the recorded frames: not with --classifier")
        clf_path, folders, report = args.classifier, [], load_classifier(args.classifier).report
    else:
        folders = list(args.frames) if args.frames else record_frames(args, env, root)
        clf_path, fitted = fit_classifier(folders, config, root / "success.pt")
        report = fitted.as_dict()
    summary: dict = {"args": vars(args), "classifier": report, "policies": [], "mining": []}
    cameras = tuple(c.name for c in env.unwrapped.contract.cameras)
    for r in range(1, args.mining_rounds + 1):
        # A policy trained on this classifier's reward finds its false positives; its rollouts, labelled by the
        # task's true success, are the hard negatives of the next classifier (HIL-SERL retrains the same way).
        run = root / f"mining{r}"
        t0 = time.time()
        Trainer(recipe_config(args, 100 + r, total_env_steps=args.mining_steps, eval_every=args.mining_steps,
                              reward_classifier=clf_path, run_dir=run)).run()
        rec_env, policy = policy_recording_env(run, args.task, args.image_size, cameras)
        folder = root / f"frames_policy{r}"
        labels_only = ScriptedCorrector(CorrectorConfig(threshold=float("inf"), p_takeover_random=0.0))
        record_success_fail(rec_env, args.task, labels_only, args.mining_episodes, folder, true_success_label,
                            seed=1 + r, policy=policy)
        fooled = false_positives(clf_path, folder)
        print(f"mining round {r}: policy trained {args.mining_steps} steps on the classifier; its rollouts: "
              f"{fooled['frames']} false-positive frames of {fooled['negatives']} failure frames, in "
              f"{fooled['episodes']}/{args.mining_episodes} episodes [{time.time() - t0:.0f} s]", flush=True)
        folders.append(folder)
        clf_path, report = fit_classifier(folders, config, root / f"success_round{r}.pt")
        summary["mining"].append({"round": r, "fooled_by_policy": fooled, "classifier": report.as_dict()})

    if args.budget > 0:
        for seed in args.seeds:
            row = {"seed": seed}
            for name in args.arms:
                classifier = clf_path if name == "classifier_reward" else None
                checks = tuple(args.state_checks) if classifier else ()
                cfg = recipe_config(args, seed, reward_classifier=classifier, classifier_state_checks=checks,
                                    run_dir=root / f"{name}-s{seed}")
                t0 = time.time()
                result = Trainer(cfg).run()
                row[name] = result.success_rate if result else None
                row[f"{name}_wall_s"] = round(time.time() - t0)
            summary["policies"].append(row)
            print("policy", json.dumps(row), flush=True)
        if len(args.arms) == 2:
            true = np.mean([r["true_reward"] for r in summary["policies"]])
            learned = np.mean([r["classifier_reward"] for r in summary["policies"]])
            ratio = learned / true if true > 0 else float("nan")
            print(f"\nsuccess: true reward {true:.0%}, classifier reward {learned:.0%} ({ratio:.0%} of true)")
    root.mkdir(parents=True, exist_ok=True)
    (root / "summary.json").write_text(json.dumps(summary, default=str, indent=1))
    saved = write_results("classifier", results_name(run_stamp(), args, *args.arms), vars(args) | summary)
    print(f"results: {saved}")


if __name__ == "__main__":
    main()
