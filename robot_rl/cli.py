"""``robot-rl``: one entry point, a subcommand per job. Flags come from the typed configs (tyro)."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal

import tyro

from robot_rl.teleop.base import TeleopName
from robot_rl.utils.shutdown import GracefulStop


@dataclass(frozen=True)
class EvalArgs:
    """Evaluate a trained policy deterministically on held-out seeds."""

    run: tyro.conf.Positional[Path]
    """A run folder (its latest checkpoint), a checkpoint file inside one, or a ``train-bc`` run folder."""
    episodes: int = 50
    video: Path | None = None
    """Write a GIF of the first episode here."""
    record: Path | None = None
    """Also record every episode as a rosbag2 recording (MCAP storage) in this new folder: what the policy saw,
    what it did, rewards and episode boundaries (``docs/data_format.md``)."""
    device: str = "cpu"


@dataclass(frozen=True)
class ReportArgs:
    """A one-page HTML summary of a run folder that opens offline: curves with confidence bands, every
    evaluation, stills of the latest evaluation video, config and git state."""

    run: tyro.conf.Positional[Path]
    """The run folder."""
    out: Path | None = None
    """Where to write the page (default ``<run>/report.html``)."""


@dataclass(frozen=True)
class RecordDemosArgs:
    """Record demonstrations with a task's scripted expert (or a policy of yours), in the on-disk demo format."""

    task: str = "pick_cube"
    episodes: int = 10
    """Episodes to keep: the scripted expert retries failed ones (up to 10 attempts per demo); with a teleop
    device, episodes to record."""
    noise: float = 0.0
    """Std of Gaussian noise on the expert's arm actions (diversity for learning)."""
    policy: str | None = None
    """Record with this policy instead of the task's scripted expert, named as a base policy is
    (``module:attr`` controller ``obs -> action``, run folder, TorchScript file): demos for an env from another
    library."""
    out: Path | None = None
    """Output folder (default ``demos/<task>-<obs>``); appended to if it holds the same kind of demos."""
    obs: Literal["state", "pixels"] = "state"
    image_size: int = 64
    keep_failed: bool = False
    """Keep episodes the expert failed (they still count as data; default drops them)."""
    seed: int = 0
    teleop: TeleopName = "none"
    """Record by hand with this device (``scripted``: the corrector drives, ``--noise`` applies); the arm holds
    still while the human is idle; success / failure / reset buttons end an episode."""
    action_scale: str = ""
    """An env from elsewhere acting through a narrowed action box, as ``train --action-scale`` (the demos record
    it; a run with another scale refuses them)."""


@dataclass(frozen=True)
class CheckHardwareArgs:
    """Check a live robot's driver topics against an arm config without moving it (it only subscribes):
    each required input's publisher, type, rate and frame, and the command topic's controller."""

    config: tyro.conf.Positional[str]
    """Arm config name (hardware_configs/arms/<name>.yaml) or path."""
    seconds: float = 3.0
    """How long to listen."""
    namespace: str = ""
    """The driver's namespace (as the bridge's ``namespace:=``)."""
    config_only: bool = False
    """Only validate the config file and print what the bridge will read, command and enforce (no ROS, no
    driver): the first check of a new arm config."""


def _check_hardware(args: CheckHardwareArgs) -> int:
    if args.config_only:
        from robot_rl.ros.inputs import describe_arm

        print("\n".join(describe_arm(args.config)))
        return 0
    from robot_rl.ros.selfcheck import check_hardware

    if not 0.5 <= args.seconds <= 600:
        raise ValueError(f"check-hardware: --seconds must be in [0.5, 600], got {args.seconds}")
    ok, lines = check_hardware(args.config, args.seconds, args.namespace)
    print("\n".join(lines))
    return 0 if ok else 1


