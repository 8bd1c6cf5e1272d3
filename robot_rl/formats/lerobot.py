"""Demos <-> LeRobot datasets (format v3.0, on disk: parquet frames, mp4 videos, json/parquet metadata).

Written with ``pyarrow`` and ``av`` (extra ``robot_rl[data]``), in the layout LeRobot's loader reads:

  meta/info.json                               codebase_version v3.0, fps, features (dtype, shape, names)
  meta/stats.json                              min/max/mean/std/count per feature (images per channel, 0-1)
  meta/tasks.parquet                           task string (index) -> task_index
  meta/episodes/chunk-000/file-000.parquet     per episode: length, tasks, frame range, data/video file and
                                               the episode's span in the video (from/to_timestamp)
  data/chunk-000/file-000.parquet              one row per step: observation.state, action, next.reward,
                                               next.done, complementary_info.<info>, timestamp, indices
  videos/observation.images.<camera>/chunk-000/file-000.mp4    every episode's frames, one after another
  meta/robot_rl.json, meta/robot_rl_final.npz  ours, ignored by LeRobot: the demo meta and each episode's final
                                               observation (a LeRobot frame is an observation *and* its action,
                                               so the last one has no frame), for a lossless trip back

Reading a dataset that another tool wrote needs a mapping file (``DatasetMapping``) from its features to the
observation keys; a feature it neither maps nor ignores is an error naming it, never silently dropped.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from robot_rl.data.demos import DemoFormatError, DemoMeta, meta_document, meta_from_document
from robot_rl.data.episode import Episode
from robot_rl.data.spaces import check_episode
from robot_rl.envs.contract import STATE_DIM, CameraSpec, ContractSpec, Field, image_key, is_image_key
from robot_rl.envs.names import vector_labels

CODEBASE_VERSION = "v3.0"
DATA_FILE = "data/chunk-000/file-000.parquet"
EPISODES_FILE = "meta/episodes/chunk-000/file-000.parquet"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
OURS_META, OURS_FINAL = "meta/robot_rl.json", "meta/robot_rl_final.npz"
BOOKKEEPING = ("timestamp", "frame_index", "episode_index", "index", "task_index")
"""Columns every LeRobot dataset has; not observations."""


@dataclass(frozen=True)
class VideoSettings:
    codec: str = "libx264"
    """An encoder of the ``av`` package's FFmpeg (LeRobot's decoders read h264, hevc and av1)."""
    crf: int = 18
    """Constant rate factor: 0 lossless (for libx264), 18 visually lossless, LeRobot's default is 30."""
    gop: int = 2
    """Keyframe every ``gop`` frames: random access to a frame decodes at most this many (LeRobot uses 2)."""
    pix_fmt: str = "yuv420p"
    """yuv420p (LeRobot's, what every player decodes) keeps colour at half resolution: sharp coloured edges
    of small images lose most; yuv444p keeps it whole (with crf 0, images come back within a few levels)."""


def _libs() -> tuple[Any, Any, Any]:
    try:
        import av
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError("LeRobot datasets need `pyarrow` and `av`: pip install 'robot_rl[data]'") from e
    return pa, pq, av


def feature_name(key: str) -> str:
    """Our observation key -> the LeRobot feature: ``state`` -> ``observation.state``, ``images/front`` ->
    ``observation.images.front``."""
    return "observation." + key.replace("/", ".")


# --- writing ------------------------------------------------------------------------------------------------
def _write_video(path: Path, frames: np.ndarray, fps: float, video: VideoSettings) -> None:
    _, _, av = _libs()
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(video.codec, rate=Fraction(fps).limit_denominator(1000))
        stream.height, stream.width = frames.shape[1:3]
        stream.pix_fmt = video.pix_fmt
        stream.options = {"crf": str(video.crf), "g": str(video.gop)}
        for image in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")))
        container.mux(stream.encode())


def _stats(values: np.ndarray, image: bool) -> dict[str, list]:
    if image:  # per channel over every pixel, in [0, 1], shaped (3, 1, 1) as LeRobot's normalisers expect
        v = values.reshape(-1, 3).astype(np.float64) / 255.0
        shape = lambda a: a.reshape(3, 1, 1).tolist()  # noqa: E731
    else:
        v = values.reshape(len(values), -1).astype(np.float64)
        shape = lambda a: a.tolist()  # noqa: E731
    return {"min": shape(v.min(0)), "max": shape(v.max(0)), "mean": shape(v.mean(0)), "std": shape(v.std(0)),
            "count": [len(values)]}


