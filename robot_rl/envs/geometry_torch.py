"""Batched torch twins of ``robot_rl.envs.geometry``: the same functions under the same names, over any leading
batch shape (``(..., 3)`` rotation vectors, ``(..., 3, 3)`` matrices, ``(..., 4)`` quaternions w, x, y, z), on
any device. The batched simulator runs its per-step maths with them; ``tests/envs/test_geometry_torch.py``
holds them to the numpy functions on random and edge-case inputs.
"""

from __future__ import annotations

import torch

_TINY = 1e-12


def rotvec_to_matrix(rotvec: torch.Tensor) -> torch.Tensor:
    """Rodrigues: rotation vectors (..., 3) -> rotation matrices (..., 3, 3); exactly the identity at zero."""
    angle = torch.linalg.vector_norm(rotvec, dim=-1, keepdim=True)
    small = angle < _TINY
    axis = rotvec / torch.where(small, torch.ones_like(angle), angle)
    x, y, z = axis.unbind(-1)
    s, c = torch.sin(angle[..., 0]), torch.cos(angle[..., 0])
    t = 1.0 - c
    mat = torch.stack(
        [
            torch.stack([c + t * x * x, t * x * y - s * z, t * x * z + s * y], -1),
            torch.stack([t * x * y + s * z, c + t * y * y, t * y * z - s * x], -1),
            torch.stack([t * x * z - s * y, t * y * z + s * x, c + t * z * z], -1),
        ],
        -2,
    )
    eye = torch.eye(3, dtype=rotvec.dtype, device=rotvec.device).expand_as(mat)
    return torch.where(small[..., None], eye, mat)


def rotation_angle_between(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Angle (rad, shape (...)) of the rotation taking matrices ``b`` to matrices ``a``."""
    cos = ((a * b).sum(dim=(-2, -1)) - 1.0) * 0.5  # trace(a b^T) = sum(a * b)
    return torch.acos(cos.clamp(-1.0, 1.0))


def matrix_to_quat(mat: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) -> unit quaternions (..., 4) with w >= 0, by the numpy twin's branch on the
    largest of the trace and the diagonal, chosen per element."""
    m = mat
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    tr = m00 + m11 + m22
    branch = torch.where(
        tr > 0, 0, torch.where((m00 > m11) & (m00 > m22), 1, torch.where(m11 > m22, 2, 3))
    )[..., None]
    s2 = torch.stack([tr + 1.0, 1.0 + m00 - m11 - m22, 1.0 + m11 - m00 - m22, 1.0 + m22 - m00 - m11], -1)
    s = 2.0 * torch.sqrt(torch.gather(s2, -1, branch).clamp_min(_TINY))
    q_s = 0.25 * s
    d21, d02, d10 = (m[..., 2, 1] - m[..., 1, 2])[..., None] / s, (m[..., 0, 2] - m[..., 2, 0])[..., None] / s, \
        (m[..., 1, 0] - m[..., 0, 1])[..., None] / s
    a01, a02, a12 = (m[..., 0, 1] + m[..., 1, 0])[..., None] / s, (m[..., 0, 2] + m[..., 2, 0])[..., None] / s, \
        (m[..., 1, 2] + m[..., 2, 1])[..., None] / s
    candidates = torch.stack(
        [
            torch.cat([q_s, d21, d02, d10], -1),
            torch.cat([d21, q_s, a01, a02], -1),
            torch.cat([d02, a01, q_s, a12], -1),
            torch.cat([d10, a02, a12, q_s], -1),
        ],
        -2,
    )
    q = torch.gather(candidates, -2, branch[..., None].expand(*branch.shape[:-1], 1, 4))[..., 0, :]
    q = q / torch.linalg.vector_norm(q, dim=-1, keepdim=True)
    return torch.where(q[..., :1] >= 0, q, -q)


def quat_to_matrix(quat: torch.Tensor) -> torch.Tensor:
    """Quaternions (..., 4), w first, normalised here -> rotation matrices (..., 3, 3)."""
    w, x, y, z = (quat / torch.linalg.vector_norm(quat, dim=-1, keepdim=True)).unbind(-1)
    return torch.stack(
        [
            torch.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            torch.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            torch.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def quat_to_rotvec(quat: torch.Tensor) -> torch.Tensor:
    q = quat / torch.linalg.vector_norm(quat, dim=-1, keepdim=True)
    q = torch.where(q[..., :1] < 0, -q, q)
    sin_half = torch.linalg.vector_norm(q[..., 1:], dim=-1, keepdim=True)
    small = sin_half < _TINY
    angle = 2.0 * torch.atan2(sin_half, q[..., :1])
    rotvec = q[..., 1:] / torch.where(small, torch.ones_like(sin_half), sin_half) * angle
    return torch.where(small, torch.zeros_like(rotvec), rotvec)


def matrix_to_rotvec(mat: torch.Tensor) -> torch.Tensor:
    """Rotation matrices (..., 3, 3) -> rotation vectors (..., 3), angle in [0, pi]."""
    return quat_to_rotvec(matrix_to_quat(mat))


def matrix_to_rot6d(mat: torch.Tensor) -> torch.Tensor:
    """First two columns of R, as (R00, R10, R20, R01, R11, R21)."""
    return torch.cat([mat[..., :, 0], mat[..., :, 1]], dim=-1)
