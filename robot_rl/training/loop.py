"""Single-process off-policy training: env -> agent -> replay -> updates, with evaluation and checkpoints."""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from robot_rl.agents.sac import SACAgent
from robot_rl.data.demos import load_demos
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.sampler import MixedSampler
from robot_rl.data.transition import EXTRAS, episode_extras, step_env
from robot_rl.training.config import TrainConfig
from robot_rl.training.env_factory import is_robot_rl_task, make_env_from_config
from robot_rl.training.evaluate import EVAL_SEED_BASE, TRAIN_SEED_BASE, EvalResult, evaluate
from robot_rl.training.hil import (
    check_rlif_has_device,
    episode_metrics,
    few_critics_warning,
    make_router,
    prepare_demo,
    teleop_device,
    without_teleop,
    wrap_training_env,
)
from robot_rl.training.record import demo_summary, record_scripted_demos
from robot_rl.training.run_dir import RunDir, read_checkpoint
from robot_rl.utils.allocator import retain_freed_memory
from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import from_jsonable

CHECKPOINT = "latest.pt"
DISTRIBUTED_FILE = "distributed.json"
"""Written by ``robot-rl learner`` into its run folder: the link settings, including its ``env_factory``."""


def load_run_config(run: Path) -> TrainConfig:
    return from_jsonable(TrainConfig, RunDir(run).read_config(), where=f"{run}/config.json")


