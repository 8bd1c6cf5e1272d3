"""A teleoperated recording of the arm's own topics becomes demos: written here as ``ros2 bag record`` would
write the sim robot's driver topics while a scripted operator moves the arm, then imported with the hardware
config. Tested: the steps sit on the control rate, the state is the driver's reading at each step, the actions
reproduce the recorded motion, what could not be aligned is dropped, reported and cuts the episode, and
recordings with a missing topic or a clock jump are refused naming them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rosbags")
pytest.importorskip("mujoco")
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

from robot_rl.data.demos import DemoFormatError
from robot_rl.envs.contract import STATE_LAYOUT
from robot_rl.envs.geometry import matrix_to_quat
from robot_rl.ros.recording_import import action_between, import_teleop_recording
from robot_rl.ros.sim_core import FINGER_NAMES, JOINT_NAMES, SimArm

STORE = get_typestore(Stores.ROS2_KILTED)
T = STORE.types
STATE_HZ, CAMERA_HZ, SECONDS = 100, 10, 3.0
CAMERA = """camera:
  name: front
  topic: camera/front/color/image_raw
  input_hw_px: [32, 48]
  transport: raw
  output_hw_px: [16, 16]
"""


def header(t: float):
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=int(t), nanosec=int(t % 1 * 1e9)),
                                    frame_id="base")


def record(path: Path, skip_camera: tuple[float, float] = (0, 0), jump_at: float | None = None,
           topics: tuple[str, ...] = ("joint_states", "current_pose", "wrench", "camera")) -> list:
    """The sim robot's driver topics while the target slides along y and the gripper closes; returns the
    (time, tcp position, finger width) readings."""
    arm = SimArm("reach", seed=0)
    renderer = arm.renderer(32, 48)
    start = arm.read()
    readings = []
    t0 = 1000.0
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conns = {
            "joint_states": w.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=STORE),
            "current_pose": w.add_connection("/current_pose", "geometry_msgs/msg/PoseStamped", typestore=STORE),
            "wrench": w.add_connection("/wrench", "geometry_msgs/msg/WrenchStamped", typestore=STORE),
            "camera": w.add_connection("/camera/front/color/image_raw", "sensor_msgs/msg/Image", typestore=STORE),
        }

        def write(topic: str, msg) -> None:  # logged at the recorder's clock, t0 + t
            if topic in topics:
                w.write(conns[topic], int((t0 + t) * 1e9), STORE.serialize_cdr(msg, msg.__msgtype__))

        for i in range(int(SECONDS * STATE_HZ)):
            t = i / STATE_HZ
            stamp = t0 + t - (0.5 if jump_at is not None and t >= jump_at else 0.0)
            arm.set_target(start.tcp_pos + np.array([0.0, min(t, 2.0) * 0.05, 0.0]), start.tcp_rot)
            arm.set_gripper_width(0.08 if t < 1.5 else 0.0)
            arm.advance(1.0 / STATE_HZ)
            r = arm.read()
            readings.append((stamp, r.tcp_pos.copy(), float(r.fingers.sum())))
            empty = np.zeros(0)
            write("joint_states", T["sensor_msgs/msg/JointState"](
                header=header(stamp), name=[*JOINT_NAMES, *FINGER_NAMES],
                position=np.r_[r.q, r.fingers], velocity=np.r_[r.dq, 0.0, 0.0], effort=empty))
            q = matrix_to_quat(r.tcp_rot)
            pose = T["geometry_msgs/msg/Pose"](
                position=T["geometry_msgs/msg/Point"](x=r.tcp_pos[0], y=r.tcp_pos[1], z=r.tcp_pos[2]),
                orientation=T["geometry_msgs/msg/Quaternion"](w=q[0], x=q[1], y=q[2], z=q[3]))
            write("current_pose", T["geometry_msgs/msg/PoseStamped"](header=header(stamp), pose=pose))
            v3 = T["geometry_msgs/msg/Vector3"]
            wrench = T["geometry_msgs/msg/Wrench"](force=v3(x=r.wrench[0], y=r.wrench[1], z=r.wrench[2]),
                                                   torque=v3(x=r.wrench[3], y=r.wrench[4], z=r.wrench[5]))
            write("wrench", T["geometry_msgs/msg/WrenchStamped"](header=header(stamp), wrench=wrench))
            if i % (STATE_HZ // CAMERA_HZ) == 0 and not skip_camera[0] <= t < skip_camera[1]:
                image = renderer.render("front", arm.snapshot())
                write("camera", T["sensor_msgs/msg/Image"](header=header(stamp), height=32, width=48,
                                                          encoding="rgb8", is_bigendian=0, step=48 * 3,
                                                          data=image.ravel()))
    renderer.close()
    arm.close()
    return readings


@pytest.fixture(scope="module")
def camera(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("cameras") / "front.yaml"
    path.write_text(CAMERA)
    return str(path)


def test_a_teleop_recording_becomes_demos_at_the_control_rate(tmp_path, camera) -> None:
    readings = record(tmp_path / "teleop")
    meta, (episode,), report = import_teleop_recording(tmp_path / "teleop", "sim_panda", (camera,), task="reach")
    assert meta.task == "reach" and meta.contract.control_hz == 10.0 and not report.dropped
    assert len(episode) == report.steps == int(SECONDS * 10) - 1  # 30 steps at 10 Hz: 29 actions
    pos = episode.observations["state"][:, STATE_LAYOUT.slice("tcp_pos")]
    stamps = np.array([r[0] for r in readings])
    for k in (0, 10, 29):  # the driver's reading at (or just before) each step's time
        i = np.searchsorted(stamps, stamps[0] + k / 10 + 1e-9) - 1
        np.testing.assert_allclose(pos[k], readings[i][1], atol=1e-6)
    # the actions are the recorded motion in contract units: they add up to the path
    moved = episode.actions[:, :3].sum(0) * meta.contract.max_step_m
    np.testing.assert_allclose(moved, pos[-1] - pos[0], atol=1e-5)
    assert moved[1] > 0.05 and abs(moved[0]) < 0.01
    assert (episode.actions[:, 6] == -1).any() and not (episode.actions[:, 6] == 1).any()  # the gripper closed
    assert episode.observations["images/front"].shape == (30, 16, 16, 3)
    assert episode.truncated and episode.infos["intervention"].all()


def test_import_demos_command_reads_it_with_the_hardware_config(tmp_path, camera, capsys) -> None:
    from robot_rl.cli import main
    from robot_rl.data.demos import load_demos

    record(tmp_path / "teleop")
    args = ["import-demos", str(tmp_path / "teleop"), "--hardware", "sim_panda", "--cameras", camera,
            "--out", str(tmp_path / "demos")]
    assert main(args) == 2 and "give --task" in capsys.readouterr().err
    assert main([*args, "--task", "reach"]) == 0
    assert "29 steps in 1 episode(s)" in capsys.readouterr().out
    (episode,) = load_demos(tmp_path / "demos", task="reach")
    assert len(episode) == 29 and episode.observations["images/front"].shape[1:] == (16, 16, 3)


def test_steps_without_a_fresh_frame_are_dropped_reported_and_cut_the_episode(tmp_path, camera) -> None:
    record(tmp_path / "gap", skip_camera=(1.0, 1.35))
    _, episodes, report = import_teleop_recording(tmp_path / "gap", "sim_panda", (camera,))
    assert len(episodes) == 2
    (why, n), = report.dropped.items()
    assert "camera front" in why and n >= 2
    assert sum(len(e) + 1 for e in episodes) + n == 30
    assert any("dropped" in line for line in report.lines())


def test_a_missing_topic_or_a_clock_jump_is_refused_naming_it(tmp_path, camera) -> None:
    record(tmp_path / "no-pose", topics=("joint_states", "wrench", "camera"))
    with pytest.raises(DemoFormatError, match=r"no-pose: the recording has no /current_pose \(pose\)"):
        import_teleop_recording(tmp_path / "no-pose", "sim_panda", (camera,))
    record(tmp_path / "jump", jump_at=1.5)
    with pytest.raises(DemoFormatError, match=r"jump: /joint_states: the clock jumps back"):
        import_teleop_recording(tmp_path / "jump", "sim_panda", (camera,))


def test_action_between_inverts_the_contract_step() -> None:
    state = np.zeros(STATE_LAYOUT.dim, np.float32)
    state[STATE_LAYOUT.slice("tcp_rot6d")] = [1, 0, 0, 0, 1, 0]
    nxt = state.copy()
    nxt[STATE_LAYOUT.slice("tcp_pos")] = [0.01, -0.02, 0.03]
    action, clipped = action_between(state, nxt, 0.02, 0.1)
    np.testing.assert_allclose(action[:3], [0.5, -1.0, 1.0])
    assert clipped and action[6] == 0.0
