"""Small rotation helpers (numpy, no dependencies) shared by the sim, the safety filter and the ROS bridge.

Quaternions are (w, x, y, z). Rotation vectors are axis * angle (rad).
"""

from __future__ import annotations

import math

import numpy as np


def rotvec_to_matrix(rotvec: np.ndarray) -> np.ndarray:
    """Rodrigues: rotation vector [3] -> rotation matrix [3, 3]. Scalar maths: this runs every env step."""
    x, y, z = (float(v) for v in rotvec)
    angle = math.sqrt(x * x + y * y + z * z)
    if angle < 1e-12:
        return np.eye(3)
    x, y, z = x / angle, y / angle, z / angle
    s, c = math.sin(angle), math.cos(angle)
    t = 1.0 - c
    return np.array(
        [
            [c + t * x * x, t * x * y - s * z, t * x * z + s * y],
            [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
            [t * x * z - s * y, t * y * z + s * x, c + t * z * z],
        ]
    )


def rotation_angle_between(a: np.ndarray, b: np.ndarray) -> float:
    """Angle (rad) of the rotation taking matrix ``b`` to matrix ``a``."""
    cos = (float(np.sum(a * b)) - 1.0) * 0.5  # trace(a b^T) = sum(a * b)
    return math.acos(min(1.0, max(-1.0, cos)))


def matrix_to_rotvec(mat: np.ndarray) -> np.ndarray:
    """Rotation matrix [3, 3] -> rotation vector [3] (angle in [0, pi])."""
    return quat_to_rotvec(matrix_to_quat(mat))


def matrix_to_quat(mat: np.ndarray) -> np.ndarray:
    """Rotation matrix [3, 3] -> unit quaternion (w, x, y, z) with w >= 0."""
    m = np.asarray(mat, dtype=np.float64)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = np.array([(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s])
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = np.array([(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = np.array([(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def quat_to_matrix(quat: np.ndarray) -> np.ndarray:
    w, x, y, z = np.asarray(quat, dtype=np.float64) / np.linalg.norm(quat)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_to_rotvec(quat: np.ndarray) -> np.ndarray:
    q = np.asarray(quat, dtype=np.float64)
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    sin_half = np.linalg.norm(q[1:])
    if sin_half < 1e-12:
        return np.zeros(3)
    angle = 2.0 * np.arctan2(sin_half, q[0])
    return q[1:] / sin_half * angle


def matrix_to_rot6d(mat: np.ndarray) -> np.ndarray:
    """First two columns of R, as (R00, R10, R20, R01, R11, R21): continuous, unlike quaternions or Euler."""
    m = np.asarray(mat)
    return np.concatenate([m[:, 0], m[:, 1]])


def rot6d_to_matrix(r6: np.ndarray) -> np.ndarray:
    """Inverse of ``matrix_to_rot6d`` with Gram-Schmidt, so slightly noisy inputs still give a rotation."""
    a, b = np.asarray(r6[:3], dtype=np.float64), np.asarray(r6[3:6], dtype=np.float64)
    c0 = a / np.linalg.norm(a)
    b = b - c0 * (c0 @ b)
    c1 = b / np.linalg.norm(b)
    return np.stack([c0, c1, np.cross(c0, c1)], axis=1)