def write_lerobot_dataset(path: str | os.PathLike[str], meta: DemoMeta, episodes: list[Episode],
                          video: VideoSettings | None = None, robot_type: str | None = None) -> Path:
    """Demos -> a new LeRobot dataset folder at ``path`` (refused if it exists)."""
    pa, pq, _ = _libs()
    video = video or VideoSettings()
    root = Path(path)
    if root.exists():
        raise FileExistsError(f"{root}: exists; give a new folder for the dataset")
    if not episodes:
        raise ValueError("write_lerobot_dataset: no episodes to write")
    space = meta.space()
    for i, ep in enumerate(episodes):
        check_episode(ep, space, meta.action_dim, f"episode {i}")
    fps = meta.contract.control_hz if meta.contract else 10.0
    info_keys = sorted({k for ep in episodes for k in ep.infos})
    lengths = [len(ep) for ep in episodes]
    starts = np.concatenate([[0], np.cumsum(lengths)])
    n = int(starts[-1])

    def steps(key: str) -> np.ndarray:  # observations 0..T-1 of every episode (the frames)
        return np.concatenate([ep.observations[key][:-1] for ep in episodes])

    columns: dict[str, Any] = {}
    features: dict[str, dict[str, Any]] = {}
    stats: dict[str, dict[str, list]] = {}
    for key, box in space.spaces.items():
        name = feature_name(key)
        values = steps(key)
        if is_image_key(key):
            h, w, _ = box.shape
            features[name] = {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
                              "info": {"video.height": h, "video.width": w, "video.codec": video.codec,
                                       "video.pix_fmt": video.pix_fmt, "video.is_depth_map": False,
                                       "video.fps": fps, "video.channels": 3, "has_audio": False}}
            _write_video(root / VIDEO_PATH.format(video_key=name, chunk_index=0, file_index=0), values, fps, video)
        else:
            size = int(np.prod(box.shape))
            features[name] = {"dtype": "float32", "shape": [size], "names": vector_labels(key, size)}
            columns[name] = pa.FixedSizeListArray.from_arrays(values.reshape(-1).astype(np.float32), size)
        stats[name] = _stats(values, is_image_key(key))
    actions = np.concatenate([ep.actions for ep in episodes]).astype(np.float32)
    columns["action"] = pa.FixedSizeListArray.from_arrays(actions.reshape(-1), meta.action_dim)
    dim = meta.action_dim
    features["action"] = {"dtype": "float32", "shape": [dim], "names": vector_labels("action", dim)}
    stats["action"] = _stats(actions, False)
    rewards = np.concatenate([ep.rewards for ep in episodes]).astype(np.float32)
    done = np.zeros(n, bool)
    done[starts[1:] - 1] = True
    columns["next.reward"], columns["next.done"] = rewards, done
    features["next.reward"] = {"dtype": "float32", "shape": [1], "names": None}
    features["next.done"] = {"dtype": "bool", "shape": [1], "names": None}
    for key in info_keys:
        values = np.concatenate([np.asarray(ep.infos.get(key, np.zeros(len(ep))), np.float32) for ep in episodes])
        is_bool = all(np.asarray(ep.infos[key]).dtype == bool for ep in episodes if key in ep.infos)
        columns[f"complementary_info.{key}"] = values.astype(bool) if is_bool else values
        features[f"complementary_info.{key}"] = {"dtype": "bool" if is_bool else "float32", "shape": [1],
                                                 "names": None}
    episode_index = np.repeat(np.arange(len(episodes)), lengths)
    frame_index = np.concatenate([np.arange(t) for t in lengths])
    columns.update(timestamp=(frame_index / fps).astype(np.float32), frame_index=frame_index.astype(np.int64),
                   episode_index=episode_index.astype(np.int64), index=np.arange(n, dtype=np.int64),
                   task_index=np.zeros(n, np.int64))
    for name in BOOKKEEPING:
        features[name] = {"dtype": "float32" if name == "timestamp" else "int64", "shape": [1], "names": None}
    (root / DATA_FILE).parent.mkdir(parents=True)
    pq.write_table(pa.table(columns), root / DATA_FILE)

    video_keys = [feature_name(k) for k in space.spaces if is_image_key(k)]
    ep_rows: dict[str, Any] = {
        "episode_index": np.arange(len(episodes), dtype=np.int64),
        "tasks": pa.array([[meta.task]] * len(episodes), pa.list_(pa.string())),
        "length": np.asarray(lengths, np.int64),
        "data/chunk_index": np.zeros(len(episodes), np.int64), "data/file_index": np.zeros(len(episodes), np.int64),
        "dataset_from_index": starts[:-1].astype(np.int64), "dataset_to_index": starts[1:].astype(np.int64),
        "meta/episodes/chunk_index": np.zeros(len(episodes), np.int64),
        "meta/episodes/file_index": np.zeros(len(episodes), np.int64),
    }
    for name in video_keys:
        ep_rows[f"videos/{name}/chunk_index"] = np.zeros(len(episodes), np.int64)
        ep_rows[f"videos/{name}/file_index"] = np.zeros(len(episodes), np.int64)
        ep_rows[f"videos/{name}/from_timestamp"] = (starts[:-1] / fps).astype(np.float64)
        ep_rows[f"videos/{name}/to_timestamp"] = (starts[1:] / fps).astype(np.float64)
    (root / EPISODES_FILE).parent.mkdir(parents=True)
    pq.write_table(pa.table(ep_rows), root / EPISODES_FILE)
    _write_tasks(root / "meta/tasks.parquet", [meta.task])
    fps_out = int(fps) if float(fps).is_integer() else fps  # LeRobot's own datasets give an integer
    info = {"codebase_version": CODEBASE_VERSION, "robot_type": robot_type, "total_episodes": len(episodes),
            "total_frames": n, "total_tasks": 1, "chunks_size": 1000, "data_files_size_in_mb": 100,
            "video_files_size_in_mb": 200, "fps": fps_out, "splits": {"train": f"0:{len(episodes)}"},
            "data_path": DATA_PATH, "video_path": VIDEO_PATH if video_keys else None, "features": features}
    (root / "meta/info.json").write_text(json.dumps(info, indent=2))
    (root / "meta/stats.json").write_text(json.dumps(stats))
    (root / OURS_META).write_text(json.dumps({**meta_document(meta), "episodes": [
        {"terminated": bool(ep.terminated), "truncated": bool(ep.truncated),
         "infos": {k: np.asarray(v).dtype.str for k, v in ep.infos.items()}} for ep in episodes]}, indent=2))
    finals = {f"{i}/{k}": ep.observations[k][-1] for i, ep in enumerate(episodes) for k in ep.observations}
    np.savez_compressed(root / OURS_FINAL, **finals)
    return root


