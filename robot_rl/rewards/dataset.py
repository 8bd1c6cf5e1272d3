"""Success / failure frames for the reward classifier: recording and loading.

On disk the frames are ordinary demo episodes (``robot_rl.data.demos``) with one extra per-step info array,
``info/label`` [T]: the success label of observation t+1 (the frame *after* step t). So the same tools read
them, and ``load_frames`` flattens any number of such folders into one labelled frame set.

Labels come from a ``Labeler``: with the scripted device in simulation, the task's true success (runs
unattended); with a human device, the operator's buttons (success press: frames are positive from now on,
failure press: negative again), like HIL-SERL's ``record_success_fail`` (there, holding the space bar).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.demos import DemoMeta, DemoWriter, load_demos
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import INFO_KEYS, is_image_key
from robot_rl.teleop.base import Teleoperator
from robot_rl.teleop.intervention import InterventionConfig, InterventionWrapper

LABEL_KEY = "label"
SUCCESS_FAIL_SEED_BASE = 700_000_000  # disjoint from training, demo and evaluation seeds


@dataclass
class FrameSet:
    """N labelled frames. observations: ``{key: [N, ...]}``; labels bool [N]; episode int [N] (source episode)."""

    observations: dict[str, np.ndarray]
    labels: np.ndarray
    episode: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, index: np.ndarray) -> FrameSet:
        return FrameSet({k: v[index] for k, v in self.observations.items()}, self.labels[index], self.episode[index])

    @property
    def image_keys(self) -> list[str]:
        return sorted(k for k in self.observations if is_image_key(k))


def load_frames(paths: Sequence[str | os.PathLike[str]], keys: Sequence[str] | None = None) -> FrameSet:
    """Every labelled frame under the given recording folders: the observation ``keys`` when given (each must
    be in every episode), else the keys every episode has (a state policy's rollouts also carry
    ``privileged``; the classifier reads images only)."""
    episodes = [(path, ep) for path in paths for ep in load_demos(path)]
    if not episodes:
        raise ValueError(f"no labelled frames under {[str(p) for p in paths]}")
    common = set.intersection(*(set(ep.observations) for _, ep in episodes))
    for path, ep in episodes:
        if LABEL_KEY not in ep.infos:
            raise ValueError(f"{path}: episode without info/{LABEL_KEY} (not a record-success-fail folder)")
        if keys is not None and not set(keys) <= set(ep.observations):
            raise ValueError(f"{path}: an episode lacks observation keys {sorted(set(keys) - set(ep.observations))}")
    chosen = sorted(common) if keys is None else list(keys)
    obs = {k: np.concatenate([ep.observations[k][1:] for _, ep in episodes]) for k in chosen}
    labels = np.concatenate([np.asarray(ep.infos[LABEL_KEY], bool) for _, ep in episodes])
    episode_ids = np.concatenate([np.full(len(ep), i) for i, (_, ep) in enumerate(episodes)])
    return FrameSet(obs, labels, episode_ids)


Labeler = Callable[[dict[str, Any], InterventionWrapper], bool]


def true_success_label(info: dict[str, Any], wrapper: InterventionWrapper) -> bool:
    """Simulation: the task's own success (``info["is_success"]``)."""
    return bool(info.get("is_success", False))


class ButtonLabel:
    """Human labels: a success press starts labelling frames positive, a failure press stops it."""

    def __init__(self) -> None:
        self.positive = False

    def __call__(self, info: dict[str, Any], wrapper: InterventionWrapper) -> bool:
        buttons = wrapper.last_command.buttons
        if buttons.success:
            self.positive = True
        if buttons.failure:
            self.positive = False
        return self.positive


@dataclass
class SuccessFailStats:
    episodes: int = 0
    frames: int = 0
    positives: int = 0


def record_success_fail(
    env: gym.Env,
    task: str,
    device: Teleoperator,
    episodes: int,
    out: str | os.PathLike[str] | None,
    labeler: Labeler = true_success_label,
    seed: int = 0,
    on_episode: Callable[[int, Episode, int], None] | None = None,
    policy: Callable[[dict[str, np.ndarray]], np.ndarray] | None = None,
) -> tuple[list[Episode], SuccessFailStats]:
    """Run ``episodes`` episodes and label every frame. ``device`` acts while it is active; otherwise
    ``policy`` acts (default: hold still). Frames from a trained policy's rollouts are the hard negatives: the
    states a policy reaches that the classifier mistook for success (HIL-SERL retrains on such frames).

    Operator buttons do not end episodes here (success / failure set labels); reset ends one. The env should
    not terminate on success (``terminate_on_success=False``) so positive frames accumulate while the
    object is held up. Writes to ``out`` in the demo format plus ``info/label``.
    """
    wrapped = InterventionWrapper(env, device, InterventionConfig(buttons_end_episode=False))
    contract = env.get_wrapper_attr("contract")  # a camera wrapper's, which adds its images
    writer = DemoWriter(out, DemoMeta(task=task, contract=contract, notes="success/fail frames")) if out else None
    hold = np.zeros(env.action_space.shape, np.float32)
    stats = SuccessFailStats()
    kept: list[Episode] = []
    for i in range(episodes):
        obs, _ = wrapped.reset(seed=SUCCESS_FAIL_SEED_BASE + seed * 10_000 + i)
        if isinstance(labeler, ButtonLabel):
            labeler.positive = False
        frames = {k: [v] for k, v in obs.items()}
        actions, rewards, labels = [], [], []
        infos: dict[str, list[bool]] = {k: [] for k in INFO_KEYS}
        done = terminated = False
        while not done:
            action = hold if policy is None else np.asarray(policy(obs), np.float32)
            obs, reward, terminated, truncated, info = wrapped.step(action)
            done = terminated or truncated or wrapped.last_command.buttons.reset
            actions.append(info.get("intervention_action", action))
            rewards.append(float(reward))
            labels.append(labeler(info, wrapped))
            for k in INFO_KEYS:
                infos[k].append(bool(info.get(k, False)))
            for k, v in obs.items():
                frames[k].append(v)
        episode = Episode(
            observations={k: np.stack(v) for k, v in frames.items()},
            actions=np.stack(actions).astype(np.float32),
            rewards=np.asarray(rewards, np.float32),
            terminated=bool(terminated),
            truncated=not terminated,
            infos={**{k: np.asarray(v, bool) for k, v in infos.items()}, LABEL_KEY: np.asarray(labels, bool)},
        )
        if writer is not None:
            writer.write(episode)
        kept.append(episode)
        stats.episodes += 1
        stats.frames += len(episode)
        stats.positives += int(np.sum(labels))
        if on_episode is not None:
            on_episode(i, episode, int(np.sum(labels)))
    return kept, stats


def default_out(task: str) -> Path:
    return Path("success_fail") / task