class Trainer:
    """Owns env, agent, replay and the run folder. ``run()`` trains to ``total_env_steps``."""

    def __init__(self, config: TrainConfig) -> None:
        if config.resume is not None:
            resume_dir = Path(config.resume)
            saved = load_run_config(resume_dir)
            # The run's own config wins; only the budget and cosmetic flags may change on resume.
            config = dataclasses.replace(
                saved,
                resume=resume_dir,
                run_dir=resume_dir,
                total_env_steps=config.total_env_steps,
                progress=config.progress,
            )
        self.config = cfg = config
        check_rlif_has_device(cfg)
        torch.set_num_threads(max(1, cfg.torch_threads))
        retain_freed_memory(cfg.retained_heap_mb)
        torch.manual_seed(cfg.seed)
        self.run_dir = RunDir(cfg.run_dir or RunDir.default_path(cfg.task, cfg.obs))
        self.env = wrap_training_env(make_env_from_config(cfg, training=True), cfg)  # teleop / reward classifier
        want_video = cfg.video == "on" or (cfg.video == "auto" and cfg.obs == "pixels")
        self.record_video = want_video and is_robot_rl_task(cfg.task)
        self.eval_env = make_env_from_config(cfg, render_mode="rgb_array" if self.record_video else None)
        space, action_dim = self.env.observation_space, self.env.action_space.shape[0]
        self.agent = SACAgent(cfg.agent, space, self.env.action_space, device=cfg.device, seed=cfg.seed)
        self.replay = ReplayBuffer(space, action_dim, cfg.replay, extras_keys=EXTRAS, seed=cfg.seed)
        self.demo_replay = ReplayBuffer(space, action_dim, cfg.replay, extras_keys=EXTRAS, seed=cfg.seed + 1)
        self.sampler = MixedSampler(self.replay, self.demo_replay, demo_fraction=0.5)
        self.router = make_router(cfg, self.replay, self.demo_replay)  # interventions -> demos; RLIF labels
        self.env_steps = self.episodes = self.updates = 0
        self.last_eval: EvalResult | None = None
        self._rng = np.random.default_rng(cfg.seed)

        if cfg.resume is not None:
            self._load_checkpoint()
        else:
            self.run_dir.create(cfg)
            self._load_demos()
        if advice := few_critics_warning(cfg):
            self._log_line(advice)

    # --- data ------------------------------------------------------------------------------------------
    def _load_demos(self) -> None:
        cfg = self.config
        if cfg.demos is not None:
            episodes = load_demos(cfg.demos)
            source = str(cfg.demos)
        elif cfg.scripted_demos > 0 and is_robot_rl_task(cfg.task):
            out = self.run_dir.path / "demos"
            episodes, stats = record_scripted_demos(  # the corrector watches training, not the expert
                without_teleop(self.env), cfg.task, cfg.scripted_demos, out, noise_std=cfg.demo_noise,
                seed=cfg.seed,
            )
            source = f"{demo_summary(stats, cfg.scripted_demos, cfg.demo_noise)} -> {out}"
        else:
            episodes, source = [], "none"
        for episode in episodes:
            self.demo_replay.add_episode(prepare_demo(episode_extras(episode), cfg))
        self._log_line(f"demos: {source}; {len(self.demo_replay)} demo transitions")

    # --- main loop -------------------------------------------------------------------------------------
    def run(self, should_stop: Callable[[], bool] = lambda: False) -> EvalResult | None:
        """Train to ``total_env_steps``, or until ``should_stop()`` (Ctrl-C): either way the steps so far are kept
        (an open episode bootstrapped, as at the budget) and checkpointed, so ``--resume`` loses nothing."""
        cfg = self.config
        env = self.env
        obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
        episode_return, episode_length = 0.0, 0
        interactive = sys.stderr.isatty()  # in logs and CI, redraw rarely instead of flooding the file
        bar = tqdm(
            total=cfg.total_env_steps,
            initial=self.env_steps,
            disable=not cfg.progress,
            dynamic_ncols=True,
            unit="step",
            mininterval=0.5 if interactive else 30.0,
        )
        update_time, updates_at_start = 0.0, self.updates
        checkpoint_due = False
        while self.env_steps < cfg.total_env_steps and not should_stop():
            if self.env_steps < cfg.random_steps:
                action = env.action_space.sample()
            else:
                action = self.agent.act(obs, deterministic=False)
            step = step_env(env, obs, action)
            self.router.add(step.transition)
            obs, info = step.transition.next_obs, step.info
            self.env_steps += 1
            episode_return += step.transition.reward
            episode_length += 1
            bar.update(1)

            if self.env_steps >= cfg.learning_starts and len(self.replay) > 0:
                start = time.perf_counter()
                metrics = self.agent.update(lambda: self.sampler.sample(cfg.batch_size, cfg.device))
                if self.updates > updates_at_start:  # updates/s leaves out the first (compiling) call
                    update_time += time.perf_counter() - start
                self.updates += cfg.agent.utd_ratio
                if self.env_steps % 250 == 0:
                    self.run_dir.log("train", self.env_steps, metrics)

            if self.env_steps % cfg.checkpoint_every == 0:
                checkpoint_due = True
            if self.env_steps % cfg.eval_every == 0 or self.env_steps == cfg.total_env_steps:
                self._evaluate()

            if step.done:
                self.episodes += 1
                success = bool(info.get("is_success", False))
                self.run_dir.log(
                    "episode",
                    self.env_steps,
                    {"return": episode_return, "length": episode_length, "success": float(success),
                     **episode_metrics(info)},
                )
                obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
                episode_return, episode_length = 0.0, 0
                if checkpoint_due:  # only at episode boundaries: no half episode is ever persisted
                    self.save_checkpoint()
                    checkpoint_due = False
            timed = self.updates - updates_at_start - cfg.agent.utd_ratio  # all calls but the first
            ups = timed / update_time if update_time > 0 else 0.0
            bar.set_postfix(ep=self.episodes, eval=self._eval_str(), ups=f"{ups:.0f}", refresh=False)
        bar.close()
        self.router.flush()
        self.replay.end_episode()  # the budget may end mid-episode: keep its steps, bootstrapped
        self.save_checkpoint()
        self.run_dir.plot_learning_curve()
        self.run_dir.close()
        device = teleop_device(self.env)
        if device is not None and device.is_connected:
            device.disconnect()
        return self.last_eval

    def _eval_str(self) -> str:
        return "-" if self.last_eval is None else f"{self.last_eval.success_rate:.0%}"

    def _evaluate(self) -> None:
        cfg = self.config
        frames: list[np.ndarray] | None = [] if self.record_video else None
        result = evaluate(
            lambda o: self.agent.act(o, deterministic=True),
            self.eval_env,
            cfg.eval_episodes,
            EVAL_SEED_BASE,
            frames=frames,
        )
        self.last_eval = result
        self.run_dir.log("eval", self.env_steps, result.metrics())
        if frames:
            self.run_dir.save_video(frames, f"eval_{self.env_steps:07d}", fps=self._fps())
        self.run_dir.plot_learning_curve()
        self._log_line(f"[{self.env_steps} steps] eval: {result.summary()}")

    def _fps(self) -> float:
        return float(self.eval_env.metadata.get("render_fps", 10))

    def _log_line(self, text: str) -> None:
        """Milestones (demos, evaluations, resume) are printed with or without the progress bar."""
        if self.config.progress:
            tqdm.write(text)
        else:
            print(text, flush=True)

    # --- checkpoints -----------------------------------------------------------------------------------
    def save_checkpoint(self) -> Path:
        """Agent + optimisers + counters + replay, each written to a temp name then renamed."""
        ckpt_dir = self.run_dir.checkpoints
        ckpt_dir.mkdir(parents=True, exist_ok=True)
        self.replay.save(ckpt_dir / "replay.npz")
        self.demo_replay.save(ckpt_dir / "demo_replay.npz")
        state: dict[str, Any] = {
            "agent": self.agent.state_dict(),
            "env_steps": self.env_steps,
            "episodes": self.episodes,
            "updates": self.updates,
            "torch_rng": torch.get_rng_state(),
            "numpy_rng": self._rng.bit_generator.state,
        }
        return atomic_write(ckpt_dir / CHECKPOINT, lambda f: torch.save(state, f))

    def _load_checkpoint(self) -> None:
        ckpt_dir = self.run_dir.checkpoints
        path = ckpt_dir / CHECKPOINT
        if not path.exists():
            raise FileNotFoundError(f"--resume {self.run_dir.path}: no checkpoint at {path}")
        state = read_checkpoint(path, self.config.device)
        self.agent.load_state_dict(state["agent"])
        self.env_steps, self.episodes, self.updates = state["env_steps"], state["episodes"], state["updates"]
        torch.set_rng_state(state["torch_rng"])
        self._rng.bit_generator.state = state["numpy_rng"]
        self.replay.load(ckpt_dir / "replay.npz")
        self.demo_replay.load(ckpt_dir / "demo_replay.npz")
        self._log_line(
            f"resumed {self.run_dir.path} at {self.env_steps} env steps, {len(self.replay)} transitions"
        )


