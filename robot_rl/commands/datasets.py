"""``robot-rl import-demos`` and ``robot-rl export-demos``: demos to and from other tools' formats."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import tyro


@dataclass(frozen=True)
class ImportDemosArgs:
    """Demos from another tool's format: a rosbag2 recording of robot_rl episodes (``robot-rl eval --record``,
    ``train --record-episodes``, the ROS 2 policy actor's ``record``), a teleoperated rosbag2 recording of an
    arm's own topics (``--hardware``), or a local LeRobot dataset (v3.0)."""

    source: tyro.conf.Positional[Path]
    """The rosbag2 folder (or its .mcap file), or the LeRobot dataset folder (``meta/info.json`` inside)."""
    out: Path
    """The demo folder to write (new, or one holding demos of the same task and observations)."""
    mapping: Path | None = None
    """LeRobot datasets written by another tool: a YAML file mapping their features to observation keys
    (``docs/data_format.md``)."""
    only_successful: bool = False
    """Keep the episodes that reached success only."""
    task: str = ""
    """The task the demos are for (what ``robot-rl train --demos`` checks); default: the recording's own.
    Required with ``--hardware``."""
    hardware: str = ""
    """A teleoperated recording of the arm's driver topics: its arm config (hardware_configs/arms name or
    path). Steps are taken at its control_hz; actions are the recorded motion in contract units."""
    cameras: tuple[str, ...] = ()
    """With ``--hardware``: the camera configs whose topics become image observations."""
    namespace: str = ""
    """With ``--hardware``: the namespace the driver topics were recorded under."""
    max_gap_s: float = 0.5
    """With ``--hardware``: a required topic silent for longer than this is refused (cut the recording)."""


@dataclass(frozen=True)
class ExportDemosArgs:
    """Demos into another tool's format."""

    demos: tyro.conf.Positional[Path]
    """A demo folder (``meta.json`` inside)."""
    format: Literal["rosbag", "lerobot"]
    """rosbag: a rosbag2 recording (MCAP storage) on the live RL topics; lerobot: a LeRobot dataset (v3.0)."""
    out: Path
    """The folder to create."""
    video_crf: int = 18
    """lerobot: the videos' constant rate factor (0 lossless, 18 visually lossless, 30 LeRobot's default)."""
    video_pix_fmt: Literal["yuv420p", "yuv444p"] = "yuv420p"
    """lerobot: yuv420p (LeRobot's own) halves colour resolution; yuv444p keeps it (with --video-crf 0, images
    come back within a few levels)."""


def source_kind(source: Path) -> Literal["rosbag", "lerobot"]:
    if (source / "meta" / "info.json").is_file():
        return "lerobot"
    if source.suffix == ".mcap" or (source / "metadata.yaml").is_file() or any(source.glob("*.mcap")):
        return "rosbag"
    raise ValueError(f"import-demos: {source} is neither a rosbag2 recording (metadata.yaml or .mcap) nor a "
                     "LeRobot dataset (meta/info.json)")


def import_demos_command(args: ImportDemosArgs) -> int:
    from robot_rl.data.demos import DemoWriter

    source = args.source.parent if args.source.suffix == ".mcap" else args.source
    if not source.exists():
        raise FileNotFoundError(f"import-demos: no such recording or dataset {args.source}")
    kind = source_kind(source)
    if kind == "lerobot":
        if args.hardware:
            raise ValueError(f"import-demos: --hardware reads rosbag2 recordings; {source} is a LeRobot dataset")
        from robot_rl.formats.lerobot import DatasetMapping, read_lerobot_dataset

        mapping = DatasetMapping.load(args.mapping) if args.mapping is not None else None
        meta, episodes = read_lerobot_dataset(source, mapping)
    elif args.hardware:
        if not args.task:
            raise ValueError("import-demos --hardware: give --task, the task these demos are for")
        from robot_rl.ros.recording_import import import_teleop_recording

        meta, episodes, report = import_teleop_recording(source, args.hardware, args.cameras, args.task,
                                                         args.namespace, args.max_gap_s)
        print("import-demos: " + "; ".join(report.lines()))
    else:
        if args.mapping is not None:
            raise ValueError("import-demos: --mapping is for LeRobot datasets; a recording says what it holds")
        from robot_rl.formats.rosbag import read_episodes_bag

        meta, episodes = read_episodes_bag(source)
    if args.task and args.task != meta.task:
        meta = dataclasses.replace(meta, task=args.task)
    kept = [e for e in episodes if e.success or not args.only_successful]
    writer = DemoWriter(args.out, meta)
    for episode in kept:
        writer.write(episode)
    dropped = f", {len(episodes) - len(kept)} without success left out" if len(kept) < len(episodes) else ""
    print(f"import-demos: {len(kept)} episodes ({sum(len(e) for e in kept)} steps) of task {meta.task!r} from "
          f"{kind} {source} -> {args.out}{dropped}")
    return 0


def export_demos_command(args: ExportDemosArgs) -> int:
    from robot_rl.data.demos import load_demos, meta_from_document, read_meta

    meta = meta_from_document(read_meta(args.demos), str(args.demos / "meta.json"))
    episodes = load_demos(args.demos)
    if not episodes:
        raise ValueError(f"export-demos: {args.demos} holds no episodes")
    if args.format == "lerobot":
        from robot_rl.formats.lerobot import VideoSettings, write_lerobot_dataset

        write_lerobot_dataset(args.out, meta, episodes, VideoSettings(crf=args.video_crf, pix_fmt=args.video_pix_fmt))
    else:
        from robot_rl.formats.rosbag import write_episodes_bag

        write_episodes_bag(args.out, meta, episodes)
    print(f"export-demos: {len(episodes)} episodes ({sum(len(e) for e in episodes)} steps) -> {args.format} "
          f"{args.out}")
    return 0