def _write_tasks(file: Path, tasks: list[str]) -> None:
    """``tasks.parquet`` as LeRobot reads it: a pandas frame indexed by the task string, column task_index."""
    import pandas as pd

    pd.DataFrame({"task_index": np.arange(len(tasks), dtype=np.int64)},
                 index=pd.Index(tasks, name="task")).to_parquet(file)


# --- reading ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DatasetMapping:
    """How a LeRobot dataset's features become our observation keys (a YAML or JSON file):

    task: pick_cube                          # the demos' task name
    observations: {state: observation.state} # observation key -> vector feature (the default shown); "state"
                                             # of STATE_DIM keeps the arm contract, "privileged" is sim state
    images: {front: observation.images.top}  # camera name -> video feature
    action: action
    reward: next.reward                      # optional; without it every reward is 0
    done: next.done                          # optional: the last step of an episode is terminal when set
    infos: {intervention: complementary_info.is_intervention}   # optional per-step infos
    ignore: [observation.velocity]           # features deliberately left out
    """

    task: str
    observations: dict[str, str] = field(default_factory=lambda: {"state": "observation.state"})
    images: dict[str, str] = field(default_factory=dict)
    action: str = "action"
    reward: str | None = "next.reward"
    done: str | None = "next.done"
    infos: dict[str, str] = field(default_factory=dict)
    ignore: tuple[str, ...] = ()

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> DatasetMapping:
        import yaml

        try:
            doc = yaml.safe_load(Path(path).read_text())
            if not isinstance(doc, dict):
                raise ValueError(f"expected a mapping, got {type(doc).__name__}")
            unknown = sorted(set(doc) - {f for f in cls.__dataclass_fields__})
            if unknown:
                raise ValueError(f"unknown field(s) {unknown}")
            return cls(**{**doc, "ignore": tuple(doc.get("ignore", ()))})
        except (OSError, ValueError, TypeError, yaml.YAMLError) as e:
            raise ValueError(f"{path}: not a dataset mapping ({e})") from e

    def used(self) -> dict[str, str]:
        """Feature -> what it becomes."""
        out = {f: k for k, f in self.observations.items()}
        out.update({self.action: "action", **{f: image_key(c) for c, f in self.images.items()}})
        out.update({f: f"info {k}" for k, f in self.infos.items()})
        out.update({f: role for f, role in ((self.reward, "reward"), (self.done, "done")) if f})
        return out


