"""``robot-rl check-symmetry --task T``: does the task's declared group hold in simulation?"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro


@dataclass(frozen=True)
class CheckSymmetryArgs:
    """Step sampled states of a task and their transforms by its declared symmetry group side by side: the
    one-step error of every transformed field, reward and success agreement. Exit status 1 if the group does
    not hold (training with ``--symmetry.mode`` refuses it then unless ``--symmetry.force``)."""

    task: str = "reach"
    states: int = 200
    """Transformed steps to check."""
    image_states: int = 10
    """Transformed scenes whose warped camera images are compared with re-rendered ones (0: none)."""
    seed: int = 0


@dataclass(frozen=True)
class CalibrateCameraArgs:
    """Fit a fixed camera's table-plane homography (what symmetry augmentation warps its images with) from
    marked table points: a CSV with a header and one row per point, ``x_m,y_m,column_px,row_px`` (table point
    in the robot base frame; its pixel in the camera's observation image, after crop and resize)."""

    points: tyro.conf.Positional[Path]


def check_symmetry_command(args: CheckSymmetryArgs) -> int:
    from robot_rl.sim import make_env
    from robot_rl.sim.symmetry import Thresholds, check_image_warps, check_symmetry
    from robot_rl.training.env_factory import is_robot_rl_task

    if not is_robot_rl_task(args.task):
        raise ValueError(f"check-symmetry: {args.task!r} is not a robot_rl task (symmetry groups are declared by "
                         "robot_rl tasks)")
    if args.states < 1:
        raise ValueError(f"check-symmetry: --states must be >= 1, got {args.states}")
    env, twin = make_env(args.task), make_env(args.task)
    group = env.task.config.symmetry
    if not group.declared:
        print(f"task {args.task!r} declares no symmetry group: nothing to check")
        return 0
    report = check_symmetry(env, twin, group, states=args.states, seed=args.seed)
    thresholds = Thresholds()
    print("\n".join(report.lines(thresholds)))
    if args.image_states:
        for w in check_image_warps(env, twin, group, states=args.image_states, seed=args.seed):
            moved = [p for p in w.psnr_db if p < 100]  # identity draws compare an image with itself
            if moved:
                print(f"image warp {w.camera}: PSNR median {np.median(moved):.1f} dB, min {min(moved):.1f} dB over "
                      f"{len(moved)} transformed scenes ({'table-plane' if w.camera != 'wrist' else 'all'} pixels, "
                      f"{np.mean(w.table_share):.0%} of the image)")
    failures = report.failures(thresholds)
    print("holds" if not failures else "DOES NOT HOLD: " + "; ".join(failures))
    return 0 if not failures else 1


def calibrate_camera_command(args: CalibrateCameraArgs) -> int:
    from robot_rl.data.image_symmetry import fit_homography

    try:
        rows = np.loadtxt(args.points, delimiter=",", skiprows=1, ndmin=2)
    except (OSError, ValueError) as err:
        raise ValueError(f"calibrate-camera: cannot read {args.points}: {err}") from err
    if rows.shape[1] != 4:
        raise ValueError(f"calibrate-camera: {args.points} needs 4 columns x_m,y_m,column_px,row_px, got "
                         f"{rows.shape[1]}")
    h, rmse = fit_homography(rows[:, :2], rows[:, 2:])
    print(f"table homography from {len(rows)} points, RMS reprojection error {rmse:.2f} px:")
    print("table_homography: [" + ", ".join("[" + ", ".join(f"{v:.6g}" for v in r) + "]" for r in h) + "]")
    return 0
