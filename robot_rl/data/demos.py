"""Demo recordings on disk: one compressed ``.npz`` per episode plus ``meta.json`` (see docs/data_format.md).

  <dir>/meta.json              format + version, task, contract spec, observation space, creation time, code
  <dir>/episode_000000.npz     np.savez_compressed: obs/<key> [T+1, ...], actions [T, A], rewards [T],
  <dir>/episode_000001.npz     terminated, truncated (bool scalars), info/<key> [T], format_version
  <dir>/episode_000002.npz.tmp an episode being written (or cut by a crash): ignored and reported on load

Each episode is written to ``<name>.tmp``, fsynced, then renamed, so a crash loses at most that episode.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import gymnasium as gym
import numpy as np

import robot_rl
from robot_rl.data.episode import Episode
from robot_rl.data.replay import ReplayBuffer
from robot_rl.data.spaces import check_episode, describe_space, space_from_description
from robot_rl.envs.contract import ACTION_DIM, ContractSpec
from robot_rl.envs.wrappers import action_scale_of
from robot_rl.utils.atomic import TMP_SUFFIX, atomic_write

FORMAT_NAME = "robot_rl.demos"
FORMAT_VERSION = 1
META_FILE = "meta.json"
_EPISODE_RE = re.compile(r"^episode_(\d{6,})\.npz$")


class DemoFormatError(ValueError):
    """A demo directory or episode file is missing, corrupt, or does not match its ``meta.json``."""


@dataclass(frozen=True)
class DemoMeta:
    """What a recording session declares once, in ``meta.json``."""

    task: str
    contract: ContractSpec | None
    """The robot contract the demos follow; None for an env that is not a robot_rl arm (a gymnasium env)."""
    observation_space: gym.spaces.Dict | None = None
    """Defaults to ``contract.observation_space()``; required without a contract."""
    action_dim: int = ACTION_DIM
    notes: str = ""
    action_scale: tuple[float, ...] | None = None
    """The half-ranges (env units) the recorded actions' [-1, 1] spans (``EnvConfig.action_scale``); None: the
    env's whole action box."""

    def __post_init__(self) -> None:
        if not self.task:
            raise ValueError("DemoMeta.task must be a non-empty task name")
        if self.action_dim <= 0:
            raise ValueError(f"DemoMeta.action_dim must be > 0, got {self.action_dim}")
        if self.contract is None and self.observation_space is None:
            raise ValueError(f"DemoMeta for task {self.task!r}: without a contract, give the observation_space")

    @classmethod
    def for_env(cls, task: str, env: gym.Env, notes: str = "") -> DemoMeta:
        """The meta of demos recorded in ``env`` (any env on the learner's dict convention): its contract when it
        is a robot_rl arm, its own observation space and action size."""
        space = env.observation_space
        if not isinstance(space, gym.spaces.Dict) or not isinstance(env.action_space, gym.spaces.Box):
            raise ValueError(f"DemoMeta.for_env({task!r}): needs dict observations and a Box action space, got "
                             f"{space} / {env.action_space}")
        return cls(task=task, contract=getattr(env.unwrapped, "contract", None), observation_space=space,
                   action_dim=int(np.prod(env.action_space.shape)), notes=notes, action_scale=action_scale_of(env))

    def space(self) -> gym.spaces.Dict:
        if self.observation_space is not None:
            return self.observation_space
        assert self.contract is not None
        return self.contract.observation_space()


def episode_filename(index: int) -> str:
    return f"episode_{index:06d}.npz"


def code_version() -> str:
    """``robot_rl <version>`` plus the git commit of the source tree when it is a checkout."""
    version = f"robot_rl {robot_rl.__version__}"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=Path(robot_rl.__file__).parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        return f"{version} (git {commit})" if commit else version
    except (OSError, subprocess.SubprocessError):
        return version


def meta_document(meta: DemoMeta) -> dict[str, object]:
    """The JSON document of ``meta`` (``meta.json``; also the first message of a recording)."""
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "task": meta.task,
        "contract": None if meta.contract is None else meta.contract.to_dict(),
        "observation_space": describe_space(meta.space()),
        "action_dim": meta.action_dim,
        "action_scale": None if meta.action_scale is None else list(meta.action_scale),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "code_version": code_version(),
        "notes": meta.notes,
    }


