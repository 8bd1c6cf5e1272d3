"""A teleoperated rosbag2 recording of an arm's own topics -> demos at the control rate.

The recording holds what the arm's driver stack publishes (joint states, the TCP pose where the arm has a pose
topic, the wrench, the gripper's joints and the cameras named by the hardware configs), made with ``ros2 bag
record`` while a person moved the arm. Each is turned into the contract the way the live nodes do it: the
bridge's ``StateAssembler`` (and the DH chain's forward kinematics for arms without a pose topic) for
``state``, the camera bridge's decoding, crop and resize for images. Steps are taken at the arm's
``control_hz`` on the recording's clock (header stamps; the log time where a driver leaves stamps at zero):

- step k's observation holds each input's newest reading at or before the step's time;
- its action is the motion to step k+1 in contract units (translation over ``max_step_m``, rotation over
  ``max_step_rad``, clipped to [-1, 1]; the gripper opens (+1) or closes (-1) where its opening changed);
- a step at which an input is older than ``max_age_periods`` control periods is dropped and the episode is cut
  there (the steps either side stay, as separate episodes); the report says how many and why.

A required topic the recording lacks, or a clock that jumps back or stops for longer than ``max_gap_s`` on a
required topic, is an error naming the topic and the time: such a recording needs cutting (``ros2 bag
convert``) before it can be read as demos.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.data.demos import DemoFormatError, DemoMeta
from robot_rl.data.episode import Episode
from robot_rl.envs.contract import STATE_LAYOUT, image_key
from robot_rl.envs.geometry import matrix_to_rotvec, quat_to_matrix
from robot_rl.formats.rosbag import reading
from robot_rl.ros.hardware import ArmConfig, CameraConfig, load_arm_config, load_camera_config
from robot_rl.ros.images import CropResize, compressed_to_rgb, image_to_rgb
from robot_rl.ros.kinematics import DHChain
from robot_rl.ros.spec_env import contract_for
from robot_rl.ros.state import StateAssembler

_POS, _ROT6D, _OPENING = (STATE_LAYOUT.slice(n) for n in ("tcp_pos", "tcp_rot6d", "gripper_opening"))
GRIPPER_MOVE = 0.02
"""A change of the gripper opening (fraction of fully open) between steps that counts as a command."""


@dataclass
class AlignmentReport:
    """What the import took and what it left out, and why."""

    steps: int = 0
    episodes: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    clipped_steps: int = 0

    def lines(self) -> list[str]:
        out = [f"{self.steps} steps in {self.episodes} episode(s)"]
        out += [f"dropped {n} step(s): {why}" for why, n in sorted(self.dropped.items())]
        if self.clipped_steps:
            out.append(f"{self.clipped_steps} step(s) moved faster than the contract's step limits: their actions "
                       "are clipped to [-1, 1]")
        return out


@dataclass
class _Stream:
    topic: str
    role: str
    stamps: list[float] = field(default_factory=list)
    messages: list[Any] = field(default_factory=list)


def _stamp_s(msg: Any, log_ns: int) -> float:
    stamp = getattr(getattr(msg, "header", None), "stamp", None)
    if stamp is not None and (stamp.sec or stamp.nanosec):
        return stamp.sec + stamp.nanosec * 1e-9
    return log_ns * 1e-9


def _resolve(topic: str, namespace: str) -> str:
    if topic.startswith("/"):
        return topic
    return f"{namespace.rstrip('/')}/{topic}" if namespace else f"/{topic}"


def _streams(arm: ArmConfig, cameras: list[CameraConfig], namespace: str) -> dict[str, _Stream]:
    wanted = {arm.topics.joint_states: "joint_states"}
    if arm.gripper.joint_states and arm.gripper.joint_names:
        wanted.setdefault(arm.gripper.joint_states, "gripper_joints")
    if arm.topics.current_pose:
        wanted[arm.topics.current_pose] = "pose"
    if arm.topics.wrench:
        wanted[arm.topics.wrench] = "wrench"
    for cam in cameras:
        wanted[cam.topic + ("/compressed" if cam.transport == "compressed" else "")] = f"camera {cam.name}"
    return {_resolve(t, namespace): _Stream(_resolve(t, namespace), role) for t, role in wanted.items()}


def read_streams(path: Path, streams: dict[str, _Stream], max_gap_s: float) -> None:
    """Fill ``streams`` from the recording, in stamp order per topic; refuse missing topics and clock jumps."""
    with reading(path) as reader:
        present = {c.topic for c in reader.connections if c.msgcount}
        missing = [f"{s.topic} ({s.role})" for t, s in streams.items() if t not in present]
        if missing:
            raise DemoFormatError(f"{path}: the recording has no {', '.join(missing)}; it holds "
                                  f"{sorted(present)} (a namespace? give --namespace)")
        connections = [c for c in reader.connections if c.topic in streams]
        for conn, log_ns, raw in reader.messages(connections=connections):
            msg = reader.deserialize(raw, conn.msgtype)
            s = streams[conn.topic]
            stamp = _stamp_s(msg, log_ns)
            if s.stamps and stamp < s.stamps[-1] - 1e-3:
                raise DemoFormatError(f"{path}: {s.topic}: the clock jumps back from {s.stamps[-1]:.3f} s to "
                                      f"{stamp:.3f} s (a restarted driver or simulated clock?)")
            if s.stamps and stamp - s.stamps[-1] > max_gap_s:
                raise DemoFormatError(f"{path}: {s.topic}: nothing for {stamp - s.stamps[-1]:.2f} s after "
                                      f"{s.stamps[-1]:.3f} s (more than --max-gap-s {max_gap_s})")
            s.stamps.append(max(stamp, s.stamps[-1]) if s.stamps else stamp)
            s.messages.append(msg)


def import_teleop_recording(path: str | os.PathLike[str], hardware_config: str, camera_configs: tuple[str, ...] = (),
                            task: str = "teleop", namespace: str = "", max_gap_s: float = 0.5,
                            max_age_periods: float = 1.5) -> tuple[DemoMeta, list[Episode], AlignmentReport]:
    """The demos in a teleoperated recording of the topics of the arm ``hardware_config`` and the cameras
    ``camera_configs`` (names or paths, as for the nodes); see the module docstring."""
    path = Path(path)
    arm = load_arm_config(hardware_config)
    cameras = [load_camera_config(c) for c in camera_configs]
    streams = _streams(arm, cameras, namespace)
    read_streams(path, streams, max_gap_s)
    contract = contract_for(hardware_config, camera_configs)
    period = 1.0 / arm.control_hz
    start = max(s.stamps[0] for s in streams.values())
    end = min(s.stamps[-1] for s in streams.values())
    ticks = start + period * np.arange(int(np.floor((end - start) / period + 1e-6)) + 1)
    report = AlignmentReport()
    if len(ticks) < 2:
        raise DemoFormatError(f"{path}: the inputs overlap for {max(end - start, 0):.3f} s, less than two control "
                              f"periods ({period:.3f} s)")
    g = arm.gripper
    assembler = StateAssembler(arm.joint_names, g.joint_names, g.max_width_m, gripper_units=g.units)
    fk = DHChain(arm.kinematics) if arm.topics.current_pose is None else None
    crops = {cam.name: CropResize(cam.crop_xywh_px, cam.output_hw_px) for cam in cameras}
    by_role = {s.role: s for s in streams.values()}
    # every state message in stamp order, fed to the assembler as the bridge would have received them
    events = sorted((stamp, i, s.role, msg) for s in streams.values() if not s.role.startswith("camera")
                    for i, (stamp, msg) in enumerate(zip(s.stamps, s.messages)))
    cursor = 0
    frames: list[dict[str, np.ndarray] | None] = []
    for tick in ticks:
        while cursor < len(events) and events[cursor][0] <= tick + 1e-9:
            stamp, _, role, msg = events[cursor]
            _feed(assembler, fk, role, msg, stamp)
            cursor += 1
        stale = [role for role, s in by_role.items()
                 if tick - s.stamps[max(np.searchsorted(s.stamps, tick + 1e-9) - 1, 0)] > max_age_periods * period]
        if stale or not assembler.ready:
            report.dropped[f"no fresh {', '.join(stale) or 'pose'} (older than {max_age_periods} periods)"] += 1
            frames.append(None)
            continue
        obs = {"state": assembler.state.copy()}
        for cam in cameras:
            s = by_role[f"camera {cam.name}"]
            msg = s.messages[np.searchsorted(s.stamps, tick + 1e-9) - 1]
            try:
                obs[image_key(cam.name)] = crops[cam.name](_decode(cam, msg))
            except ValueError as err:
                report.dropped[f"camera {cam.name}: unreadable frame ({err})"] += 1
                obs = None
                break
        frames.append(obs)
    episodes = [_episode(run, contract, report) for run in _runs(frames)]
    episodes = [e for e in episodes if e is not None]
    report.episodes, report.steps = len(episodes), sum(len(e) for e in episodes)
    if not episodes:
        raise DemoFormatError(f"{path}: no two consecutive usable steps: " + "; ".join(report.lines()[1:]))
    meta = DemoMeta(task=task, contract=contract, notes=f"imported from {path.name}: " + "; ".join(report.lines()))
    return meta, episodes, report


def _feed(assembler: StateAssembler, fk: DHChain | None, role: str, msg: Any, stamp: float) -> None:
    if role in ("joint_states", "gripper_joints"):
        try:
            arm_updated, _ = assembler.on_joint_states(list(msg.name), list(msg.position), list(msg.velocity), stamp)
        except ValueError:
            return  # the bridge drops such a message too
        if fk is not None and arm_updated:
            assembler.on_pose(*fk.forward(assembler.q), stamp)
    elif role == "pose":
        p, o = msg.pose.position, msg.pose.orientation
        quat = np.array([o.w, o.x, o.y, o.z])
        if np.all(np.isfinite(quat)) and np.linalg.norm(quat) > 1e-6:
            assembler.on_pose(np.array([p.x, p.y, p.z]), quat_to_matrix(quat), stamp)
    elif role == "wrench":
        f, t = msg.wrench.force, msg.wrench.torque
        assembler.on_wrench((f.x, f.y, f.z), (t.x, t.y, t.z))


def _decode(cam: CameraConfig, msg: Any) -> np.ndarray:
    if cam.transport == "compressed":
        return compressed_to_rgb(msg.format, bytes(msg.data))
    rgb = image_to_rgb(msg.encoding, msg.height, msg.width, msg.step, bytes(msg.data))
    if rgb.shape[:2] != tuple(cam.input_hw_px):
        raise ValueError(f"{rgb.shape[1]}x{rgb.shape[0]} px, the camera config says {cam.input_hw_px[1]}x"
                         f"{cam.input_hw_px[0]}")
    return rgb


def _runs(frames: list[dict[str, np.ndarray] | None]) -> list[list[dict[str, np.ndarray]]]:
    runs: list[list[dict[str, np.ndarray]]] = [[]]
    for obs in frames:
        if obs is None:
            runs.append([])
        else:
            runs[-1].append(obs)
    return [r for r in runs if r]


def _episode(run: list[dict[str, np.ndarray]], contract: Any, report: AlignmentReport) -> Episode | None:
    if len(run) < 2:
        report.dropped["a single usable step between dropped ones (no motion to learn from)"] += len(run)
        return None
    actions = []
    for now, nxt in pairwise(run):
        a, clipped = action_between(now["state"], nxt["state"], contract.max_step_m, contract.max_step_rad)
        report.clipped_steps += clipped
        actions.append(a)
    obs = {k: np.stack([o[k] for o in run]) for k in run[0]}
    n = len(run) - 1
    return Episode(observations=obs, actions=np.asarray(actions, np.float32), rewards=np.zeros(n, np.float32),
                   terminated=False, truncated=True,
                   infos={"intervention": np.ones(n, bool), "is_success": np.zeros(n, bool)})


def action_between(state: np.ndarray, next_state: np.ndarray, max_step_m: float,
                   max_step_rad: float) -> tuple[np.ndarray, bool]:
    """The contract action that moves the TCP from ``state`` to ``next_state`` in one step, and whether it had
    to be clipped."""
    from robot_rl.envs.geometry import rot6d_to_matrix

    raw = np.zeros(7)
    raw[:3] = (next_state[_POS] - state[_POS]) / max_step_m
    rot = rot6d_to_matrix(next_state[_ROT6D]) @ rot6d_to_matrix(state[_ROT6D]).T
    raw[3:6] = matrix_to_rotvec(rot) / max_step_rad
    change = float(next_state[_OPENING][0] - state[_OPENING][0])
    raw[6] = 1.0 if change > GRIPPER_MOVE else -1.0 if change < -GRIPPER_MOVE else 0.0
    action = np.clip(raw, -1.0, 1.0)
    return action, bool(np.any(np.abs(raw[:6]) > 1.0 + 1e-6))
