"""Conversions between ROS 2 messages and numpy (no cv_bridge, no tf): named vectors, poses, images."""

from __future__ import annotations

import array
from collections.abc import Sequence

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import Image, JointState

from robot_rl.envs.geometry import matrix_to_quat, quat_to_matrix
from robot_rl.ros.images import image_to_rgb


def to_stamp(seconds: float) -> Time:
    sec = int(seconds // 1)
    return Time(sec=sec, nanosec=min(999_999_999, round((seconds - sec) * 1e9)))


def from_stamp(stamp: Time) -> float:
    return stamp.sec + stamp.nanosec * 1e-9


def named_vector(names: Sequence[str], values: Sequence[float], stamp: Time, frame_id: str = "",
                 ) -> JointState:
    msg = JointState()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.name = list(names)
    msg.position = [float(v) for v in values]
    return msg


def pose_msg(position: np.ndarray, rotation: np.ndarray, frame_id: str, stamp: Time) -> PoseStamped:
    msg = PoseStamped()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    p = msg.pose.position
    p.x, p.y, p.z = (float(v) for v in position)
    w, x, y, z = matrix_to_quat(rotation)
    o = msg.pose.orientation
    o.x, o.y, o.z, o.w = float(x), float(y), float(z), float(w)
    return msg


def pose_from_msg(msg: PoseStamped) -> tuple[np.ndarray, np.ndarray] | None:
    """(position [3], rotation [3, 3]) or None for a non-finite position or a degenerate quaternion."""
    p, o = msg.pose.position, msg.pose.orientation
    pos = np.array([p.x, p.y, p.z])
    quat = np.array([o.w, o.x, o.y, o.z])
    with np.errstate(over="ignore", invalid="ignore"):  # huge components: an infinite norm, refused below
        norm = float(np.linalg.norm(quat))
    if not (np.all(np.isfinite(pos)) and np.isfinite(norm) and abs(norm - 1.0) < 0.05):
        return None
    return pos, quat_to_matrix(quat)


def image_msg(rgb: np.ndarray, stamp: Time, frame_id: str) -> Image:
    """uint8 [H, W, 3] -> rgb8 Image (``array.array`` assignment: the fast path for rclpy sequences)."""
    msg = Image()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.height, msg.width = int(rgb.shape[0]), int(rgb.shape[1])
    msg.encoding = "rgb8"
    msg.is_bigendian = 0
    msg.step = msg.width * 3
    msg.data = array.array("B", np.ascontiguousarray(rgb, dtype=np.uint8).tobytes())
    return msg


def image_from_msg(msg: Image) -> np.ndarray:
    return image_to_rgb(msg.encoding, msg.height, msg.width, msg.step, msg.data)
