"""Images under a symmetry of the table plane: fixed cameras warped by the plane's homography, wrist cameras
reused or flipped.

A fixed camera sees the table plane through a homography ``H`` (table xy in m -> continuous pixel coordinates,
the image spanning [0, W] x [0, H], pixel centres at +0.5). Moving the scene by ``g`` (``x -> A x + b`` in the
plane) moves the table's image by ``H g H^-1``, so the warped image samples the recorded one at
``H g^-1 H^-1 p`` for every output pixel ``p`` (nearest pixel, edges repeated): exact on the table plane, with
parallax on anything above it (the arm, tall objects). A wrist camera moves with the TCP, so a rotation or a
translation leaves its view as it was; a mirror flips it left-right when the camera sits in the gripper's
plane of symmetry (``mirror="flip"``), else the camera cannot follow a mirror (``"refuse"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from robot_rl.data.symmetry import Elements, SymmetryError


@dataclass(frozen=True)
class CameraRule:
    """How one camera's image follows a group element."""

    mount: Literal["fixed", "wrist"]
    table_homography: tuple[tuple[float, ...], ...] | None = None
    """``fixed``: 3 x 3, table xy (m, base frame) -> pixels of the observation image (``fit_homography`` or the
    simulator's camera)."""
    mirror: Literal["flip", "same", "refuse"] = "flip"
    """``wrist``: what a mirror does to the image (``flip``: left-right; ``same``: nothing)."""

    def __post_init__(self) -> None:
        if self.mount == "fixed":
            h = np.asarray(self.table_homography if self.table_homography is not None else (), float)
            if h.shape != (3, 3) or not np.all(np.isfinite(h)) or abs(np.linalg.det(h)) < 1e-12:
                raise ValueError(f"CameraRule: a fixed camera needs an invertible 3x3 table_homography, got "
                                 f"{self.table_homography!r}")


def plane_matrix(g: Elements) -> torch.Tensor:
    """``g`` as homogeneous 3 x 3 maps of the table plane [B, 3, 3] (float64)."""
    m = torch.zeros(len(g), 3, 3, dtype=torch.float64, device=g.theta.device)
    m[:, :2, :2] = g.matrix()[:, :2, :2].double()
    m[:, :2, 2] = g.shift.double()
    m[:, 2, 2] = 1.0
    return m


def warp_images(images: torch.Tensor, source_from_output: torch.Tensor) -> torch.Tensor:
    """Backward warp: output pixel ``p`` takes the pixel nearest to ``source_from_output[b] @ p`` of
    ``images[b]`` (edges repeated). One gather of whole pixels, as the DrQ shift: any dtype, no float copy.

    images: [B, H, W, C]; source_from_output: [B, 3, 3] on continuous pixel coordinates.
    """
    b, h, w, c = images.shape
    dev = images.device
    m = source_from_output.to(dev, torch.float32)
    u = (torch.arange(w, device=dev, dtype=torch.float32) + 0.5).view(1, 1, w)
    v = (torch.arange(h, device=dev, dtype=torch.float32) + 0.5).view(1, h, 1)
    entry = lambda i, j: m[:, i, j].view(b, 1, 1)  # noqa: E731
    depth = (entry(2, 0) * u + entry(2, 1) * v + entry(2, 2)).clamp_(min=1e-9)
    col = ((entry(0, 0) * u + entry(0, 1) * v + entry(0, 2)) / depth).floor_().clamp_(0, w - 1)
    row = ((entry(1, 0) * u + entry(1, 1) * v + entry(1, 2)) / depth).floor_().clamp_(0, h - 1)
    # flat pixel index, exact in float32 below 2^24 pixels per batch (16M: 1,024 images of 128 x 128)
    base = (torch.arange(b, device=dev, dtype=torch.float32) * (h * w)).view(b, 1, 1)
    pixel = (base + row * w + col).long() if b * h * w < 1 << 24 else \
        (base.double() + row.double() * w + col.double()).long()
    return images.reshape(b * h * w, c).index_select(0, pixel.view(-1)).view(b, h, w, c)


def transform_images(rule: CameraRule, images: torch.Tensor, g: Elements) -> torch.Tensor:
    """``images`` [B, H, W, C] of one camera after ``g`` (one element per row)."""
    if rule.mount == "wrist":
        if rule.mirror == "same" or not bool(g.reflect.any()):
            return images
        if rule.mirror == "refuse":
            raise SymmetryError("a wrist camera with mirror='refuse' cannot follow a mirror")
        return torch.where(g.reflect.to(images.device).view(-1, 1, 1, 1), images.flip(2), images)
    moved = torch.nonzero(g.reflect | (g.theta != 0) | (g.shift != 0).any(1)).view(-1).to(images.device)
    if len(moved) == 0:
        return images
    h = torch.tensor(rule.table_homography, dtype=torch.float64, device=images.device)
    plane = plane_matrix(g).to(images.device).index_select(0, moved)
    out = images.clone()
    out[moved] = warp_images(images.index_select(0, moved), h @ torch.linalg.inv(plane) @ torch.linalg.inv(h))
    return out


def fit_homography(table_xy: np.ndarray, pixels: np.ndarray) -> tuple[np.ndarray, float]:
    """The table-plane homography from >= 4 marked points (normalised DLT) and its RMS reprojection error (px).

    table_xy: [N, 2] metres in the robot base frame; pixels: [N, 2] (column, row) in the observation image.
    """
    table_xy, pixels = np.asarray(table_xy, float), np.asarray(pixels, float)
    if table_xy.shape != pixels.shape or table_xy.ndim != 2 or table_xy.shape[1] != 2 or len(table_xy) < 4:
        raise ValueError(f"fit_homography: needs >= 4 pairs of (x, y) and (column, row), got {table_xy.shape} "
                         f"table points and {pixels.shape} pixels")

    def normaliser(p: np.ndarray) -> np.ndarray:
        centre, scale = p.mean(0), np.sqrt(2) / max(np.linalg.norm(p - p.mean(0), axis=1).mean(), 1e-12)
        return np.array([[scale, 0, -scale * centre[0]], [0, scale, -scale * centre[1]], [0, 0, 1]])

    tn, pn = normaliser(table_xy), normaliser(pixels)
    a = _homogeneous(table_xy) @ tn.T
    p = _homogeneous(pixels) @ pn.T
    rows = []
    for (x, y, _), (u, v, _) in zip(a, p):
        rows.append([-x, -y, -1, 0, 0, 0, u * x, u * y, u])
        rows.append([0, 0, 0, -x, -y, -1, v * x, v * y, v])
    _, singular, vt = np.linalg.svd(np.asarray(rows))
    if singular[-2] < 1e-9:
        raise ValueError("fit_homography: the marked points are degenerate (three or more on one line?)")
    h = np.linalg.inv(pn) @ vt[-1].reshape(3, 3) @ tn
    h /= h[2, 2]
    projected = _homogeneous(table_xy) @ h.T
    error = projected[:, :2] / projected[:, 2:] - pixels
    return h, float(np.sqrt((error**2).sum(1).mean()))


def _homogeneous(p: np.ndarray) -> np.ndarray:
    return np.hstack([p, np.ones((len(p), 1))])
