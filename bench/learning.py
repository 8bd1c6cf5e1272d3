"""Sample efficiency: env steps to a success threshold, ours (with / without demos, one process or a learner
with 2 sim actor processes) vs Stable-Baselines3 SAC.

    python bench/learning.py --task pick_cube --budget 20000 --seeds 0 1 2 --methods ours ours_no_demos sb3
    python bench/learning.py --task pick_cube --budget 20000 --seeds 0 --methods ours ours_actors2

Every method runs the same recipe flags (default: ``robot-rl train``'s CPU quick-start preset, see
``_recipe.py``) and is evaluated the same way (deterministic actions, the same held-out seeds, every
``--eval-every`` env steps); "steps to X%" is the first evaluation at or above the threshold. SB3 SAC gets our
network sizes, batch size, learning start and update-to-data ratio (its ``gradient_steps``), so both sides
spend the same compute per env step. ``sb3`` has no demos; ``sb3_demos`` is the peer a user with demos would
build: the same scripted demos as ours (same expert, seeds and noise) put into SB3's replay buffer before
learning starts, where its uniform sampling mixes them with online data; ``sb3_her`` / ``sb3_her_demos`` use
SB3's hindsight replay on a goal-conditioned env. ``--task`` also takes an env of another library
(``module:EnvId``); one that ``third_party.DEMO_POLICIES`` names gets its demos from that controller:

    python bench/learning.py --task panda_gym:PandaPickAndPlace-v3 --budget 30000 --methods ours sb3_her_demos
    python bench/learning.py --task third_party:GymHilPickCube-v0 --demo-noise 0.005 --methods ours
    python bench/learning.py --task third_party:GymHilPickCube-v0 --action-scale '[0.04,0.04,0.04,0,0,0,0.5]'

Results are printed as a markdown table and written, with date, commit and CPU, to ``bench/results/learning/``
(``bench/report.py`` builds the tables of docs/benchmarks.md from them); run folders go under ``--out``.

    python bench/learning.py --task pick_cube --budget 20000 --seeds 0 1 2 --methods ours sb3_demos
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from _recipe import (
    add_recipe_args,
    recipe_config,
    results_name,
    run_stamp,
    steps_columns,
    steps_to,
    task_slug,
    write_results,
)
from gymnasium.wrappers import FlattenObservation
from third_party import demo_policy_for

from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig, make_env_from_config
from robot_rl.training.evaluate import EVAL_SEED_BASE, evaluate
from robot_rl.training.loop import Trainer
from robot_rl.training.run_dir import RunDir


class EpisodeEndInsertion:
    """A ``StepBuffer`` that holds an episode's steps and adds them to ``replay`` only when the episode ends: one
    process with the learner's episode-granular ingestion (``ours_episode_insert``), to measure what that costs
    without the link."""

    def __init__(self, replay) -> None:
        self.replay, self.steps = replay, []

    def add(self, *step, **kw) -> None:
        self.steps.append((step, kw))
        if step[4] or step[5]:  # terminated or truncated
            self.end_episode()

    def end_episode(self) -> bool:
        for step, kw in self.steps:
            self.replay.add(*step, **kw)
        had, self.steps = bool(self.steps), []
        return self.replay.end_episode() or had


def run_ours(cfg: TrainConfig, learner_overrides: dict | None = None,
             episode_insert: bool = False) -> list[tuple[int, float]]:
    if episode_insert:
        from robot_rl.training.hil import make_router

        trainer = Trainer(cfg)
        trainer.router = make_router(cfg, EpisodeEndInsertion(trainer.replay), trainer.demo_replay)
        trainer.run()
    elif cfg.actors > 0:  # `robot-rl train --actors N`: a learner here, N sim actor processes over loopback gRPC
        from robot_rl.distributed.launch import train_distributed

        if train_distributed(cfg, learner_overrides) != 0:
            raise RuntimeError(f"train --actors {cfg.actors} failed; see {cfg.run_dir}/actor-*.log")
    else:
        Trainer(cfg).run()
    steps, success = RunDir(cfg.run_dir).read_metrics("eval", "success_rate")
    return list(zip(steps.tolist(), success.tolist()))


def run_lockstep(cfg: TrainConfig, n_actors: int, learner_overrides: dict) -> list[tuple[int, float]]:
    """A ``Learner`` fed by ``n_actors`` sim actors in this process, in exact lock-step (``ours_lockstepN``):
    the actors step in turn, each on the learner's newest weights, every step goes through ``ActorClient``
    records and the learner's ingestion, and the learner updates as soon as a step is owed one. The split's
    data path and learner loop without processes, threads, gRPC or policy lag; seeded, so it repeats exactly."""
    from robot_rl.agents.sac import SACAgent
    from robot_rl.distributed.client import ActorClient
    from robot_rl.distributed.codec import dump_weights, load_weights
    from robot_rl.distributed.config import LearnerConfig, LinkConfig
    from robot_rl.distributed.learner import Learner
    from robot_rl.training.evaluate import TRAIN_SEED_BASE

    token = "lockstep-" + "0" * 16
    learner = Learner(LearnerConfig(train=cfg, **learner_overrides), token=token)
    actors = []
    for i in range(n_actors):  # seeds and ids as `robot-rl train --actors N` gives its actor processes
        seed = cfg.seed * 1000 + i + 1
        env = make_env_from_config(cfg.env)
        agent = SACAgent(cfg.agent, env.observation_space, env.action_space, cfg.device, seed)
        client = ActorClient(LinkConfig(), f"sim-{i}", learner.spec, token)
        learner.ingestor.hello(client.actor_id, client.session, 1)
        obs, _ = env.reset(seed=TRAIN_SEED_BASE + seed * 1_000_000)
        actors.append({"env": env, "agent": agent, "client": client, "seed": seed, "obs": obs, "episodes": 0})
    try:
        while learner.env_steps < cfg.total_env_steps:
            for a in actors:
                load_weights(a["agent"], dump_weights(learner.agent))
                action = a["agent"].act(a["obs"])
                next_obs, reward, terminated, truncated, _ = a["env"].step(action)
                a["client"].add(a["obs"], action, float(reward), next_obs, terminated, truncated,
                                {"intervention": 0.0, "grasp_penalty": 0.0}, learner.weights_version)
                learner.ingestor.push(a["client"].actor_id, a["client"].session, a["client"].take_records(), {})
                a["obs"] = next_obs
                if terminated or truncated:
                    a["episodes"] += 1
                    a["obs"], _ = a["env"].reset(seed=TRAIN_SEED_BASE + a["seed"] * 1_000_000 + a["episodes"])
                learner.evaluate_if_due()
                while learner.update_if_due():
                    pass
    finally:
        learner.close()
        for a in actors:
            a["env"].close()
    steps, success = RunDir(cfg.run_dir).read_metrics("eval", "success_rate")
    return list(zip(steps.tolist(), success.tolist()))


def put_demos_into_sb3(model, env, cfg: TrainConfig, flat: bool) -> int:
    """Record ``cfg.scripted_demos`` exactly as our learner does (same expert or ``demo_policy``, seeds and noise)
    and add every transition to ``model``'s replay buffer, observations flattened as
    ``FlattenObservation`` does when ``flat`` (else dicts, as a HER buffer takes them), actions in SB3's [-1, 1]
    policy units. Returns the number of transitions added."""
    from gymnasium.spaces import flatten

    from robot_rl.training.record import record_demos

    episodes, _ = record_demos(env, cfg.env.name, cfg.scripted_demos, None, cfg.demo_policy,
                               noise_std=cfg.demo_noise, seed=cfg.seed)
    space = env.observation_space
    added = 0
    for ep in episodes:
        frames = [{k: v[t] for k, v in ep.observations.items()} for t in range(len(ep) + 1)]
        obs = [flatten(space, f)[None] if flat else {k: v[None] for k, v in f.items()} for f in frames]
        for t in range(len(ep)):
            last = t == len(ep) - 1
            done, cut = last and (ep.terminated or ep.truncated), last and ep.truncated and not ep.terminated
            model.replay_buffer.add(obs[t], obs[t + 1], model.policy.scale_action(ep.actions[t])[None],
                                    np.array([ep.rewards[t]]), np.array([done]), [{"TimeLimit.truncated": cut}])
            added += 1
    return added


def run_sb3(cfg: TrainConfig, her: bool = False) -> list[tuple[int, float]]:
    """SB3 SAC, its defaults but our network size, batch, learning start, UTD and n-step returns; with
    ``cfg.scripted_demos`` > 0 the same demos as ours go into its replay buffer first. ``her``: SB3's
    ``HerReplayBuffer`` (the "future" strategy, 4 goals per transition, its defaults) on a goal-conditioned env,
    with 1-step returns (SB3's HER buffer has no n-step)."""
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback

    torch.set_num_threads(cfg.torch_threads)
    env, eval_env = make_env_from_config(cfg.env), make_env_from_config(cfg.env)
    flat = cfg.env.obs == "state" and not her
    if flat:  # SB3's n-step replay takes Box observations only
        env, eval_env = FlattenObservation(env), FlattenObservation(eval_env)
    curve: list[tuple[int, float]] = []

    class EvalEvery(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps % cfg.eval_every == 0:
                policy = lambda o: self.model.predict(o, deterministic=True)[0]  # noqa: E731
                result = evaluate(policy, eval_env, cfg.eval_episodes, EVAL_SEED_BASE)
                curve.append((self.num_timesteps, result.success_rate))
                cfg.run_dir.mkdir(parents=True, exist_ok=True)
                (cfg.run_dir / "curve.json").write_text(json.dumps(curve))
            return True

    replay: dict = {"n_steps": cfg.replay.n_step}
    if her:
        from stable_baselines3 import HerReplayBuffer

        replay = {"replay_buffer_class": HerReplayBuffer,
                  "replay_buffer_kwargs": {"goal_selection_strategy": "future", "n_sampled_goal": 4}}
    model = SAC(
        "MlpPolicy" if flat else "MultiInputPolicy",
        env,
        batch_size=cfg.batch_size,
        learning_starts=cfg.learning_starts,
        gradient_steps=cfg.agent.utd_ratio,
        gamma=cfg.replay.gamma,
        policy_kwargs={"net_arch": list(cfg.agent.hidden_dims)},
        seed=cfg.seed,
        verbose=0,
        device="cpu",
        **replay,
    )
    if cfg.scripted_demos > 0:
        if cfg.env.obs != "state":
            raise SystemExit("sb3 with demos: state observations only (SB3's n-step replay takes Box observations)")
        demo_env = make_env_from_config(cfg.env)
        added = put_demos_into_sb3(model, demo_env, cfg, flat)
        print(f"sb3 with demos: {added} demo transitions in SB3's replay", flush=True)
        demo_env.close()
    model.learn(total_timesteps=cfg.total_env_steps, callback=EvalEvery())
    return curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_recipe_args(parser)
    parser.add_argument("--obs", default="state", choices=["state", "pixels"])
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--methods", nargs="+", default=["ours", "ours_no_demos", "sb3"],
                        choices=["ours", "ours_no_demos", "sb3", "sb3_demos", "sb3_her", "sb3_her_demos",
                                 "ours_actors1", "ours_actors2", "ours_episode_insert", "ours_lockstep1",
                                 "ours_lockstep2"])
    parser.add_argument("--threshold", type=float, default=0.9)
    parser.add_argument("--action-scale", default=EnvConfig.action_scale,
                        help="env from elsewhere: half-ranges of its actions the learner spans (EnvConfig)")
    parser.add_argument("--demo-noise", type=float, default=TrainConfig.demo_noise)
    parser.add_argument("--actor-lead", type=int, default=None,
                        help="ours_actorsN: env steps per actor the actors may run ahead of the learner's updates "
                             "(default: train --actors' 10)")
    parser.add_argument("--weights-period", type=float, default=None,
                        help="ours_actorsN: seconds between weight publications (default: train --actors' 0.25)")
    parser.add_argument("--out", type=Path, default=Path("runs/bench_learning"))
    args = parser.parse_args()

    results: dict[str, list[dict]] = {}
    stamp = run_stamp()
    for method in args.methods:
        for seed in args.seeds:
            cfg = recipe_config(
                args, seed, obs=args.obs, image_size=args.image_size,
                scripted_demos=0 if method in ("ours_no_demos", "sb3", "sb3_her") else args.demos,
                demo_policy=demo_policy_for(args.task, args.action_scale), demo_noise=args.demo_noise,
                action_scale=args.action_scale,
                actors=int(method.removeprefix("ours_actors")) if method.startswith("ours_actors") else 0,
                run_dir=args.out / f"{stamp}-{task_slug(args.task)}-{args.obs}-{method}-s{seed}",
            )
            start = time.time()
            overrides = {}
            if args.actor_lead is not None:
                overrides["max_actor_lead"] = args.actor_lead * cfg.actors
            if args.weights_period is not None:
                overrides["weights_period_s"] = args.weights_period
            if method.startswith("sb3"):
                curve = run_sb3(cfg, her=method.startswith("sb3_her"))
            elif method.startswith("ours_lockstep"):
                curve = run_lockstep(cfg, int(method.removeprefix("ours_lockstep")), overrides)
            else:
                curve = run_ours(cfg, overrides, method == "ours_episode_insert")
            row = {
                "seed": seed,
                "curve": curve,
                "steps_to_threshold": steps_to(curve, args.threshold),
                "final_success": curve[-1][1] if curve else None,
                "wall_s": round(time.time() - start),
            }
            results.setdefault(method, []).append(row)
            print(method, json.dumps(row), flush=True)

    saved = write_results("learning", results_name(stamp, args, args.obs, *args.methods),
                          vars(args) | {"results": results})
    print(f"results: {saved}")
    pct = f"{args.threshold:.0%}"
    print(f"\n| method | steps to {pct} per seed | median | final success per seed | wall time |")
    print("|---|---|---|---|---|")
    medians = {}
    for method, rows in results.items():
        medians[method], cells = steps_columns(rows, args.budget)
        print(f"| {method} | {' | '.join(cells)} | {sum(r['wall_s'] for r in rows)} s |")
    if "ours" in medians and np.isfinite(medians["ours"]):
        for other in medians:
            if other != "ours":
                ratio = medians[other] / medians["ours"]
                bound = "" if np.isfinite(ratio) else f" (>= {args.budget / medians['ours']:.1f}x: not reached)"
                print(f"steps-to-{pct} ratio {other} / ours: {ratio:.1f}x{bound}")


if __name__ == "__main__":
    main()
