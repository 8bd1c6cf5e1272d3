"""``robot-rl train --num-envs N``: the learner core fed by N worlds of the batched simulator at once.

Every vector step acts in all worlds with one batched forward pass, stores the N transitions in a replay on
the learner's device (``DeviceReplay``: per-world rings, n-step returns at sample time) and makes
``updates_per_step`` agent updates on batches mixed 50/50 with the demos, as the single-env loop does. The
agent, its checkpoint and the run folder are ``LearnerCore``'s, so a run trained here evaluates, deploys and
continues like any other; evaluation is on the single CPU env and its held-out seeds (for the tasks of
another simulator behind Isaac Lab's env API, ``--backend isaaclab|mjlab``, on the worlds themselves).

Started by ``torchrun --nproc-per-node W``, the learner runs as W data-parallel replicas
(``robot_rl.agents.data_parallel``): replica r steps worlds r*N/W ... (r+1)*N/W - 1 of the ``--num-envs N``
(seeded as those worlds of one process would be), keeps their transitions in its own device replay, samples
``batch_size / W`` rows per batch and averages gradients with the others. The main replica (rank 0)
evaluates, logs and writes the checkpoint, which is the same file a one-process run writes; each replica
keeps its replay shard beside it for ``--resume``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from tqdm import tqdm

from robot_rl.agents.data_parallel import DataParallel, from_torchrun, replica_device
from robot_rl.data.device_replay import DeviceReplay
from robot_rl.data.transition import EXTRAS
from robot_rl.training.base_policy import pin_policies
from robot_rl.training.config import ISAACLAB_BACKENDS, TrainConfig
from robot_rl.training.core import CHECKPOINT, LearnerCore, resumed_config, start_process
from robot_rl.training.env_factory import is_robot_rl_task, make_env_from_config, randomization_config
from robot_rl.training.evaluate import TRAIN_SEED_BASE, EvalResult, evaluate_worlds
from robot_rl.training.run_dir import RunDir

DEVICE_REPLAY_FILE = "device_replay.pt"
DEMO_REPLAY_FILE = "demo_replay.npz"


def make_worlds(config: TrainConfig, data_parallel: DataParallel | None = None):
    """The run's ``--num-envs`` worlds of its task on the chosen backend (``auto`` resolved); a data-parallel
    replica makes its own share of them."""
    p, env = config.parallel, config.env
    replicas, replica = (1, 0) if data_parallel is None else (data_parallel.world_size, data_parallel.rank)
    if p.num_envs % replicas:
        raise ValueError(f"--num-envs {p.num_envs} does not split over {replicas} data-parallel replicas; give a "
                         f"multiple of {replicas}")
    num_envs = p.num_envs // replicas
    seed = config.seed + replica * num_envs
    if p.backend in ISAACLAB_BACKENDS:
        from robot_rl.envs.isaaclab import make_isaaclab_worlds

        if env.dense_reward or env.randomization != "none" or env.success_key is not None or env.action_history:
            raise ValueError(f"--backend {p.backend}: --dense-reward, --randomization, --success-key and "
                             "--action-history are robot_rl task settings; the task's env config sets its rewards, "
                             "events and observations (--env-kwargs), --success-term names its success")

        return make_isaaclab_worlds(p.backend, env.task, num_envs, config.device, seed, p.obs_group, p.success_term,
                                    overrides=json.loads(env.env_kwargs))
    from robot_rl.sim.batched import BatchedEnvConfig, WarpConfig, make_batched_env

    if not is_robot_rl_task(env.task):
        raise ValueError(f"--num-envs {p.num_envs}: {env.task!r} is not a robot_rl task; the batched simulator "
                         "runs robot_rl's own tasks")
    warp_fields = {k: v for k, v in (("device", p.warp_device), ("start_pool", p.start_pool)) if v is not None}
    warp = dataclasses.replace(WarpConfig(), **warp_fields)
    backend = p.backend if p.backend != "auto" else _auto_backend()
    batched = BatchedEnvConfig(num_envs=num_envs, backend=backend, num_threads=p.num_threads, seed=seed, warp=warp,
                               action_history=env.action_history)
    return make_batched_env(env.task, batched, dense_reward=env.dense_reward,
                            randomization=randomization_config(env.randomization))


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
        dp = from_torchrun(cfg.device)
        self.replica = 0 if dp is None else dp.rank
        self.progress = cfg.progress and self.replica == 0
        cfg = dataclasses.replace(cfg, device=replica_device(cfg.device, dp))
        start_process(cfg)
        self.worlds = make_worlds(cfg, dp)
        # Isaac Lab API tasks have no single CPU env: they are evaluated on their own worlds
        self.eval_env = None if cfg.parallel.backend in ISAACLAB_BACKENDS else make_env_from_config(cfg.env)
        if self.worlds.device != torch.empty(0, device=cfg.device).device:  # "cuda" is cuda:0
            raise ValueError(f"--num-envs {cfg.parallel.num_envs}: the worlds run on {self.worlds.device} but the "
                             f"learner on --device {cfg.device}; give --device {self.worlds.device}")
        path = cfg.run_dir or RunDir.default_path(cfg.env.task, cfg.env.obs)
        run_dir = RunDir(path if dp is None else dp.from_main(path))
        super().__init__(cfg, self.eval_env or WorldSpaces(self.worlds), run_dir, say=self._log_line, data_parallel=dp)
        replicas = "" if dp is None else f" in {dp.world_size} data-parallel replicas of {self.worlds.num_envs}"
        self._log_line(f"{cfg.parallel.num_envs} worlds of {cfg.env.task}{replicas} on {self.worlds.physics.name} "
                       f"({self.worlds.device}); replay {self.replay.per_world} steps per world")
        if cfg.resume is not None:
            if self.load_checkpoint() is None:
                raise FileNotFoundError(f"--resume {run_dir.path}: no checkpoint at {run_dir.checkpoints / CHECKPOINT}")
            self._log_line(f"resumed {run_dir.path} at {self.env_steps} env steps, {len(self.replay)} transitions")
        else:
            if self.is_main:  # the others load the demos it records
                run_dir.create(cfg)
                episodes, source = self.demo_episodes(self.eval_env)
            if dp is not None:
                dp.barrier()
            if not self.is_main:
                episodes, source = self.demo_episodes(None)
            self.add_demos(episodes)
            self._log_line(f"demos: {source}; {len(self.demo_replay)} demo transitions")
        if dp is not None:  # exploration noise of its own: replicas act from one seeded state
            self.agent.act_generator.manual_seed(cfg.seed * 1_000_003 + 7_919 * dp.rank + self.env_steps)

    def online_replay(self, space, action_dim: int, goals) -> DeviceReplay:
        if goals is not None:
            raise ValueError("--num-envs: hindsight relabelling needs the one-env loop (--replay.hindsight off)")
        cfg = self.train
        extras = {k: torch.from_numpy(np.zeros(0, v)).dtype for k, v in EXTRAS.items()}
        replicas = 1 if self.data_parallel is None else self.data_parallel.world_size
        replay = dataclasses.replace(cfg.replay, capacity=cfg.replay.capacity // replicas)  # the same per world
        return DeviceReplay(space, action_dim, self.worlds.num_envs, replay, extras, self.worlds.device,
                            seed=cfg.seed + 1000 * self.replica)

    def run(self, should_stop: Callable[[], bool] = lambda: False) -> EvalResult | None:
        """Train to ``total_env_steps`` or until ``should_stop()`` (on any replica); then checkpoint (replay
        included)."""
        cfg, worlds, n = self.train, self.worlds, self.train.parallel.num_envs
        obs = self._start_episodes()
        returns = torch.zeros(worlds.num_envs, device=worlds.device)
        lengths = torch.zeros(worlds.num_envs, dtype=torch.long, device=worlds.device)
        bar = tqdm(total=cfg.total_env_steps, initial=self.env_steps, disable=not self.progress, unit="step",
                   dynamic_ncols=True)
        next_eval = (self.env_steps // cfg.eval_every + 1) * cfg.eval_every
        next_checkpoint = (self.env_steps // cfg.checkpoint_every + 1) * cfg.checkpoint_every
        started, steps_at_start = time.perf_counter(), self.env_steps
        stop = False
        while self.env_steps < cfg.total_env_steps and not stop:
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
            stop = self._log_episodes(ended, returns, lengths, infos, should_stop())
            bar.update(n)
            if self.env_steps >= cfg.learning_starts and len(self.replay) > 0:
                for _ in range(cfg.parallel.updates_per_step):
                    self.update()
            if self.env_steps >= next_eval or self.env_steps >= cfg.total_env_steps:
                if self.eval_env is None:  # every replica evaluates its worlds, then training starts afresh
                    result = self.record_eval(evaluate_worlds(self.agent.act_batch, worlds, self.data_parallel))
                    obs = self._start_episodes()
                    returns.zero_()
                    lengths.zero_()
                else:
                    result = self.evaluate(self.eval_env) if self.is_main else None
                if result is not None:
                    self._log_line(f"[{self.env_steps} steps] eval: {result.summary()}")
            if self.env_steps >= next_eval:
                next_eval += cfg.eval_every
            if self.env_steps >= next_checkpoint:
                self._checkpoint()
                next_checkpoint += cfg.checkpoint_every
            rate = (self.env_steps - steps_at_start) / max(time.perf_counter() - started, 1e-9)
            bar.set_postfix(ep=self.episodes, eval=self._eval_str(), sps=f"{rate:.0f}", refresh=False)
        bar.close()
        self._checkpoint()
        if self.is_main:
            self.run_dir.plot_learning_curve()
        self.run_dir.close()
        self.worlds.close()
        if self.data_parallel is not None:
            self.data_parallel.close()
        return self.last_eval

    # --- internals -----------------------------------------------------------------------------------
    def _start_episodes(self) -> dict[str, torch.Tensor]:
        """New episodes in every world (the run's start, a resume, after evaluating on the worlds); what the
        replay holds of the episodes left unfinished ends there (bootstrapped, as at a time limit)."""
        self.replay.end_episodes()
        first_world = self.replica * self.worlds.num_envs  # this replica's worlds are those of one process
        seed = TRAIN_SEED_BASE + self.train.seed * 1_000_000 + self.episodes + first_world
        return self.worlds.reset(seed=seed)[0]

    def _log_episodes(self, ended: torch.Tensor, returns: torch.Tensor, lengths: torch.Tensor, infos,
                      stop: bool) -> bool:
        """One ``episode`` row per vector step in which worlds ended (over every replica's worlds): their mean
        return, length and success. Returns whether any replica was asked to stop: replicas leave the loop
        together, each at the same step."""
        success = infos.get("final_info", infos).get("is_success")  # None: the env reports no success
        parts = (ended.sum(), returns[ended].sum(), lengths[ended].sum(),
                 torch.zeros(()) if success is None else success[ended].sum(), torch.tensor(stop))
        sums = torch.stack([part.double().to(ended.device) for part in parts])
        if self.data_parallel is not None:
            self.data_parallel.sum_(sums)
        count, total_return, total_length, successes, stops = sums.tolist()
        if count > 0:
            self.episodes += int(count)
            if self.is_main:
                figures = {"return": total_return / count, "length": total_length / count, "episodes_ended": count}
                if success is not None:
                    figures["success"] = successes / count
                self.run_dir.log("episode", self.env_steps, figures)
            returns[ended] = 0.0
            lengths[ended] = 0
        return stops > 0

    def _shard(self, name: str) -> Path:
        """This replica's file of a replay kept per replica (``name`` itself for a single process / rank 0)."""
        path = self.run_dir.checkpoints / name
        return path if self.replica == 0 else path.with_name(f"{path.stem}.rank-{self.replica}{path.suffix}")

    def _checkpoint(self) -> None:
        if self.is_main:
            self.save_checkpoint(with_replay=False)
        self.replay.save(self._shard(DEVICE_REPLAY_FILE))
        self.demo_replay.save(self._shard(DEMO_REPLAY_FILE))

    def load_checkpoint(self, with_replay: bool = True):
        state = super().load_checkpoint(with_replay=False)
        if state is None:
            return None
        self.env_steps, self.episodes = int(state["env_steps"]), int(state["episodes"])
        for replay, name in ((self.replay, DEVICE_REPLAY_FILE), (self.demo_replay, DEMO_REPLAY_FILE)):
            shard = self._shard(name)
            if not shard.exists():
                raise FileNotFoundError(f"--resume {self.run_dir.path}: no {shard.name} for replica {self.replica}; "
                                        "resume with as many torchrun processes as the run was started with")
            replay.load(shard)
        return state

    def _eval_str(self) -> str:
        rate = None if self.last_eval is None else self.last_eval.success_rate
        return "-" if rate is None else f"{rate:.0%}"

    def _log_line(self, text: str) -> None:
        if not self.is_main:
            return
        if self.progress:
            tqdm.write(text)
        else:
            print(text, flush=True)


class WorldSpaces(gym.Env):
    """The spaces of one of ``worlds``: what the learner core builds its agent and replays for, where there is
    no single env of the task (Isaac Lab API backends)."""

    def __init__(self, worlds) -> None:
        self.observation_space = worlds.single_observation_space
        self.action_space = worlds.single_action_space
