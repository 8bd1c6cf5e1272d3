"""``robot-rl train --num-envs N``: the learner core fed by N worlds of the batched simulator at once.

Every vector step acts in all worlds with one batched forward pass, stores the N transitions in a replay on
the learner's device (``DeviceReplay``: per-world rings, n-step returns at sample time) and makes
``updates_per_step`` agent updates on batches mixed 50/50 with the demos, as the single-env loop does. The
agent, its checkpoint and the run folder are ``LearnerCore``'s, so a run trained here evaluates, deploys and
continues like any other; evaluation is on the single CPU env and its held-out seeds.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from robot_rl.data.device_replay import DeviceReplay
from robot_rl.data.transition import EXTRAS
from robot_rl.training.base_policy import pin_policies
from robot_rl.training.config import TrainConfig
from robot_rl.training.core import CHECKPOINT, LearnerCore, resumed_config, start_process
from robot_rl.training.env_factory import is_robot_rl_task, make_env_from_config, randomization_preset
from robot_rl.training.evaluate import TRAIN_SEED_BASE, EvalResult
from robot_rl.training.run_dir import RunDir

DEVICE_REPLAY_FILE = "device_replay.pt"


def make_worlds(config: TrainConfig):
    """The run's ``--num-envs`` worlds of its task on the chosen backend (``auto`` resolved)."""
    from robot_rl.sim.batched import BatchedEnvConfig, WarpConfig, make_batched_env

    p, env = config.parallel, config.env
    if not is_robot_rl_task(env.task):
        raise ValueError(f"--num-envs {p.num_envs}: {env.task!r} is not a robot_rl task; the batched simulator "
                         "runs robot_rl's own tasks")
    warp_fields = {k: v for k, v in (("device", p.warp_device), ("start_pool", p.start_pool)) if v is not None}
    warp = dataclasses.replace(WarpConfig(), **warp_fields)
    backend = p.backend if p.backend != "auto" else _auto_backend()
    batched = BatchedEnvConfig(num_envs=p.num_envs, backend=backend, num_threads=p.num_threads,
                               seed=config.seed, warp=warp)
    return make_batched_env(env.task, batched, dense_reward=env.dense_reward,
                            randomization=randomization_preset(env.randomization))


def _auto_backend() -> str:
    try:
        from robot_rl.sim.batched.warp import import_warp

        wp, _ = import_warp()
    except ImportError:
        return "mujoco-threads"
    return "warp" if wp.is_cuda_available() else "mujoco-threads"


