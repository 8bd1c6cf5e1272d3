"""``robot-rl train``: the single-process loop (env -> agent -> replay -> updates) on the learner core; and
``load_agent`` / ``load_policy``: a run's whole agent (to continue it) or its acting part (to evaluate or
deploy it)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from robot_rl.agents.policy import ActingPolicy
from robot_rl.agents.sac import SACAgent
from robot_rl.data.transition import step_env
from robot_rl.envs.success import EpisodeSuccess
from robot_rl.training.base_policy import pin_policies
from robot_rl.training.config import TrainConfig
from robot_rl.training.core import (
    CHECKPOINT,
    LearnerCore,
    load_run_config,
    resumed_config,
    start_process,
)
from robot_rl.training.env_factory import EnvConfig, is_robot_rl_task, make_env_from_config, success_criterion
from robot_rl.training.evaluate import TRAIN_SEED_BASE, EvalResult
from robot_rl.training.hil import (
    check_rlif_has_device,
    episode_metrics,
    few_critics_warning,
    make_router,
    teleop_device,
    without_teleop,
    wrap_training_env,
)
from robot_rl.training.panels import EpisodePanel
from robot_rl.training.run_dir import RunDir, read_checkpoint

if TYPE_CHECKING:
    from robot_rl.formats.rosbag import EpisodeBagWriter


class Trainer(LearnerCore):
    """The single-process runner: env, agent, replay and the run folder. ``run()`` trains to
    ``total_env_steps``."""

    def __init__(self, config: TrainConfig) -> None:
        cfg = pin_policies(config) if config.resume is None else resumed_config(config, Path(config.resume))
        check_rlif_has_device(cfg)
        start_process(cfg)
        self.env = wrap_training_env(make_env_from_config(cfg.env, training=True), cfg)  # teleop / reward classifier
        want_video = cfg.video == "on" or (cfg.video == "auto" and cfg.env.obs == "pixels")
        self.record_video = want_video and is_robot_rl_task(cfg.env.task)
        self.eval_env = make_env_from_config(cfg.env, render_mode="rgb_array" if self.record_video else None)
        run_dir = RunDir(cfg.run_dir or RunDir.default_path(cfg.env.task, cfg.env.obs))
        super().__init__(cfg, self.env, run_dir, say=self._log_line)
        self.router = make_router(cfg, self.replay, self.demo_replay)  # interventions -> demos; RLIF labels
        self.start_guide(self.eval_env, self.env)

        if cfg.resume is not None:
            state = self.load_checkpoint()
            if state is None:
                raise FileNotFoundError(f"--resume {run_dir.path}: no checkpoint at {run_dir.checkpoints / CHECKPOINT}")
            self._log_line(f"resumed {run_dir.path} at {self.env_steps} env steps, {len(self.replay)} transitions")
        else:
            run_dir.create(cfg)
            episodes, source = self.demo_episodes(without_teleop(self.env))  # the corrector watches training only
            self.add_demos(episodes)
            self._log_line(f"demos: {source}; {len(self.demo_replay)} demo transitions")
        if advice := few_critics_warning(cfg):
            self._log_line(advice)

    # --- main loop -------------------------------------------------------------------------------------
    def run(self, should_stop: Callable[[], bool] = lambda: False) -> EvalResult | None:
        """Train to ``total_env_steps``, or until ``should_stop()`` (Ctrl-C): either way the steps so far are kept
        (an open episode bootstrapped, as at the budget) and checkpointed, so ``--resume`` loses nothing."""
        cfg = self.train
        env = self.env
        obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
        recorder = self._recorder()
        if recorder is not None:
            recorder.begin(obs)
        # with a person (or the scripted corrector) able to take over, the latest episode with an intervention
        # is drawn as a panel, at most once per evaluation interval
        panel = EpisodePanel(self.agent.q_value) if teleop_device(self.env) is not None else None
        panel_due = 0
        if panel is not None:
            panel.begin(obs)
        guide = self.jump_start
        if guide is not None:
            guide.start_episode()
        episode_return, episode_length = 0.0, 0
        criterion = success_criterion(cfg.env, env)
        success = EpisodeSuccess(criterion)
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
            if guide is not None and guide.acts(episode_length):
                action = guide.guide(obs)
            elif self.env_steps < cfg.random_steps:
                action = env.action_space.sample()
            else:
                action = self.agent.act(obs, deterministic=False)
            step = step_env(env, obs, action)
            self.router.add(step.transition)
            if recorder is not None:
                recorder.record(step)
            if panel is not None:
                panel.record(step)
            obs, info = step.transition.next_obs, step.info
            self.env_steps += 1
            episode_return += step.transition.reward
            episode_length += 1
            success.step(info)
            bar.update(1)

            if self.env_steps >= cfg.learning_starts and len(self.replay) > 0:
                start = time.perf_counter()
                self.update()
                if self.updates > updates_at_start + cfg.agent.utd_ratio:  # leave out the first (compiling) call
                    update_time += time.perf_counter() - start

            if self.env_steps % cfg.checkpoint_every == 0:
                checkpoint_due = True
            if self.env_steps % cfg.eval_every == 0 or self.env_steps == cfg.total_env_steps:
                self._evaluate()

            if step.done:
                self.episodes += 1
                known = {} if success.value is None else {"success": float(success.value)}
                self.run_dir.log("episode", self.env_steps,
                                 {"return": episode_return, "length": episode_length, **known,
                                  **episode_metrics(info)})
                obs, _ = env.reset(seed=TRAIN_SEED_BASE + cfg.seed * 1_000_000 + self.episodes)
                if recorder is not None:
                    recorder.begin(obs)
                if panel is not None:
                    if panel.intervened and self.env_steps >= panel_due:
                        self.save_panel(panel, "train")
                        panel_due = self.env_steps + cfg.eval_every
                    panel = EpisodePanel(self.agent.q_value)
                    panel.begin(obs)
                if guide is not None:
                    guide.start_episode()
                episode_return, episode_length = 0.0, 0
                success = EpisodeSuccess(criterion)
                if checkpoint_due:  # only at episode boundaries: no half episode is ever persisted
                    self.save_checkpoint()
                    checkpoint_due = False
            timed = self.updates - updates_at_start - cfg.agent.utd_ratio  # all calls but the first
            ups = timed / update_time if update_time > 0 else 0.0
            bar.set_postfix(ep=self.episodes, eval=self._eval_str(), ups=f"{ups:.0f}", refresh=False)
        bar.close()
        if recorder is not None:
            recorder.close()  # an open episode is kept, marked truncated and interrupted
        self.router.flush()
        self.replay.end_episode()  # the budget may end mid-episode: keep its steps, bootstrapped
        self.save_checkpoint()
        self.run_dir.plot_learning_curve()
        self.run_dir.close()
        device = teleop_device(self.env)
        if device is not None and device.is_connected:
            device.disconnect()
        return self.last_eval

    def _recorder(self) -> EpisodeBagWriter | None:
        """``--record-episodes``: this run's training episodes as a rosbag2 recording in a new folder under
        ``<run>/recordings`` (one per start: a resumed run records beside the earlier ones)."""
        if not self.train.record_episodes:
            return None
        from robot_rl.data.demos import DemoMeta
        from robot_rl.formats.rosbag import EpisodeBagWriter

        root = self.run_dir.path / "recordings"
        root.mkdir(exist_ok=True)
        path = root / f"train-{len(list(root.glob('train-*'))):03d}"
        self._log_line(f"recording training episodes to {path}")
        return EpisodeBagWriter(path, DemoMeta.for_env(self.train.env.task, without_teleop(self.env),
                                                       notes=f"training episodes of {self.run_dir.path}"))

    def _eval_str(self) -> str:
        rate = None if self.last_eval is None else self.last_eval.success_rate
        return "-" if rate is None else f"{rate:.0%}"

    def _evaluate(self) -> None:
        frames: list[np.ndarray] | None = [] if self.record_video else None
        result = self.evaluate(self.eval_env, frames)
        if frames:
            self.run_dir.save_video(frames, f"eval_{self.env_steps:07d}", fps=self._fps(), tag="eval/video",
                                    step=self.env_steps)
        self._log_line(f"[{self.env_steps} steps] eval: {result.summary()}")
        self.advance_guide(self.eval_env)

    def _fps(self) -> float:
        return float(self.eval_env.metadata.get("render_fps", 10))

    def _log_line(self, text: str) -> None:
        """Milestones (demos, evaluations, resume) are printed with or without the progress bar."""
        if self.train.progress:
            tqdm.write(text)
        else:
            print(text, flush=True)


def _checkpoint_of(run_or_checkpoint: Path, device: str) -> tuple[Path, TrainConfig, dict[str, Any], Any]:
    """(checkpoint file, the run's config, the checkpoint, the run's env for its spaces)."""
    path = Path(run_or_checkpoint)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such run folder or checkpoint file")
    ckpt = path if path.is_file() else path / "checkpoints" / CHECKPOINT
    if not ckpt.exists():
        raise FileNotFoundError(f"no checkpoint at {ckpt}")
    cfg = load_run_config(ckpt.parent.parent)
    state = read_checkpoint(ckpt, device)
    env = make_env_from_config(cfg.env)  # the spaces the agent was built for
    env.close()
    return ckpt, cfg, state, env


def load_agent(run_or_checkpoint: Path, device: str = "cpu") -> tuple[SACAgent, TrainConfig]:
    """The whole agent of a run folder (or of a checkpoint file inside one): networks, optimisers, RNGs."""
    ckpt, cfg, state, env = _checkpoint_of(run_or_checkpoint, device)
    agent = SACAgent(cfg.agent, env.observation_space, env.action_space, device=device, seed=cfg.seed)
    try:
        agent.load_state_dict(state["agent"])
    except (KeyError, RuntimeError, ValueError) as err:
        raise ValueError(f"{ckpt}: does not fit the agent of {ckpt.parent.parent}/config.json ({err})") from err
    return agent, cfg


def deterministic_policy_of(run_or_checkpoint: Path, device: str = "cpu") -> tuple[
        Callable[[dict[str, np.ndarray]], np.ndarray], Callable[[], None] | None, EnvConfig]:
    """How a run acts when evaluated: (act, a reset for every episode start or None, the env config it was
    trained for). A ``train-bc`` run acts through its chunked policy; any other run through its agent's
    deterministic action."""
    from robot_rl.training.bc import bc_run_env, is_bc_run, load_bc_policy

    if is_bc_run(run_or_checkpoint):
        chunked = load_bc_policy(run_or_checkpoint)
        return chunked, chunked.reset, bc_run_env(run_or_checkpoint)
    policy, cfg = load_policy(run_or_checkpoint, device)
    return (lambda obs: policy.act(obs, deterministic=True)), None, cfg.env


def load_policy(run_or_checkpoint: Path, device: str = "cpu") -> tuple[ActingPolicy, TrainConfig]:
    """The acting part of a run's agent (evaluation, deployment, actors): no critics or optimisers are built."""
    ckpt, cfg, state, env = _checkpoint_of(run_or_checkpoint, device)
    policy = ActingPolicy(cfg.agent, env.observation_space, env.action_space, device=device, seed=cfg.seed)
    try:
        modules = state["agent"]["modules"]
        policy.load_actor_state_dict({k: modules[k] for k in ("encoder", "actor", "gripper_q") if k in modules})
    except (KeyError, RuntimeError, ValueError) as err:
        raise ValueError(f"{ckpt}: does not fit the agent of {ckpt.parent.parent}/config.json ({err})") from err
    return policy, cfg
