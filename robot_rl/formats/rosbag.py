"""Episodes as rosbag2 recordings (MCAP storage), on the topics and message types the ROS 2 nodes use live.

A recording is a rosbag2 folder (``metadata.yaml`` + one ``.mcap``) that ``ros2 bag info``/``ros2 bag play``,
Foxglove and any MCAP reader open. Written and read with the ``rosbags`` library (extra ``robot_rl[data]``).

  /rl/recording          std_msgs/String, once, first: JSON of the demo meta (format, task, contract,
                         observation space, action size; ``docs/data_format.md``)
  /rl/episode            std_msgs/String JSON events: {"event": "start", "episode": k, "infos": {key: dtype}}
                         and {"event": "end", "episode": k, "steps": T, "terminated": .., "truncated": ..,
                         "success": .., "interrupted": ..}
  /rl/robot_state        sensor_msgs/JointState named vector (``names.STATE_NAMES``): observation ``state``
  /rl/privileged         named vector: observation ``privileged`` (simulation only)
  /rl/images/<camera>    sensor_msgs/Image rgb8: the camera crops as the encoder sees them
  /rl/observation/<key>  named vector ``<key>[i]``: any other vector observation (non-arm environments)
  /rl/executed_action    named vector ``names.EXECUTED_NAMES``: the action executed (the human's while
                         intervening) with the intervention and safety flags, stamped with its observation
  /rl/reward             named vector ``names.REWARD_NAMES``: reward and success of the step
  /rl/step_info          named vector of every per-step info (intervention, grasp_penalty, is_success, ...)

Observation ``k`` of an episode is stamped (and logged) at its time; the step's action, reward and infos carry
the stamp of the observation they answer and are logged just after it, so log order is the order of play.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.data.demos import DemoFormatError, DemoMeta, meta_document, meta_from_document
from robot_rl.data.episode import Episode
from robot_rl.data.spaces import check_episode
from robot_rl.data.transition import EnvStep
from robot_rl.envs.contract import is_image_key
from robot_rl.envs.names import ACTION_NAMES, EXECUTED_NAMES, REWARD_NAMES, vector_labels
from robot_rl.safety.filter import state_index

META_TOPIC = "/rl/recording"
EPISODE_TOPIC = "/rl/episode"
STATE_TOPIC = "/rl/robot_state"
PRIVILEGED_TOPIC = "/rl/privileged"
ACTION_TOPIC = "/rl/executed_action"
REWARD_TOPIC = "/rl/reward"
INFO_TOPIC = "/rl/step_info"
IMAGE_TOPIC_PREFIX = "/rl/images/"
OBSERVATION_TOPIC_PREFIX = "/rl/observation/"
STRING, VECTOR, IMAGE = "std_msgs/msg/String", "sensor_msgs/msg/JointState", "sensor_msgs/msg/Image"
_AFTER_NS = 1_000
"""The step's action, reward and infos are logged this long after the observation they answer."""


def _rosbags() -> tuple[Any, Any, Any]:
    try:
        from rosbags.rosbag2 import StoragePlugin, Writer
        from rosbags.typesys import Stores, get_typestore
    except ImportError as e:
        raise ImportError("rosbag2 recordings need the `rosbags` package: pip install 'robot_rl[data]'") from e
    return Writer, StoragePlugin, get_typestore(Stores.ROS2_KILTED)


@contextmanager
def reading(path: Path) -> Iterator[Any]:
    """A ``rosbags`` reader over the rosbag2 recording at ``path`` (its own message definitions, else Kilted's);
    the library's errors on opening or while reading become ``DemoFormatError`` naming the recording."""
    _, _, typestore = _rosbags()
    from rosbags.highlevel import AnyReader

    try:
        reader = AnyReader([path], default_typestore=typestore)
        reader.open()
    except Exception as e:  # rosbags raises its own error types for each kind of damage
        raise DemoFormatError(f"{path}: not a readable rosbag2 recording ({type(e).__name__}: {e})") from e
    try:
        yield reader
    except DemoFormatError:
        raise
    except Exception as e:
        raise DemoFormatError(f"{path}: recording cut short or damaged ({type(e).__name__}: {e})") from e
    finally:
        reader.close()