def read_lerobot_dataset(path: str | os.PathLike[str],
                         mapping: DatasetMapping | None = None) -> tuple[DemoMeta, list[Episode]]:
    """A local LeRobot dataset (v3.0) -> (meta, episodes). One that this module wrote needs no ``mapping`` and
    comes back exactly (images within the video codec's loss); any other needs one."""
    _, pq, _ = _libs()
    root = Path(path)
    info_file = root / "meta/info.json"
    try:
        info = json.loads(info_file.read_text())
    except (OSError, ValueError) as e:
        raise DemoFormatError(f"{info_file}: not a LeRobot dataset ({type(e).__name__}: {e})") from e
    if str(info.get("codebase_version", "")).split(".")[0] != "v3":
        raise DemoFormatError(f"{info_file}: codebase_version {info.get('codebase_version')!r}; this reader takes "
                              "v3.x datasets (convert older ones with LeRobot's v2.1 -> v3.0 converter)")
    ours = json.loads((root / OURS_META).read_text()) if mapping is None and (root / OURS_META).exists() else None
    if mapping is None and ours is None:
        raise DemoFormatError(f"{root}: written by another tool; give a mapping file (--mapping) from its features "
                              f"{sorted(info['features'])} to observation keys")
    features: dict[str, dict] = info["features"]
    fps = float(info["fps"])
    if ours is not None:
        meta = meta_from_document(ours, str(root / OURS_META))
        used = {feature_name(k): k for k in meta.space().spaces}
        mapping = DatasetMapping(task=meta.task, infos={k: f"complementary_info.{k}" for e in ours["episodes"]
                                                        for k in e["infos"]})
    else:
        assert mapping is not None
        unmapped = sorted(set(features) - set(mapping.used()) - set(mapping.ignore) - set(BOOKKEEPING))
        if unmapped:
            raise DemoFormatError(f"{info_file}: feature(s) {unmapped} are not in the mapping; map them (state, "
                                  "images, infos) or list them under `ignore:`")
        missing = sorted(f for f in mapping.used() if f not in features)
        if missing:
            raise DemoFormatError(f"{info_file}: the mapping names feature(s) {missing} the dataset does not have "
                                  f"(it has {sorted(features)})")
        meta = _meta_from_features(features, mapping, fps)
        used = {**{f: k for k, f in mapping.observations.items()},
                **{f: image_key(c) for c, f in mapping.images.items()}}
    table = pq.read_table(root / DATA_FILE if (root / DATA_FILE).exists() else root / "data")
    episodes_meta = pq.read_table(root / "meta/episodes").to_pydict()
    space = meta.space()
    videos = {key: _read_video(root, feature, features, episodes_meta, space[key].shape)
              for feature, key in used.items() if is_image_key(key)}
    finals = np.load(root / OURS_FINAL) if ours is not None else None
    column = {name: _column(table, name) for name in table.column_names}
    order = np.argsort(column["index"], kind="stable")
    out: list[Episode] = []
    for e, (lo, hi) in enumerate(zip(episodes_meta["dataset_from_index"], episodes_meta["dataset_to_index"])):
        rows = order[lo:hi]
        where = f"{root} episode {episodes_meta['episode_index'][e]}"
        obs: dict[str, np.ndarray] = {}
        for feature, key in used.items():
            frames = videos[key][e] if is_image_key(key) else column[feature][rows].astype(np.float32)
            if len(frames) != hi - lo:
                raise DemoFormatError(f"{where}: {feature} has {len(frames)} frames, the episode {hi - lo}")
            last = finals[f"{e}/{key}"] if finals is not None else frames[-1]
            obs[key] = np.concatenate([frames, last[None]]).astype(space[key].dtype)
        n = hi - lo
        rewards = column[mapping.reward][rows] if mapping.reward in column else np.zeros(n)
        infos = {k: column[f][rows] for k, f in mapping.infos.items() if f in column}
        if ours is not None:
            doc = ours["episodes"][e]
            infos = {k: v.astype(np.dtype(doc["infos"][k])) for k, v in infos.items() if k in doc["infos"]}
            terminated, truncated = doc["terminated"], doc["truncated"]
        else:
            terminated = bool(mapping.done in column and column[mapping.done][rows][-1])
            truncated = not terminated
        episode = Episode(observations=obs, actions=column[mapping.action][rows].astype(np.float32),
                          rewards=np.asarray(rewards, np.float32), terminated=terminated, truncated=truncated,
                          infos=infos)
        check_episode(episode, space, meta.action_dim, where)
        out.append(episode)
    return meta, out


