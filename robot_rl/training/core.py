"""``LearnerCore``: what every runner that trains an agent owns, in one place.

The agent, the online and demo replays, the 50/50 sampler, the run folder and the counters; loading demos
(a folder, the run's own recorded demos, or the scripted expert's) and prior runs; one update; evaluation;
the checkpoint (its format, its atomic write, resume). ``Trainer`` (``robot-rl train``: one process, env in
the loop) and ``Learner`` (``robot-rl learner``: transitions arrive over gRPC) are thin loops around it and
differ only in where experience comes from and when they update, evaluate and checkpoint.

Seams for extensions: ``SACAgent.batch_transform`` (built here from ``TrainConfig.symmetry``) acts on every
sampled batch; ``sampler`` is anything with ``sample(batch_size, device) -> Batch`` (a device-resident replay
can stand in).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from robot_rl.agents.data_parallel import DataParallel
from robot_rl.agents.sac import SACAgent
from robot_rl.data.batch import Batch
from robot_rl.data.demos import check_action_scale, load_demos
from robot_rl.data.episode import Episode
from robot_rl.data.hindsight import goal_rewards_for
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.sampler import MixedSampler, Sampler
from robot_rl.data.transition import EXTRAS, episode_extras, episode_with_action_history
from robot_rl.envs.wrappers import learner_action_box, narrow_box_advice
from robot_rl.training.base_policy import EXPERT, BasePolicy, base_of, load_base_policy, with_base_actions
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import EnvConfig, success_criterion
from robot_rl.training.evaluate import EVAL_SEED_BASE, EvalResult, evaluate
from robot_rl.training.guide import JumpStart, guide_horizon
from robot_rl.training.hil import prepare_demo
from robot_rl.training.panels import EpisodePanel
from robot_rl.training.record import demo_summary, record_demos
from robot_rl.training.run_dir import RunDir, read_checkpoint
from robot_rl.training.symmetry import symmetry_augmentation
from robot_rl.utils.allocator import retain_freed_memory
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import from_jsonable

CHECKPOINT = "latest.pt"
CHECKPOINT_FORMAT = 2
"""Version of the checkpoint layout. 1: no ``format`` key (loads; its unused numpy RNG state is ignored)."""
DISTRIBUTED_FILE = "distributed.json"
"""Written by ``robot-rl learner`` into its run folder: its ``LearnerConfig`` without the ``train`` part."""
TRAIN_LOG_EVERY = 250
"""Update calls between rows of training metrics in the run log."""


def load_run_config(run: Path) -> TrainConfig:
    doc = _nested_env(RunDir(run).read_config(), run)
    agent = doc.get("agent", {})
    if isinstance(agent.get("compile"), bool):  # run folders that stored compile as a bool
        agent["compile"] = "on" if agent["compile"] else "off"
    return from_jsonable(TrainConfig, doc, where=f"{run}/config.json")


def _nested_env(doc: dict[str, Any], run: Path) -> dict[str, Any]:
    """A run folder from before the env settings were one ``EnvConfig``: they were top-level keys of config.json,
    and a learner's env factory was in distributed.json."""
    if "env" in doc:
        return doc
    names = [f.name for f in dataclasses.fields(EnvConfig)]
    env = {name: doc.pop(name) for name in names if name in doc}
    link = run / DISTRIBUTED_FILE
    if link.exists():
        env.update({k: v for k, v in json.loads(link.read_text()).items() if k in ("env_factory", "env_kwargs")})
    return {**doc, "env": env}


def resumed_config(requested: TrainConfig, run: Path) -> TrainConfig:
    """The config a resumed run continues with: the run's own (agent, task, data: what its checkpoint and replay
    were made with); only the step budget and the progress display may change."""
    saved = load_run_config(run)
    return dataclasses.replace(saved, run_dir=run, resume=requested.resume,
                               total_env_steps=requested.total_env_steps, progress=requested.progress)


def start_process(config: TrainConfig) -> None:
    """Process-wide settings of a training process: thread count, allocator, global torch seed."""
    torch.set_num_threads(max(1, config.torch_threads))
    retain_freed_memory(config.retained_heap_mb)
    torch.manual_seed(config.seed)