def observation_topic(key: str) -> str:
    """The topic an observation key is recorded on."""
    if key == "state":
        return STATE_TOPIC
    if key == "privileged":
        return PRIVILEGED_TOPIC
    if is_image_key(key):
        return IMAGE_TOPIC_PREFIX + key.split("/", 1)[1]
    return OBSERVATION_TOPIC_PREFIX + key


class EpisodeBagWriter:
    """Write episodes, step by step or whole, into a new rosbag2 recording at ``path`` (MCAP storage).

    ``begin(obs, stamp_ns)`` starts an episode at its first observation; ``step(...)`` records one step and its
    next observation; an episode left open at ``close()`` (the run was stopped) is ended as truncated and
    ``interrupted``, so a reader loses nothing that was recorded.
    """

    def __init__(self, path: str | os.PathLike[str], meta: DemoMeta) -> None:
        writer_cls, storage, self.typestore = _rosbags()
        self.path = Path(path)
        if self.path.exists():
            raise FileExistsError(f"{self.path}: a recording is there already; give a new folder")
        self.meta = meta
        self.space = meta.space()
        self.control_dt_ns = int(1e9 / (meta.contract.control_hz if meta.contract else 10.0))
        self.writer = writer_cls(self.path, version=9, storage_plugin=storage.MCAP)
        self.writer.open()
        self.connections: dict[str, Any] = {}
        self.episode = 0
        self.open_steps: int | None = None  # steps of the episode being recorded; None between episodes
        self.last_stamp_ns = 0
        self.infos: dict[str, str] = {}
        self.first: tuple[dict[str, np.ndarray], int] | None = None
        self.clock_ns = time.time_ns()  # stamps of a simulated run: wall time at the start, then the control rate
        self._meta: Any = self._string(json.dumps(meta_document(meta)))  # logged first, at the first message's time
        self._last_log_ns = -1

    # --- messages ---
    def _connection(self, topic: str, msgtype: str) -> Any:
        if topic not in self.connections:
            self.connections[topic] = self.writer.add_connection(topic, msgtype, typestore=self.typestore)
        return self.connections[topic]

    def _write(self, topic: str, msg: Any, log_ns: int) -> None:
        """Log ``msg`` at ``log_ns``, or just after the previous message: log times rise strictly in the order of
        writing, so every reader replays the recording in that order (header stamps keep the true times)."""
        if self._meta is not None:
            meta, self._meta = self._meta, None
            self._write(META_TOPIC, meta, log_ns)
        log_ns = max(log_ns, self._last_log_ns + 1)
        self._last_log_ns = log_ns
        conn = self._connection(topic, msg.__msgtype__)
        self.writer.write(conn, log_ns, self.typestore.serialize_cdr(msg, msg.__msgtype__))

    def _header(self, stamp_ns: int) -> Any:
        t = self.typestore.types
        stamp = t["builtin_interfaces/msg/Time"](sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        return t["std_msgs/msg/Header"](stamp=stamp, frame_id="")

    def _string(self, text: str) -> Any:
        return self.typestore.types[STRING](data=text)

    def _vector(self, labels: list[str] | tuple[str, ...], values: np.ndarray, stamp_ns: int) -> Any:
        empty = np.zeros(0, np.float64)
        return self.typestore.types[VECTOR](header=self._header(stamp_ns), name=list(labels),
                                            position=np.asarray(values, np.float64).ravel(), velocity=empty,
                                            effort=empty)

    def _image(self, pixels: np.ndarray, stamp_ns: int) -> Any:
        h, w, _ = pixels.shape
        return self.typestore.types[IMAGE](header=self._header(stamp_ns), height=h, width=w, encoding="rgb8",
                                           is_bigendian=0, step=w * 3,
                                           data=np.ascontiguousarray(pixels, np.uint8).ravel())

    def _event(self, doc: dict[str, Any], log_ns: int) -> None:
        self._write(EPISODE_TOPIC, self._string(json.dumps(doc)), log_ns)

    def _advance(self, stamp_ns: int | None) -> int:
        """The next observation's stamp (None: the simulated clock's next tick), refused if it goes back."""
        stamp_ns = self.clock_ns if stamp_ns is None else stamp_ns
        if stamp_ns < self.last_stamp_ns:
            raise ValueError(f"{self.path}: observation stamp {stamp_ns} ns is before the last one "
                             f"({self.last_stamp_ns} ns); stamps must not go back")
        self.last_stamp_ns, self.clock_ns = stamp_ns, stamp_ns + self.control_dt_ns
        return stamp_ns

    def _observation(self, obs: dict[str, np.ndarray], stamp_ns: int) -> None:
        for key in self.space.spaces:
            value = np.asarray(obs[key])
            msg = (self._image(value, stamp_ns) if is_image_key(key)
                   else self._vector(vector_labels(key, value.size), value, stamp_ns))
            self._write(observation_topic(key), msg, stamp_ns)

    # --- episodes ---
    def begin(self, obs: dict[str, np.ndarray], stamp_ns: int | None = None,
              infos: dict[str, str] | None = None) -> None:
        """Start episode ``self.episode`` at its first observation (``stamp_ns`` None: the simulated clock).
        ``infos``: per-step info keys and dtypes; by default those of the first step."""
        if self.open_steps is not None:
            self.end(truncated=True, interrupted=True)
        stamp_ns = self._advance(stamp_ns)
        self.infos = dict(infos or {})
        self.first = (obs, stamp_ns)  # written with the start event once the first step names its infos
        self.open_steps = 0

    def _start(self) -> None:
        if self.first is not None:
            obs, stamp_ns = self.first
            self._event({"event": "start", "episode": self.episode, "infos": self.infos}, stamp_ns)
            self._observation(obs, stamp_ns)
            self.first = None

    def step(self, action: np.ndarray, reward: float, next_obs: dict[str, np.ndarray],
             stamp_ns: int | None = None, infos: dict[str, Any] | None = None, terminated: bool = False,
             truncated: bool = False) -> None:
        """Record one step: the executed action and reward (stamped with the observation they answer) and the
        next observation at ``stamp_ns``; ``terminated``/``truncated`` end the episode."""
        if self.open_steps is None:
            raise RuntimeError(f"{self.path}: step() before begin()")
        answered = self.last_stamp_ns  # the observation this step answers
        stamp_ns = self._advance(stamp_ns)
        infos = infos or {}
        new = [key for key in infos if key not in self.infos]
        if new and self.open_steps:
            raise ValueError(f"{self.path} episode {self.episode}: per-step infos {new} appear after step 0; "
                             "declare them in begin(infos=...)")
        for key in new:
            self.infos[key] = np.asarray(infos[key]).dtype.str
        self._start()
        action = np.asarray(action, np.float64).ravel()
        if action.size == len(ACTION_NAMES):  # the arm's executed action with its flags, as the bridge echoes it
            flags = {"intervention": float(bool(infos.get("intervention", False))),
                     "safety_clipped": float(bool(infos.get("safety_clipped", False))), "refused": 0.0,
                     "state": float(state_index("active")), "command_stamp": answered / 1e9}
            labels, values = EXECUTED_NAMES, np.r_[action, [flags[n] for n in EXECUTED_NAMES[len(ACTION_NAMES):]]]
        else:  # a non-arm environment's action
            labels, values = vector_labels("action", action.size), action
        self._write(ACTION_TOPIC, self._vector(labels, values, answered), answered + _AFTER_NS)
        success = float(bool(infos.get("is_success", False)))
        self._write(REWARD_TOPIC, self._vector(REWARD_NAMES, np.array([reward, success]), answered),
                    answered + 2 * _AFTER_NS)
        if self.infos:
            values = np.array([float(np.asarray(infos.get(k, 0)).item()) for k in self.infos])
            self._write(INFO_TOPIC, self._vector(list(self.infos), values, answered), answered + 3 * _AFTER_NS)
        self._observation(next_obs, stamp_ns)
        self.open_steps += 1
        if terminated or truncated:
            self.end(terminated=terminated, truncated=truncated, success=bool(infos.get("is_success")))

    def record(self, step: EnvStep, stamp_ns: int | None = None) -> None:
        """Record a step of a collecting loop (``step_env``): the executed action and what the learner keeps."""
        t, info = step.transition, step.info
        infos = {**t.extras, "is_success": bool(info.get("is_success", False)),
                 "safety_clipped": bool(info.get("safety_clipped", False))}
        self.step(t.action, t.reward, dict(t.next_obs), stamp_ns, infos, t.terminated, t.truncated)

    def end(self, terminated: bool = False, truncated: bool = False, success: bool = False,
            interrupted: bool = False) -> None:
        if self.open_steps is None:
            return
        self._start()
        self._event({"event": "end", "episode": self.episode, "steps": self.open_steps, "terminated": terminated,
                     "truncated": truncated, "success": success, "interrupted": interrupted},
                    self.last_stamp_ns + 4 * _AFTER_NS)
        self.episode += 1
        self.open_steps = None

    def write_episode(self, episode: Episode) -> None:
        """Record a whole episode (a demo) at the control rate of the simulated clock."""
        check_episode(episode, self.space, self.meta.action_dim, f"{self.path} episode {self.episode}")
        infos = {k: np.asarray(v).dtype.str for k, v in episode.infos.items()}
        obs = [{k: v[i] for k, v in episode.observations.items()} for i in range(len(episode) + 1)]
        self.begin(obs[0], infos=infos)
        for t in range(len(episode)):
            last = t == len(episode) - 1
            self.step(episode.actions[t], float(episode.rewards[t]), obs[t + 1],
                      infos={k: v[t] for k, v in episode.infos.items()},
                      terminated=last and episode.terminated, truncated=last and episode.truncated)
        self.end()  # an episode neither terminated nor truncated (no-op after one that was)

    def close(self) -> None:
        if self.open_steps is not None:
            self.end(truncated=True, interrupted=True)
        if self._meta is not None:  # nothing was recorded: the recording still says what it is
            meta, self._meta = self._meta, None
            self._write(META_TOPIC, meta, self.clock_ns)
        self.writer.close()


def write_episodes_bag(path: str | os.PathLike[str], meta: DemoMeta, episodes: list[Episode],
                       start_ns: int | None = None) -> Path:
    """Demos -> a rosbag2 recording; episodes follow each other at the control rate from ``start_ns`` (default:
    now)."""
    writer = EpisodeBagWriter(path, meta)
    if start_ns is not None:
        writer.clock_ns = start_ns
    try:
        for episode in episodes:
            writer.write_episode(episode)
    finally:
        writer.close()
    return Path(path)


@dataclass
class _Open:
    infos: dict[str, str]
    observations: dict[str, list[np.ndarray]] = field(default_factory=lambda: defaultdict(list))
    actions: list[np.ndarray] = field(default_factory=list)
    rewards: list[float] = field(default_factory=list)
    success: list[bool] = field(default_factory=list)
    step_infos: list[np.ndarray] = field(default_factory=list)


def read_episodes_bag(path: str | os.PathLike[str]) -> tuple[DemoMeta, list[Episode]]:
    """A recording written by ``EpisodeBagWriter`` -> (its meta, its episodes). Raises ``DemoFormatError``
    naming the bag (and the episode and topic) when it is not such a recording, is damaged or disagrees with
    itself; an episode the recording ends inside (a killed recorder) is left out with a warning naming it."""
    path = Path(path)
    meta: DemoMeta | None = None
    episodes: list[Episode] = []
    current: _Open | None = None
    where = str(path)
    with reading(path) as reader:
        topics = {c.topic for c in reader.connections}
        if META_TOPIC not in topics:
            raise DemoFormatError(f"{path}: no {META_TOPIC} topic: not a robot_rl episode recording (a "
                                  "teleoperated recording of the arm's topics: import it with --hardware)")
        for conn, _, raw in reader.messages():
            msg = reader.deserialize(raw, conn.msgtype)
            topic = conn.topic
            if topic == META_TOPIC:
                meta = meta_from_document(json.loads(msg.data), f"{path} {META_TOPIC}")
                continue
            if meta is None:
                raise DemoFormatError(f"{path}: {topic} message before the {META_TOPIC} message")
            if topic == EPISODE_TOPIC:
                event = json.loads(msg.data)
                where = f"{path} episode {event.get('episode')}"
                if event["event"] == "start":
                    if current is not None:
                        raise DemoFormatError(f"{where}: starts before the previous episode ended")
                    current = _Open(infos=dict(event.get("infos", {})))
                elif event["event"] == "end":
                    if current is None:
                        raise DemoFormatError(f"{where}: ends without a start")
                    episodes.append(_episode(current, event, meta, where))
                    current = None
                continue
            if current is None:
                raise DemoFormatError(f"{path}: a {topic} message outside any episode")
            if topic == ACTION_TOPIC:
                current.actions.append(np.asarray(msg.position[: meta.action_dim], np.float32))
            elif topic == REWARD_TOPIC:
                current.rewards.append(float(msg.position[0]))
                current.success.append(bool(msg.position[1] >= 0.5))
            elif topic == INFO_TOPIC:
                if list(msg.name) != list(current.infos):
                    raise DemoFormatError(f"{where}: {INFO_TOPIC} names {list(msg.name)}, the episode declared "
                                          f"{list(current.infos)}")
                current.step_infos.append(np.asarray(msg.position))
            else:
                key = _observation_key(topic, meta)
                value = (np.asarray(msg.data, np.uint8).reshape(msg.height, msg.width, 3) if msg.__msgtype__ == IMAGE
                         else np.asarray(msg.position))
                current.observations[key].append(value)
    if meta is None:
        raise DemoFormatError(f"{path}: empty recording (no {META_TOPIC} message)")
    if current is not None:  # the recorder was killed: keep what finished, say what is left out
        warnings.warn(f"{where}: the recording ends inside this episode (no end event: the recorder was killed); "
                      f"it is left out, the {len(episodes)} finished before it are read", stacklevel=2)
    return meta, episodes


def _observation_key(topic: str, meta: DemoMeta) -> str:
    for key in meta.space().spaces:
        if observation_topic(key) == topic:
            return key
    raise DemoFormatError(f"topic {topic} is not an observation of this recording's space "
                          f"{sorted(meta.space().spaces)}")


def _episode(rec: _Open, end: dict[str, Any], meta: DemoMeta, where: str) -> Episode:
    steps = int(end["steps"])
    counts = {ACTION_TOPIC: len(rec.actions), REWARD_TOPIC: len(rec.rewards)}
    if rec.infos:
        counts[INFO_TOPIC] = len(rec.step_infos)
    counts.update({observation_topic(k): len(v) - 1 for k, v in rec.observations.items()})
    wrong = {t: n for t, n in counts.items() if n != steps}
    missing = [observation_topic(k) for k in meta.space().spaces if k not in rec.observations]
    if wrong or missing:
        raise DemoFormatError(f"{where}: {steps} steps declared; per-topic counts disagree {wrong}"
                              + (f"; observation topics missing {missing}" if missing else ""))
    space = meta.space()
    observations = {k: np.stack(v).astype(space[k].dtype).reshape(steps + 1, *space[k].shape)
                    for k, v in rec.observations.items()}
    infos: dict[str, np.ndarray] = {}
    table = np.stack(rec.step_infos) if rec.step_infos else np.zeros((steps, 0))
    for i, (key, dtype) in enumerate(rec.infos.items()):
        infos[key] = table[:, i].astype(np.dtype(dtype)) if steps else np.zeros(0, np.dtype(dtype))
    if "is_success" not in infos and any(rec.success):
        infos["is_success"] = np.asarray(rec.success, bool)
    episode = Episode(observations=observations,
                      actions=np.stack(rec.actions) if steps else np.zeros((0, meta.action_dim), np.float32),
                      rewards=np.asarray(rec.rewards, np.float32), terminated=bool(end["terminated"]),
                      truncated=bool(end["truncated"]), infos=infos)
    check_episode(episode, space, meta.action_dim, where)
    return episode