def check_meta_document(meta: object, where: str) -> dict[str, object]:
    """``meta`` if it is a demo meta document of this format version; else ``DemoFormatError`` naming ``where``."""
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
        found = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise DemoFormatError(f"{where}: not a {FORMAT_NAME} document (format={found!r})")
    if meta.get("format_version") != FORMAT_VERSION:
        raise DemoFormatError(
            f"{where}: format_version {meta.get('format_version')!r} unsupported (expected {FORMAT_VERSION})"
        )
    for key in ("task", "observation_space", "action_dim"):
        if key not in meta:
            raise DemoFormatError(f"{where}: missing field {key!r}")
    return meta


def meta_from_document(doc: object, where: str) -> DemoMeta:
    """The ``DemoMeta`` a meta document describes."""
    meta = check_meta_document(doc, where)
    contract = meta.get("contract")
    return DemoMeta(task=str(meta["task"]),
                    contract=ContractSpec.from_dict(contract) if isinstance(contract, dict) else None,
                    observation_space=space_from_description(meta["observation_space"]),  # type: ignore[arg-type]
                    action_dim=int(meta["action_dim"]), notes=str(meta.get("notes", "")),  # type: ignore[call-overload]
                    action_scale=recorded_action_scale(meta))


def recorded_action_scale(meta: dict[str, object]) -> tuple[float, ...] | None:
    """The action scale a meta document records (None: the env's whole box, also for older recordings)."""
    scale = meta.get("action_scale")
    return None if scale is None else tuple(float(s) for s in scale)  # type: ignore[union-attr]


def check_action_scale(path: str | os.PathLike[str], scale: tuple[float, ...] | None) -> None:
    """Refuse demos under ``path`` whose actions span another box than a run acting through ``scale``: their
    [-1, 1] would mean other motions here."""
    file = Path(path) / META_FILE
    recorded = recorded_action_scale(read_meta(path))
    if recorded != scale:
        def say(s: tuple[float, ...] | None) -> str:
            return "the env's whole action box" if s is None else f"action_scale {list(s)}"

        raise DemoFormatError(f"{file}: these demos were recorded with {say(recorded)}, this run acts with "
                              f"{say(scale)}; record them again with this run's --action-scale")