class LearnerCore:
    def __init__(self, config: TrainConfig, env: gym.Env, run_dir: RunDir,
                 say: Callable[[str], None] = print, data_parallel: DataParallel | None = None) -> None:
        """``env``: the run's env as the agent sees it (its spaces; a goal-conditioned env's ``compute_reward``
        for hindsight relabelling). ``say`` prints the runner's milestone lines. ``data_parallel``: this core is
        one replica of a data-parallel learner: it samples its share of each batch, and only the main replica
        logs."""
        self.train = cfg = config
        self.data_parallel = data_parallel
        replicas, replica = (1, 0) if data_parallel is None else (data_parallel.world_size, data_parallel.rank)
        if cfg.batch_size % replicas:
            raise ValueError(f"--batch-size {cfg.batch_size} does not split over {replicas} data-parallel replicas; "
                             f"give a multiple of {replicas}")
        self.batch_size = cfg.batch_size // replicas
        """Rows this process samples per batch."""
        self.is_main = replica == 0
        self.run_dir = run_dir
        self.say = say
        space, action_space = env.observation_space, env.action_space
        if (cfg.env.base_policy is None) != (cfg.agent.residual_scale is None):
            raise ValueError(
                f"a residual learner and a base policy go together: got --base-policy {cfg.env.base_policy!r} "
                f"with --agent.residual-scale {cfg.agent.residual_scale!r} (use --preset residual --base-policy BASE)")
        self.base = base_of(env)
        self.action_space = action_space
        self.action_box = learner_action_box(env)
        """Where an env from elsewhere maps the learner's [-1, 1] (None for robot_rl tasks)."""
        par = cfg.parallel  # many worlds: updates_per_step update calls per vector step of num_envs env steps
        calls_per_env_step = par.updates_per_step / par.num_envs if par.num_envs else 1.0
        planned = int(max(0, cfg.total_env_steps - cfg.learning_starts) * calls_per_env_step) * cfg.agent.utd_ratio
        self.symmetry = symmetry_augmentation(cfg, env, say)
        self.agent = SACAgent(cfg.agent, space, action_space, device=cfg.device, seed=cfg.seed,
                              batch_transform=self.symmetry, planned_updates=planned, data_parallel=data_parallel)
        say(self.agent.compile_note)
        action_dim = action_space.shape[0]
        goals = goal_rewards_for(cfg.replay, env, "--replay.hindsight")
        if goals is not None:
            say(f"hindsight relabelling: {goals.fraction:.0%} of sampled transitions get a goal their episode "
                "reached later (a goal-conditioned env; --replay.hindsight off disables it)")
        self.replay = self.online_replay(space, action_dim, goals)
        self.demo_replay = ReplayBuffer(space, action_dim, cfg.replay, extras_keys=EXTRAS,
                                        seed=cfg.seed + 1 + 1000 * replica, goals=goals)
        self.sampler: Sampler = MixedSampler(self.replay, self.demo_replay, demo_fraction=0.5)
        self.env_steps = self.episodes = self.updates = self.update_calls = 0
        self._updated_in_process = False
        self.last_eval: EvalResult | None = None
        self.jump_start: JumpStart | None = None
        """Jump-start RL's schedule (``start_guide``): h, and the guide where this process steps the env."""
        self.eval_guide: BasePolicy | None = None
        if cfg.init_from is not None and cfg.resume is None:
            self._init_agent_from(Path(cfg.init_from))

    def _init_agent_from(self, source: Path) -> None:
        """``--init-from``: the agent of another run, all of it (networks, targets, temperature, optimisers)."""
        ckpt = source / "checkpoints" / CHECKPOINT if source.is_dir() else source
        if not ckpt.exists():
            raise FileNotFoundError(f"--init-from {source}: no checkpoint at {ckpt}")
        theirs = load_run_config(ckpt.parent.parent)
        state = read_checkpoint(ckpt, self.train.device)
        try:
            self.agent.load_state_dict(state["agent"])
        except (KeyError, RuntimeError, ValueError) as err:
            raise ValueError(
                f"--init-from {source}: its agent (task {theirs.env.task!r}, obs {theirs.env.obs!r}, "
                f"{theirs.agent.num_critics} critics of {list(theirs.agent.hidden_dims)}) does not fit this run's "
                f"(task {self.train.env.task!r}, obs {self.train.env.obs!r}, {self.train.agent.num_critics} critics "
                f"of {list(self.train.agent.hidden_dims)}); give the same agent settings ({err})") from err
        # A new run: its update counters start at 0, so its critic warm-up (and compile note) apply to it.
        self.agent.num_critic_updates = self.agent.num_actor_updates = 0
        self.agent.anchor_here()
        self.say(f"agent initialised from {ckpt} (trained {int(state['env_steps'])} env steps there); this run's "
                 "replay and counters start empty")

    # ------------------------------------------------------------------------------------------------ data
    def online_replay(self, space: gym.spaces.Dict, action_dim: int, goals) -> ReplayBuffer:
        """Where this runner's own experience goes (a runner of many worlds keeps it on its device)."""
        cfg = self.train
        return ReplayBuffer(space, action_dim, cfg.replay, extras_keys=EXTRAS, seed=cfg.seed, goals=goals)

    def demo_episodes(self, record_env: gym.Env | None) -> tuple[list[Episode], str]:
        """The demos of this run and where they came from: ``demos`` if given, else the ones this run recorded
        before (a resumed learner), else ``scripted_demos`` recorded now with the task's expert in
        ``record_env`` (None: this run cannot record, e.g. a real arm's env)."""
        cfg = self.train
        recorded = self.run_dir.path / "demos"
        named_task = cfg.env.task if cfg.env.env_factory is None else None  # a factory's demos carry its own name
        scale = None if self.action_box is None else self.action_box.scale
        if cfg.demos is not None:
            check_action_scale(cfg.demos, scale)
            return load_demos(cfg.demos, task=named_task), str(cfg.demos)
        if (recorded / "meta.json").exists():
            check_action_scale(recorded, scale)
            return load_demos(recorded), str(recorded)
        if cfg.scripted_demos <= 0:
            return [], "none"
        expert = cfg.demo_policy in (None, EXPERT)
        if expert and not cfg.env.robot_rl_task:
            return [], (f"none (--scripted-demos {cfg.scripted_demos} skipped: {cfg.env.name!r} has no scripted "
                        "expert; give recorded demos with --demos DIR, or a controller that records them with "
                        "--demo-policy module:attr)")
        if record_env is None:
            return [], f"none (--scripted-demos {cfg.scripted_demos} skipped: this runner records no demos)"
        episodes, stats = record_demos(record_env, cfg.env.name, cfg.scripted_demos, recorded, cfg.demo_policy,
                                       noise_std=cfg.demo_noise, seed=cfg.seed)
        summary = demo_summary(stats, cfg.scripted_demos, cfg.demo_noise, None if expert else cfg.demo_policy)
        return episodes, f"{summary} -> {recorded}"

    def add_demos(self, episodes: Sequence[Episode]) -> None:
        for i, episode in enumerate(episodes):
            episode = with_base_actions(episode, self.base, f"demo {i}")
            episode = episode_with_action_history(episode, self.train.env.action_history, self.action_space,
                                                  f"demo {i}")
            self.demo_replay.add_episode(episode_extras(prepare_demo(episode, self.train)))
        actions = np.concatenate([e.actions for e in episodes]) if episodes else np.zeros((0, 1))
        if self.is_main and (advice := narrow_box_advice(actions, self.action_box)):
            self.say(advice)

    # ---------------------------------------------------------------------------------------------- update
    def update(self, sample: Callable[[], Batch] | None = None) -> dict[str, float]:
        """One ``agent.update`` (``utd_ratio`` critic steps and an actor step) on mixed batches."""
        cfg = self.train
        if not self._updated_in_process and self.agent.compiled:
            self.say("compiling the update step (torch.compile, 20-40 s, once per process) ...")
        self._updated_in_process = True
        metrics = self.agent.update(sample or (lambda: self.sampler.sample(self.batch_size, cfg.device)))
        if self.symmetry is not None:
            metrics["symmetry_transformed"] = self.symmetry.last_transformed_fraction
        self.update_calls += 1
        self.updates += cfg.agent.utd_ratio
        if self.update_calls % TRAIN_LOG_EVERY == 0 and self.is_main:
            self.run_dir.log("train", self.env_steps, metrics)
        return metrics

    def evaluate(self, env: gym.Env, frames: list[np.ndarray] | None = None) -> EvalResult:
        """Deterministic success on the held-out evaluation seeds, logged and plotted; the first episode drawn
        as a panel (``training/panels.py``)."""
        panel = EpisodePanel(self.agent.q_value) if self.is_main else None
        result = evaluate(lambda o: self.agent.act(o, deterministic=True), env, self.train.eval_episodes,
                          EVAL_SEED_BASE, frames=frames, criterion=success_criterion(self.train.env, env),
                          recorder=panel)
        if panel is not None and panel.steps:
            self.save_panel(panel, "eval")
        return self.record_eval(result)

    # ------------------------------------------------------------------------------------ jump-start guide
    def start_guide(self, eval_env: gym.Env, train_env: gym.Env | None) -> None:
        """``--guide.policy``: the schedule of h, a guide instance for the evaluation env (the combined policy's
        evaluations move the curriculum) and, where this process steps a training env, one for it (a scripted
        expert reads its own env's simulator). Actor processes run their own guide on h from the learner."""
        cfg = self.train
        g = cfg.guide
        if g.policy is None:
            return
        horizon = guide_horizon(g, eval_env, cfg.env.name)
        guide = None if train_env is None else load_base_policy(g.policy, train_env, g.noise, g.policy_sha256,
                                                                seed=cfg.seed)
        self.eval_guide = load_base_policy(g.policy, eval_env, g.noise, g.policy_sha256, seed=cfg.seed + 1)
        self.jump_start = JumpStart(guide, g, horizon, cfg.seed, episodes_per_judgement=cfg.eval_episodes)
        self.say(f"jump-start guide {g.policy!r}: {g.schedule} h over {horizon} steps per episode")

    def advance_guide(self, eval_env: gym.Env) -> bool:
        """After an evaluation: log h; on the curriculum, evaluate the combined policy and move h down a stage
        when it is at its best. True when h moved."""
        jump, guide = self.jump_start, self.eval_guide
        if jump is None or guide is None:
            return False
        h, metrics, moved = jump.h, {"h": float(jump.h)}, False
        if jump.config.schedule == "curriculum" and h > 0:
            policy, reset = jump.combined(guide, lambda o: self.agent.act(o, deterministic=True))
            result = evaluate(policy, eval_env, self.train.eval_episodes, EVAL_SEED_BASE, reset=reset,
                              criterion=success_criterion(self.train.env, eval_env))
            metrics["combined_success"] = result.success_rate or 0.0
            moved = jump.after_evaluation(metrics["combined_success"], result.mean_length)
            self.say(f"[{self.env_steps} steps] guide for {h} steps, then the policy: {result.summary()}"
                     + (f"; h -> {jump.h}" if moved else ""))
        if self.is_main:
            self.run_dir.log("guide", self.env_steps, metrics)
        return moved

    def save_panel(self, panel: EpisodePanel, kind: str) -> None:
        """``<run>/panels/<kind>_<steps>.png`` and TensorBoard's ``<kind>/panel``."""
        path = self.run_dir.path / "panels" / f"{kind}_{self.env_steps:07d}.png"
        panel.save(path, f"{self.run_dir.path.name}: {kind} episode at {self.env_steps:,} env steps")
        self.run_dir.log_image(f"{kind}/panel", path, self.env_steps)

    def record_eval(self, result: EvalResult) -> EvalResult:
        """An evaluation's figures: kept as the latest, logged and plotted (by the main replica)."""
        self.last_eval = result
        if self.is_main:
            self.run_dir.log("eval", self.env_steps, result.metrics())
            self.run_dir.plot_learning_curve()
        return result

    # ----------------------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, extra: dict[str, Any] | None = None, with_replay: bool = True) -> Path:
        """Agent (networks, optimisers, RNGs), counters and ``extra``, each file written atomically; the replays
        too unless the runner keeps them elsewhere (the learner's replay log)."""
        ckpt_dir = self.run_dir.checkpoints
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        if with_replay:
            self.replay.save(ckpt_dir / "replay.npz")
            self.demo_replay.save(ckpt_dir / "demo_replay.npz")
        state: dict[str, Any] = {
            "format": CHECKPOINT_FORMAT,
            "agent": self.agent.state_dict(),
            "env_steps": self.env_steps,
            "episodes": self.episodes,
            "updates": self.updates,
            "update_calls": self.update_calls,
            "torch_rng": torch.get_rng_state(),
            **({} if self.jump_start is None else {"guide": self.jump_start.state_dict()}),
            **(extra or {}),
        }
        return atomic_write(ckpt_dir / CHECKPOINT, lambda f: torch.save(state, f))

    def load_checkpoint(self, with_replay: bool = True) -> dict[str, Any] | None:
        """Restore what ``save_checkpoint`` wrote (None if there is no checkpoint yet); returns the whole state
        for the runner's own entries."""
        path = self.run_dir.checkpoints / CHECKPOINT
        if not path.exists():
            return None
        state = read_checkpoint(path, self.train.device)
        version = int(state.get("format", 1))
        if version > CHECKPOINT_FORMAT:
            raise ValueError(f"{path}: checkpoint format {version} is newer than this robot_rl reads "
                             f"(format {CHECKPOINT_FORMAT}); upgrade robot_rl to resume it")
        self.agent.load_state_dict(state["agent"])
        self.updates = int(state["updates"])
        self.update_calls = int(state.get("update_calls", self.updates // self.train.agent.utd_ratio))
        torch.set_rng_state(state["torch_rng"])
        if self.jump_start is not None:
            self.jump_start.load_state_dict(state["guide"])
        if with_replay:  # the step and episode counts describe the replay: whoever keeps it restores them
            self.env_steps, self.episodes = int(state["env_steps"]), int(state["episodes"])
            self.replay.load(self.run_dir.checkpoints / "replay.npz")
            self.demo_replay.load(self.run_dir.checkpoints / "demo_replay.npz")
        return state