def _train(config) -> int:
    if config.actors > 0:
        _setup_logging()
        from robot_rl.distributed.launch import train_distributed

        return train_distributed(config)
    from robot_rl.training.core import load_run_config
    from robot_rl.training.loop import Trainer

    parallel = (load_run_config(config.resume) if config.resume is not None else config).parallel.num_envs > 0
    if not parallel and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError(f"robot-rl train under torchrun (WORLD_SIZE={os.environ['WORLD_SIZE']}) runs data-parallel "
                         "replicas of the many-worlds trainer: give --num-envs N")
    if parallel:
        from robot_rl.training.parallel import ParallelTrainer

        trainer = ParallelTrainer(config)
    else:
        trainer = Trainer(config)
    if trainer.is_main:
        print(f"run folder: {trainer.run_dir.path}")
    with GracefulStop() as stop:
        result = trainer.run(should_stop=lambda: stop.requested)
    if stop.requested:
        print(f"robot-rl train: stopped ({stop.signal_name}) at {trainer.env_steps} env steps, checkpoint saved; "
              f"continue with --resume {trainer.run_dir.path}")
        return 0
    if result is not None:
        print(f"final eval: {result.summary()}")
    if trainer.is_main:
        print(f"run folder: {trainer.run_dir.path}")
    return 0


def _train_bc(config) -> int:
    from robot_rl.training.bc import train_bc

    run, result = train_bc(config)
    if result is not None:
        print(f"train-bc: eval on held-out seeds: {result.summary()}")
    print(f"run folder: {run.path} (use it as --base-policy {run.path})")
    return 0


def _setup_logging() -> None:
    import logging

    fmt = "%(asctime)s %(levelname)s %(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt, datefmt="%H:%M:%S")
    logging.getLogger("OpenGL").setLevel(logging.WARNING)  # PyOpenGL logs "No OpenGL_accelerate" at INFO


def _learner(config) -> int:
    _setup_logging()
    from robot_rl.distributed.learner import Learner

    learner = Learner(config)
    with GracefulStop(on_request=learner.stop) as stop:
        port = learner.start()
        print(f"run folder: {learner.run_dir.path}\nlistening on {config.link.host}:{port}", flush=True)
        try:
            result = learner.run()
        finally:
            learner.close()  # flushes the replay log and checkpoints
    if stop.requested:
        print(f"robot-rl learner: stopped ({stop.signal_name}) after {learner.env_steps} transitions, replay log "
              f"and checkpoint saved in {learner.run_dir.path}")
    elif result is not None:
        print(f"final eval: {result.summary()}")
    return 0


def run_actor_command(config) -> int:
    import json

    _setup_logging()
    from robot_rl.distributed.actor import Actor
    from robot_rl.distributed.client import LinkRefused

    try:
        with GracefulStop() as stop:
            summary = Actor(config).run(should_stop=lambda: stop.requested)
    except LinkRefused as err:
        print(f"robot-rl actor: error: {err}", file=sys.stderr)
        return 3
    except TimeoutError as err:
        print(f"robot-rl actor: error: {err}", file=sys.stderr)
        return 4
    if stop.requested:
        print(f"robot-rl actor: stopped ({stop.signal_name}) after {summary['steps']} steps, "
              f"{summary.get('pending', 0)} records unacknowledged", flush=True)
        return 0
    print("actor summary: " + json.dumps(summary), flush=True)
    return 0


def _eval(args: EvalArgs) -> int:
    from robot_rl.training.env_factory import make_env_from_config, success_criterion
    from robot_rl.training.evaluate import evaluate
    from robot_rl.training.loop import deterministic_policy_of

    act, reset, env_config = deterministic_policy_of(args.run, args.device)
    env = make_env_from_config(env_config, render_mode="rgb_array" if args.video else None)
    frames: list | None = [] if args.video else None
    recorder = None
    if args.record is not None:
        from robot_rl.data.demos import DemoMeta
        from robot_rl.formats.rosbag import EpisodeBagWriter

        recorder = EpisodeBagWriter(args.record, DemoMeta.for_env(env_config.task, env, notes=f"eval of {args.run}"))
    try:
        result = evaluate(act, env, args.episodes, frames=frames, criterion=success_criterion(env_config, env),
                          reset=reset, recorder=recorder)
    finally:
        if recorder is not None:
            recorder.close()
            print(f"recording: {args.record} ({recorder.episode} episodes)")
    print(f"{env_config.task} ({env_config.obs}): {result.summary()}")
    if args.video and frames:
        import imageio.v2 as imageio

        imageio.mimsave(args.video, frames, duration=1.0 / env.metadata.get("render_fps", 10), loop=0)
        print(f"video: {args.video}")
    return 0