def _run_env(run: Path, cfg: TrainConfig) -> Any:
    """The env whose spaces the run's agent was built for: a learner's ``env_factory`` (a real arm's spec env)
    when it had one, else the task of its config."""
    distributed = run / DISTRIBUTED_FILE
    link = json.loads(distributed.read_text()) if distributed.exists() else {}
    return make_env_from_config(cfg, env_factory=link.get("env_factory"), env_kwargs=link.get("env_kwargs", "{}"))


def load_agent(run_or_checkpoint: Path, device: str = "cpu") -> tuple[SACAgent, TrainConfig]:
    """Rebuild the agent of a run folder (or of a checkpoint file inside one) for evaluation/deployment."""
    path = Path(run_or_checkpoint)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run folder or checkpoint file")
    ckpt = path if path.is_file() else path / "checkpoints" / CHECKPOINT
    if not ckpt.exists():
        raise FileNotFoundError(f"no checkpoint at {ckpt}")
    run = ckpt.parent.parent
    cfg = load_run_config(run)
    state = read_checkpoint(ckpt, device)
    env = _run_env(run, cfg)
    agent = SACAgent(cfg.agent, env.observation_space, env.action_space, device=device, seed=cfg.seed)
    env.close()
    try:
        agent.load_state_dict(state["agent"])
    except (KeyError, RuntimeError, ValueError) as err:
        raise ValueError(f"{ckpt}: does not fit the agent of {run}/config.json ({err})") from err
    return agent, cfg