class ParallelTrainer(LearnerCore):
    """``robot-rl train --num-envs N``: ``run()`` trains to ``total_env_steps`` (counted over all worlds)."""

    def __init__(self, config: TrainConfig) -> None:
        cfg = pin_policies(config) if config.resume is None else resumed_config(config, Path(config.resume))
        start_process(cfg)
        self.eval_env = make_env_from_config(cfg.env)
        self.worlds = make_worlds(cfg)
        if self.worlds.device != torch.empty(0, device=cfg.device).device:  # "cuda" is cuda:0
            raise ValueError(f"--num-envs {cfg.parallel.num_envs}: the worlds run on {self.worlds.device} but the "
                             f"learner on --device {cfg.device}; give --device {self.worlds.device}")
        run_dir = RunDir(cfg.run_dir or RunDir.default_path(cfg.env.task, cfg.env.obs))
        super().__init__(cfg, self.eval_env, run_dir, say=self._log_line)
        self._log_line(f"{cfg.parallel.num_envs} worlds of {cfg.env.task} on {self.worlds.physics.name} "
                       f"({self.worlds.device}); replay {self.replay.per_world} steps per world")
        if cfg.resume is not None:
            if self.load_checkpoint() is None:
                raise FileNotFoundError(f"--resume {run_dir.path}: no checkpoint at {run_dir.checkpoints / CHECKPOINT}")
            self._log_line(f"resumed {run_dir.path} at {self.env_steps} env steps, {len(self.replay)} transitions")
        else:
            run_dir.create(cfg)
            episodes, source = self.demo_episodes(self.eval_env)
            self.add_demos(episodes)
            self._log_line(f"demos: {source}; {len(self.demo_replay)} demo transitions")

    def online_replay(self, space, action_dim: int, goals) -> DeviceReplay:
        if goals is not None:
            raise ValueError("--num-envs: hindsight relabelling needs the one-env loop (--replay.hindsight off)")
        cfg = self.train
        extras = {k: torch.from_numpy(np.zeros(0, v)).dtype for k, v in EXTRAS.items()}
        return DeviceReplay(space, action_dim, cfg.parallel.num_envs, cfg.replay, extras, self.worlds.device,
                            seed=cfg.seed)

    def run(self, should_stop: Callable[[], bool] = lambda: False) -> EvalResult | None:
        """Train to ``total_env_steps`` or until ``should_stop()``; then checkpoint (replay included)."""
        cfg, worlds, n = self.train, self.worlds, self.train.parallel.num_envs
        obs, _ = worlds.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
        returns = torch.zeros(n, device=worlds.device)
        lengths = torch.zeros(n, dtype=torch.long, device=worlds.device)
        bar = tqdm(total=cfg.total_env_steps, initial=self.env_steps, disable=not cfg.progress, unit="step",
                   dynamic_ncols=True)
        next_eval = (self.env_steps // cfg.eval_every + 1) * cfg.eval_every
        next_checkpoint = (self.env_steps // cfg.checkpoint_every + 1) * cfg.checkpoint_every
        started, steps_at_start = time.perf_counter(), self.env_steps
        while self.env_steps < cfg.total_env_steps and not should_stop():
            with torch.no_grad():
                if self.env_steps < cfg.random_steps:
                    worlds.actions.uniform_(-1.0, 1.0)
                else:
                    worlds.actions.copy_(self.agent.act_batch(obs, deterministic=False))
            action = worlds.actions.clone()
            next_obs, reward, terminated, truncated, infos = worlds.step(worlds.actions)
            ended = terminated | truncated
            self.replay.add(obs, action, reward, infos.get("final_obs", next_obs), terminated, ended)
            obs = next_obs
            self.env_steps += n
            returns += reward
            lengths += 1
            if bool(ended.any()):
                self._log_episodes(ended, returns, lengths, infos)
            bar.update(n)
            if self.env_steps >= cfg.learning_starts and len(self.replay) > 0:
                for _ in range(cfg.parallel.updates_per_step):
                    self.update()
            if self.env_steps >= next_eval or self.env_steps >= cfg.total_env_steps:
                result = self.evaluate(self.eval_env)
                self._log_line(f"[{self.env_steps} steps] eval: {result.summary()}")
                next_eval += cfg.eval_every
            if self.env_steps >= next_checkpoint:
                self._checkpoint()
                next_checkpoint += cfg.checkpoint_every
            rate = (self.env_steps - steps_at_start) / max(time.perf_counter() - started, 1e-9)
            bar.set_postfix(ep=self.episodes, eval=self._eval_str(), sps=f"{rate:.0f}", refresh=False)
        bar.close()
        self._checkpoint()
        self.run_dir.plot_learning_curve()
        self.run_dir.close()
        self.worlds.close()
        return self.last_eval

    # --- internals -----------------------------------------------------------------------------------
    def _log_episodes(self, ended: torch.Tensor, returns: torch.Tensor, lengths: torch.Tensor, infos) -> None:
        """One ``episode`` row per vector step in which worlds ended: their mean return, length and success."""
        final = infos.get("final_info", infos)
        count = int(ended.sum())
        self.episodes += count
        self.run_dir.log("episode", self.env_steps, {
            "return": float(returns[ended].mean()), "length": float(lengths[ended].float().mean()),
            "success": float(final["is_success"][ended].float().mean()), "episodes_ended": float(count),
        })
        returns[ended] = 0.0
        lengths[ended] = 0

    def _checkpoint(self) -> None:
        self.save_checkpoint(with_replay=False)
        self.replay.save(self.run_dir.checkpoints / DEVICE_REPLAY_FILE)
        self.demo_replay.save(self.run_dir.checkpoints / "demo_replay.npz")

    def load_checkpoint(self, with_replay: bool = True):
        state = super().load_checkpoint(with_replay=False)
        if state is None:
            return None
        self.env_steps, self.episodes = int(state["env_steps"]), int(state["episodes"])
        self.replay.load(self.run_dir.checkpoints / DEVICE_REPLAY_FILE)
        self.demo_replay.load(self.run_dir.checkpoints / "demo_replay.npz")
        return state

    def _eval_str(self) -> str:
        rate = None if self.last_eval is None else self.last_eval.success_rate
        return "-" if rate is None else f"{rate:.0%}"

    def _log_line(self, text: str) -> None:
        if self.train.progress:
            tqdm.write(text)
        else:
            print(text, flush=True)