def _record_demos(args: RecordDemosArgs) -> int:
    if args.teleop != "none":
        from robot_rl.commands.demos import record_teleop_demos_command

        return record_teleop_demos_command(args)
    from robot_rl.training.base_policy import EXPERT
    from robot_rl.training.env_factory import is_robot_rl_task, make_training_env
    from robot_rl.training.record import record_demos

    expert = args.policy in (None, EXPERT)
    if expert and not is_robot_rl_task(args.task):
        raise ValueError(f"record-demos: {args.task!r} has no scripted expert (robot_rl tasks only); record with "
                         "your own controller: --policy module:attr")
    if args.episodes <= 0:
        raise SystemExit(f"record-demos: --episodes must be > 0, got {args.episodes}")
    out = args.out or Path("demos") / f"{args.task.replace(':', '-')}-{args.obs}"
    env = make_training_env(args.task, args.obs, args.image_size, action_scale=args.action_scale)

    kept_count = 0

    def show(i: int, episode, kept: bool) -> None:
        nonlocal kept_count
        kept_count += kept
        status = "success" if episode.success else "FAILED"
        print(f"attempt {i + 1}: {status}, {len(episode)} steps, {'kept' if kept else 'dropped'} "
              f"({kept_count}/{args.episodes} kept)")

    _, stats = record_demos(env, args.task, args.episodes, out, args.policy, noise_std=args.noise, seed=args.seed,
                            keep_failed=args.keep_failed, on_episode=show)
    print(f"recorded {stats.recorded}, succeeded {stats.successes}, kept {stats.kept} -> {out}")
    if stats.kept < args.episodes:
        by = "this task's expert" if expert else repr(args.policy)
        print(f"record-demos: only {stats.kept} of {args.episodes} kept after {stats.recorded} attempts "
              f"(--noise {args.noise} is too much for {by})", file=sys.stderr)
        return 1
    return 0


def parse(argv: list[str]) -> object:
    """The config of one ``robot-rl`` command line (no ``robot-rl`` itself); bare = the main job."""
    from robot_rl.commands.classifier import RecordSuccessFailArgs, TrainClassifierArgs
    from robot_rl.commands.datasets import ExportDemosArgs, ImportDemosArgs
    from robot_rl.commands.sim_models import WriteSimModelsArgs
    from robot_rl.commands.symmetry import CalibrateCameraArgs, CheckSymmetryArgs
    from robot_rl.distributed.config import ActorConfig, LearnerConfig
    from robot_rl.training.bc import BCConfig
    from robot_rl.training.config import TrainConfig

    argv = argv or ["train"]
    train = TrainConfig.from_preset(chosen_preset(argv))  # a preset decides the defaults the flags override
    command = (
        Annotated[TrainConfig, tyro.conf.subcommand("train", default=train, description="Train SAC/RLPD on a task.")]
        | Annotated[EvalArgs, tyro.conf.subcommand("eval")]
        | Annotated[RecordDemosArgs, tyro.conf.subcommand("record-demos")]
        | Annotated[ReportArgs, tyro.conf.subcommand("report")]
        | Annotated[ImportDemosArgs, tyro.conf.subcommand("import-demos")]
        | Annotated[ExportDemosArgs, tyro.conf.subcommand("export-demos")]
        | Annotated[LearnerConfig, tyro.conf.subcommand(
            "learner", default=LearnerConfig(train=train),
            description="Learner of the actor/learner split (serves actors over gRPC).")]
        | Annotated[ActorConfig, tyro.conf.subcommand(
            "actor", description="Actor of the actor/learner split (control loop; streams to a learner).")]
        | Annotated[RecordSuccessFailArgs, tyro.conf.subcommand("record-success-fail")]
        | Annotated[TrainClassifierArgs, tyro.conf.subcommand("train-classifier")]
        | Annotated[CheckHardwareArgs, tyro.conf.subcommand("check-hardware")]
        | Annotated[CheckSymmetryArgs, tyro.conf.subcommand("check-symmetry")]
        | Annotated[CalibrateCameraArgs, tyro.conf.subcommand("calibrate-camera")]
        | Annotated[WriteSimModelsArgs, tyro.conf.subcommand("write-sim-models")]
        | Annotated[BCConfig, tyro.conf.subcommand(
            "train-bc", description="Behaviour cloning with action chunking from demos (a base policy).")]
    )
    return tyro.cli(command, args=argv, prog="robot-rl")