def read_meta(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read and check ``<path>/meta.json``; raise ``DemoFormatError`` naming the file on any problem."""
    file = Path(path) / META_FILE
    try:
        meta = json.loads(file.read_text())
    except (OSError, ValueError) as e:
        raise DemoFormatError(f"{file}: cannot read demo metadata ({type(e).__name__}: {e})") from e
    return check_meta_document(meta, str(file))


def _episode_files(path: Path) -> list[Path]:
    found = [(int(m.group(1)), p) for p in path.iterdir() if (m := _EPISODE_RE.match(p.name))]
    return [p for _, p in sorted(found)]


class DemoWriter:
    """Write one episode per file, atomically, into ``path`` (created, or appended to if its meta matches)."""

    def __init__(self, path: str | os.PathLike[str], meta: DemoMeta) -> None:
        self.path = Path(path)
        self.meta = meta
        self.space = meta.space()
        self.space_description = describe_space(self.space)
        self.path.mkdir(parents=True, exist_ok=True)
        if (self.path / META_FILE).exists():
            old = read_meta(self.path)
            if (old["task"], old["observation_space"], old["action_dim"], recorded_action_scale(old)) != (
                meta.task,
                self.space_description,
                meta.action_dim,
                meta.action_scale,
            ):
                raise DemoFormatError(
                    f"{self.path / META_FILE}: existing recording (task {old['task']!r}) does not match the "
                    "new meta (task, observation space, action dim or action scale differ); use another directory"
                )
        else:
            doc = meta_document(meta)
            data = json.dumps(doc, indent=2).encode()
            atomic_write(self.path / META_FILE, lambda f: f.write(data))
        files = _episode_files(self.path)
        self.next_index = int(_EPISODE_RE.match(files[-1].name).group(1)) + 1 if files else 0  # type: ignore[union-attr]

    def write(self, episode: Episode) -> Path:
        """Validate ``episode`` against the meta; write it as the next ``episode_NNNNNN.npz``."""
        final = self.path / episode_filename(self.next_index)
        check_episode(episode, self.space, self.meta.action_dim, f"DemoWriter.write({final.name})")
        arrays: dict[str, np.ndarray] = {f"obs/{k}": v for k, v in episode.observations.items()}
        arrays.update(
            actions=episode.actions.astype(np.float32),
            rewards=episode.rewards.astype(np.float32),
            terminated=np.array(bool(episode.terminated)),
            truncated=np.array(bool(episode.truncated)),
            format_version=np.array(FORMAT_VERSION),
        )
        arrays.update({f"info/{k}": np.asarray(v) for k, v in episode.infos.items()})
        atomic_write(final, lambda f: np.savez_compressed(f, **arrays))
        self.next_index += 1
        return final


def _read_episode(file: Path, space: gym.spaces.Dict, action_dim: int) -> Episode:
    try:
        with np.load(file, allow_pickle=False) as z:
            arrays = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, zlib.error, OSError, ValueError, EOFError) as e:
        raise DemoFormatError(f"{file}: corrupt or unreadable episode file ({type(e).__name__}: {e})") from e
    version = arrays.get("format_version")
    if version is None or int(version) != FORMAT_VERSION:
        raise DemoFormatError(
            f"{file}: format_version {version!r} is not supported (expected {FORMAT_VERSION})"
        )
    missing = [k for k in ("actions", "rewards", "terminated", "truncated") if k not in arrays]
    if missing:
        raise DemoFormatError(f"{file}: missing arrays {missing}")
    try:
        episode = Episode(
            observations={k[len("obs/") :]: v for k, v in arrays.items() if k.startswith("obs/")},
            actions=arrays["actions"],
            rewards=arrays["rewards"],
            terminated=bool(arrays["terminated"]),
            truncated=bool(arrays["truncated"]),
            infos={k[len("info/") :]: v for k, v in arrays.items() if k.startswith("info/")},
        )
        check_episode(episode, space, action_dim, str(file))
    except DemoFormatError:
        raise
    except ValueError as e:  # check_episode names the file already
        raise DemoFormatError(str(e) if str(e).startswith(str(file)) else f"{file}: {e}") from e
    return episode


def load_demos(path: str | os.PathLike[str], only_successful: bool = False, task: str | None = None) -> list[Episode]:
    """Every complete episode under ``path`` by index (``only_successful``: those with an ``is_success``);
    ``task``: refuse demos recorded for another task.

    Leftover ``*.tmp`` files (an interrupted write) are never loaded; a ``UserWarning`` names them.
    Raises ``DemoFormatError`` naming the file on a bad ``meta.json``, a corrupt file or a shape mismatch.
    """
    path = Path(path)
    meta = read_meta(path)
    if task is not None and meta["task"] != task:
        raise DemoFormatError(f"{path / META_FILE}: these demos were recorded for task {meta['task']!r}, this run "
                              f"is {task!r}")
    space = space_from_description(meta["observation_space"])  # type: ignore[arg-type]
    leftovers = sorted(p.name for p in path.iterdir() if p.name.endswith(TMP_SUFFIX))
    if leftovers:
        warnings.warn(
            f"{path}: ignoring unfinished temporary file(s) {leftovers} (interrupted writes)", stacklevel=2
        )
    action_dim = int(meta["action_dim"])  # type: ignore[call-overload]
    episodes = (_read_episode(f, space, action_dim) for f in _episode_files(path))
    return [e for e in episodes if e.success or not only_successful]


def load_demos_into(buffer: ReplayBuffer, path: str | os.PathLike[str], only_successful: bool = False) -> int:
    """Load the demos under ``path`` into ``buffer`` (``add_episode`` each); return the number of episodes."""
    episodes = load_demos(path, only_successful)
    for episode in episodes:
        buffer.add_episode(episode)
    return len(episodes)
