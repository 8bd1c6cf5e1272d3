"""``robot-rl record-success-fail`` and ``robot-rl train-classifier`` (arguments and handlers)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from robot_rl.rewards.config import ClassifierConfig

if TYPE_CHECKING:
    import gymnasium as gym
    import numpy as np

Device = Literal["scripted", "keyboard", "spacemouse", "gamepad"]


@dataclass(frozen=True)
class RecordSuccessFailArgs:
    """Record camera frames labelled success / failure for the reward classifier.

    With ``--teleop scripted`` (simulation) a noisy scripted expert drives and frames are labelled by the
    task's true success, unattended. With a human device the operator drives; the success button starts
    labelling frames positive, the failure button stops it, reset ends the episode. With ``--policy`` a
    trained policy drives (the human device may still take over; the scripted one only labels): its rollouts
    hold the frames a classifier-reward policy learned to exploit, the hard negatives to retrain on.
    """

    task: str = "pick_cube"
    teleop: Device = "scripted"
    episodes: int = 20
    out: Path | None = None
    """Output folder (default ``success_fail/<task>``); appended to if it holds the same kind of frames."""
    image_size: int = 64
    cameras: tuple[str, ...] = ("front", "wrist")
    noise: float = 0.6
    """Scripted device: std of the expert's action noise (failures and near-misses as negatives)."""
    seed: int = 0
    policy: Path | None = None
    """A ``robot-rl train`` run folder or checkpoint whose (stochastic) policy drives while the device is idle."""


@dataclass(frozen=True)
class TrainClassifierArgs:
    """Train the binary success classifier on recorded frames; report held-out accuracy; save it."""

    data: tuple[Path, ...] = (Path("success_fail/pick_cube"),)
    """One or more ``record-success-fail`` folders."""
    out: Path = Path("classifiers/success.pt")
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)


def record_success_fail_command(args: RecordSuccessFailArgs) -> int:
    from robot_rl.rewards.dataset import ButtonLabel, default_out, record_success_fail, true_success_label
    from robot_rl.teleop import CorrectorConfig, make_teleop
    from robot_rl.training.env_factory import is_robot_rl_task

    if not is_robot_rl_task(args.task):
        raise ValueError(f"record-success-fail: {args.task!r} is not a robot_rl task (needs cameras)")
    if args.episodes <= 0:
        raise ValueError(f"record-success-fail: --episodes must be > 0, got {args.episodes}")
    env, policy = _recording_env(args)
    scripted = args.teleop == "scripted"
    takeover = 0.0 if policy is not None else 1.0  # with a policy driving, the scripted device only labels
    corrector = CorrectorConfig(threshold=math.inf, p_takeover_random=takeover, takeover_steps=1,
                                expert_noise_std=args.noise, seed=args.seed)
    device = make_teleop(args.teleop, corrector)
    out = args.out or default_out(args.task)

    def show(i: int, episode, positives: int) -> None:
        print(f"episode {i + 1}/{args.episodes}: {len(episode)} frames, {positives} success, "
              f"{len(episode) - positives} failure", flush=True)

    device.connect()
    try:
        _, stats = record_success_fail(env, args.task, device, args.episodes, out,
                                       true_success_label if scripted else ButtonLabel(), args.seed, show, policy)
    finally:
        device.disconnect()
    print(f"recorded {stats.frames} frames ({stats.positives} success, {stats.frames - stats.positives} failure) "
          f"in {stats.episodes} episodes -> {out}")
    return 0


def _recording_env(args: RecordSuccessFailArgs) -> tuple[Any, Callable[[dict], Any] | None]:
    if args.policy is None:
        from robot_rl.sim import make_env

        return make_env(args.task, obs_mode="pixels", image_size=args.image_size, cameras=args.cameras,
                        terminate_on_success=False), None

    return policy_recording_env(args.policy, args.task, args.image_size, args.cameras)


def train_classifier_command(args: TrainClassifierArgs) -> int:
    from robot_rl.rewards.classifier import save_classifier
    from robot_rl.rewards.dataset import load_frames
    from robot_rl.rewards.train import train_classifier

    keys = list(args.classifier.image_keys) or None
    frames = load_frames(args.data, keys)
    print(f"{len(frames)} frames ({int(frames.labels.sum())} success) from {len(set(frames.episode.tolist()))} "
          f"episodes", flush=True)
    model, report = train_classifier(frames, args.classifier, log=lambda s: print(s, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_classifier(args.out, model, report.threshold, report.as_dict())
    (args.out.with_suffix(".json")).write_text(json.dumps(report.as_dict(), indent=2))
    print(report.summary())
    print(f"saved {args.out} (report: {args.out.with_suffix('.json')})")
    return 0


def policy_recording_env(
    policy: str | os.PathLike[str], task: str, image_size: int, cameras: Sequence[str]
) -> tuple[gym.Env, Callable[[dict[str, np.ndarray]], np.ndarray]]:
    """A sim env for ``record_success_fail`` driven by a trained policy (run folder or checkpoint), and that
    policy's stochastic actions. A state policy gets a state env with the cameras rendered into its
    observations; a pixel policy's cameras must be the ones asked for."""
    from robot_rl.rewards.wrapper import SimCameraObservation
    from robot_rl.sim import make_env
    from robot_rl.training.loop import load_policy

    agent, cfg = load_policy(Path(policy))
    if cfg.env.task != task:
        raise ValueError(f"policy {policy}: trained on {cfg.env.task!r}, not {task!r}")
    trained = cfg.env
    if trained.obs == "pixels" and (trained.image_size, tuple(trained.cameras)) != (image_size, tuple(cameras)):
        raise ValueError(f"policy {policy}: its cameras {list(trained.cameras)} at {trained.image_size} px differ "
                         f"from the recording's {list(cameras)} at {image_size} px")
    env = make_env(task, obs_mode=trained.obs, image_size=image_size, cameras=tuple(cameras),
                   terminate_on_success=False, dense_reward=trained.dense_reward)
    if trained.obs == "state":
        env = SimCameraObservation(env, cameras, image_size)
    return env, lambda obs: agent.act(obs)