def _column(table: Any, name: str) -> np.ndarray:
    """A parquet column as numpy: [rows] for scalars, [rows, size] for fixed-size and plain lists."""
    pa, _, _ = _libs()
    col = table.column(name).combine_chunks()
    if pa.types.is_fixed_size_list(col.type) or pa.types.is_list(col.type):
        flat = col.flatten().to_numpy(zero_copy_only=False)
        return flat.reshape(len(col), -1) if len(col) else flat.reshape(0, 0)
    return col.to_numpy(zero_copy_only=False)


def _meta_from_features(features: dict[str, dict], mapping: DatasetMapping, fps: float) -> DemoMeta:
    sizes = {key: int(np.prod(features[f]["shape"])) for key, f in mapping.observations.items()}
    if "state" not in sizes:
        raise DemoFormatError(f"the mapping gives no `state` observation (observations: {mapping.observations})")
    spaces: dict[str, gym.spaces.Space] = {key: gym.spaces.Box(-np.inf, np.inf, (n,), np.float32)
                                           for key, n in sizes.items()}
    cameras = []
    for camera, feature in mapping.images.items():
        h, w, c = features[feature]["shape"]
        if c != 3:
            raise DemoFormatError(f"{feature}: shape {features[feature]['shape']}; cameras are H x W x 3")
        cameras.append(CameraSpec(camera, int(h), int(w)))
        spaces[image_key(camera)] = gym.spaces.Box(0, 255, (int(h), int(w), 3), np.uint8)
    action_dim = int(np.prod(features[mapping.action]["shape"]))
    arm = sizes["state"] == STATE_DIM and set(sizes) <= {"state", "privileged"}
    privileged = (Field("privileged", sizes["privileged"], "as recorded"),) if "privileged" in sizes else ()
    contract = ContractSpec(cameras=tuple(cameras), privileged_layout=privileged, control_hz=fps) if arm else None
    return DemoMeta(task=mapping.task, contract=contract, observation_space=gym.spaces.Dict(spaces),
                    action_dim=action_dim, notes=f"imported from a LeRobot dataset by {mapping}")


def _read_video(root: Path, feature: str, features: dict[str, dict], episodes: dict[str, list],
                shape: tuple[int, ...]) -> list[np.ndarray]:
    """Each episode's frames of one camera, by its video file and span."""
    _, _, av = _libs()
    if features[feature]["dtype"] != "video":
        raise DemoFormatError(f"{root}: {feature} is stored as {features[feature]['dtype']!r}; this reader takes "
                              "video features")
    cache: dict[Path, tuple[np.ndarray, np.ndarray]] = {}
    out = []
    for e in range(len(episodes["episode_index"])):
        file = root / VIDEO_PATH.format(video_key=feature, chunk_index=episodes[f"videos/{feature}/chunk_index"][e],
                                        file_index=episodes[f"videos/{feature}/file_index"][e])
        if file not in cache:
            try:
                with av.open(str(file)) as container:
                    frames = [(f.time, f.to_ndarray(format="rgb24")) for f in container.decode(video=0)]
            except (OSError, av.error.FFmpegError) as err:
                raise DemoFormatError(f"{file}: unreadable video ({err})") from err
            cache[file] = (np.array([t for t, _ in frames]), np.stack([f for _, f in frames]))
        times, frames = cache[file]
        lo, hi = episodes[f"videos/{feature}/from_timestamp"][e], episodes[f"videos/{feature}/to_timestamp"][e]
        pick = (times >= lo - 1e-4) & (times < hi - 1e-4)
        clip = frames[pick]
        if clip.shape[1:] != tuple(shape):
            raise DemoFormatError(f"{file}: frames of {clip.shape[1:]}, the feature declares {tuple(shape)}")
        out.append(clip)
    return out