def chosen_preset(argv: list[str]) -> str:
    """The value of ``--preset`` (``train``) or ``--train.preset`` (``learner``), default ``quickstart``; the
    flag stays in ``argv`` so the config records it (and tyro refuses an unknown name, listing the presets)."""
    from robot_rl.training.config import PRESETS

    for i, arg in enumerate(argv):
        for flag in ("--preset", "--train.preset"):
            value = argv[i + 1] if arg == flag and i + 1 < len(argv) else arg.partition("=")[2]
            if (arg == flag or arg.startswith(flag + "=")) and value in PRESETS:
                return value
    return "quickstart"


def main(argv: list[str] | None = None) -> int:
    from robot_rl.commands.classifier import RecordSuccessFailArgs, TrainClassifierArgs
    from robot_rl.commands.datasets import (
        ExportDemosArgs,
        ImportDemosArgs,
        export_demos_command,
        import_demos_command,
    )
    from robot_rl.commands.sim_models import WriteSimModelsArgs, write_sim_models_command
    from robot_rl.commands.symmetry import (
        CalibrateCameraArgs,
        CheckSymmetryArgs,
        calibrate_camera_command,
        check_symmetry_command,
    )
    from robot_rl.distributed.config import ActorConfig, LearnerConfig
    from robot_rl.training.bc import BCConfig
    from robot_rl.training.config import TrainConfig

    try:
        chosen = parse(sys.argv[1:] if argv is None else argv)  # a nested config's check raises ValueError here
        if isinstance(chosen, TrainConfig):
            return _train(chosen)
        if isinstance(chosen, EvalArgs):
            return _eval(chosen)
        if isinstance(chosen, LearnerConfig):
            return _learner(chosen)
        if isinstance(chosen, ActorConfig):
            return run_actor_command(chosen)
        if isinstance(chosen, CheckHardwareArgs):
            return _check_hardware(chosen)
        if isinstance(chosen, BCConfig):
            return _train_bc(chosen)
        if isinstance(chosen, CheckSymmetryArgs):
            return check_symmetry_command(chosen)
        if isinstance(chosen, CalibrateCameraArgs):
            return calibrate_camera_command(chosen)
        if isinstance(chosen, WriteSimModelsArgs):
            return write_sim_models_command(chosen)
        if isinstance(chosen, ReportArgs):
            from robot_rl.training.report import write_report

            print(f"report: {write_report(chosen.run, chosen.out)}")
            return 0
        if isinstance(chosen, ImportDemosArgs):
            return import_demos_command(chosen)
        if isinstance(chosen, ExportDemosArgs):
            return export_demos_command(chosen)
        if isinstance(chosen, (RecordSuccessFailArgs, TrainClassifierArgs)):
            from robot_rl.commands.classifier import record_success_fail_command, train_classifier_command

            if isinstance(chosen, RecordSuccessFailArgs):
                return record_success_fail_command(chosen)
            return train_classifier_command(chosen)
        return _record_demos(chosen)
    except (ValueError, FileExistsError, FileNotFoundError, ImportError) as err:  # say what, no traceback
        print(f"robot-rl: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C where nothing is owed (evaluation, recording: episodes already on disk)
        print(f"robot-rl {argv_command(sys.argv[1:] if argv is None else argv)}: stopped (SIGINT)", file=sys.stderr)
        return 0


def argv_command(argv: list[str]) -> str:
    return next((a for a in argv if not a.startswith("-")), "train")


if __name__ == "__main__":
    sys.exit(main())
