"""The run folder: resolved config, git state, metrics (CSV + TensorBoard), checkpoints, plots, videos.

runs/<name>/
  config.json        the resolved TrainConfig (rebuilds the run exactly)
  git.json           commit, branch, dirty flag; git.diff holds uncommitted changes
  metrics.csv        one row per logged event (train episode / eval)
  tb/                TensorBoard scalars
  checkpoints/       latest.pt (+ replay), written atomically
  learning_curve.png eval success vs env steps
  videos/            evaluation videos (GIF)
  panels/            what the policy saw and did: each evaluation's first episode (and, with a teleop device,
                     the latest training episode with an intervention), as PNG
  recordings/        --record-episodes: the training episodes as rosbag2 recordings
"""

from __future__ import annotations

import csv
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from robot_rl.utils.atomic import atomic_write
from robot_rl.utils.config_io import to_jsonable


class RunDir:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.checkpoints = self.path / "checkpoints"
        self.videos = self.path / "videos"
        self._tb = None

    @staticmethod
    def default_path(task: str, obs: str) -> Path:
        return Path("runs") / f"{task.replace('/', '_')}-{obs}-{time.strftime('%Y%m%d-%H%M%S')}"

    def create(self, config: Any) -> None:
        """Claim the folder for a new run: config.json appears complete, and only for the first of several
        runs started on the same path (two benchmark runs in the same second), never mixed from both."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        self.videos.mkdir(exist_ok=True)
        config_file = self.path / "config.json"
        try:
            atomic_write(config_file, json.dumps(to_jsonable(config), indent=2), exclusive=True)
        except FileExistsError:
            raise FileExistsError(
                f"run folder {self.path} already holds a run; use --resume {self.path} to continue it"
            ) from None
        self._write_git_state()

    def read_config(self) -> dict[str, Any]:
        config_file = self.path / "config.json"
        if not config_file.exists():
            raise FileNotFoundError(f"{self.path} is not a run folder: no config.json")
        try:
            return json.loads(config_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{config_file}: not valid JSON ({err})") from err

    def _write_git_state(self) -> None:
        root = Path(__file__).resolve().parents[2]

        def git(*args: str) -> str:
            try:
                out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
                return out.stdout.strip() if out.returncode == 0 else ""
            except (OSError, subprocess.TimeoutExpired):
                return ""

        diff = git("diff", "HEAD")
        state = {
            "commit": git("rev-parse", "HEAD"),
            "branch": git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(diff),
        }
        atomic_write(self.path / "git.json", json.dumps(state, indent=2))
        if diff:
            atomic_write(self.path / "git.diff", diff + "\n")

    # --- metrics ----------------------------------------------------------------------------------------
    def log(self, kind: str, step: int, values: dict[str, float]) -> None:
        """Append ``values`` at env step ``step`` to metrics.csv and TensorBoard under ``kind/``."""
        row = {"kind": kind, "step": step, "time": round(time.time(), 3), **values}
        metrics = self.path / "metrics.csv"
        new = not metrics.exists()
        with metrics.open("a", newline="") as f:
            if new:
                f.write("kind,step,time,key,value\n")
            writer = csv.writer(f)
            for key, value in values.items():
                writer.writerow([kind, step, row["time"], key, value])
        tb = self._writer()
        if tb is not None:
            for key, value in values.items():
                tb.add_scalar(f"{kind}/{key}", value, step)

    def log_image(self, tag: str, png: Path, step: int) -> None:
        """A PNG written to the run folder, also into TensorBoard under ``tag``."""
        tb = self._writer()
        if tb is not None:
            import imageio.v2 as imageio

            tb.add_image(tag, np.asarray(imageio.imread(png))[..., :3], step, dataformats="HWC")

    def read_metrics(self, kind: str, key: str) -> tuple[np.ndarray, np.ndarray]:
        steps, values = [], []
        metrics = self.path / "metrics.csv"
        if metrics.exists():
            with metrics.open() as f:
                for row in csv.DictReader(f):
                    if row["kind"] == kind and row["key"] == key:
                        steps.append(int(row["step"]))
                        values.append(float(row["value"]))
        return np.array(steps), np.array(values)

    def _writer(self):
        if self._tb is None:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:  # tensorboard missing: CSV still has everything
                return None
            self._tb = SummaryWriter(str(self.path / "tb"))
        return self._tb

    def plot_learning_curve(self) -> Path:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.5))
        draw_eval_curve(ax, self.read_metrics)
        ax.set_xlabel("env steps")
        ax.set_title(self.path.name, fontsize=9)
        fig.tight_layout()
        out = self.path / "learning_curve.png"
        fig.savefig(out, dpi=100)
        plt.close(fig)
        return out

    def save_video(self, frames: list[np.ndarray], name: str, fps: float, tag: str | None = None,
                   step: int = 0) -> Path | None:
        """``videos/<name>.gif``; with ``tag``, the same GIF in TensorBoard's images (which play it)."""
        if not frames:
            return None
        import imageio.v2 as imageio

        out = self.videos / f"{name}.gif"
        imageio.mimsave(out, [np.asarray(f) for f in frames], duration=1.0 / fps, loop=0)
        tb = self._writer()
        if tag is not None and tb is not None:
            from tensorboard.compat.proto.summary_pb2 import Summary

            h, w = np.asarray(frames[0]).shape[:2]
            gif = Summary.Image(height=h, width=w, colorspace=3, encoded_image_string=out.read_bytes())
            tb._get_file_writer().add_summary(Summary(value=[Summary.Value(tag=tag, image=gif)]), step)
        return out

    def close(self) -> None:
        if self._tb is not None:
            self._tb.close()
            self._tb = None


def draw_eval_curve(ax: Any, read: Callable[[str, str], tuple[np.ndarray, np.ndarray]]) -> None:
    """Evaluation success over env steps with its 95% interval (or the evaluation return where the env reports
    no success) on ``ax``, from ``read(kind, key)`` (``RunDir.read_metrics``): the learning curve and the report."""
    steps, success = read("eval", "success_rate")
    lo_steps, lo = read("eval", "success_ci_low")
    _, hi = read("eval", "success_ci_high")
    if len(steps):
        ax.plot(steps, success, marker="o", label="eval success (deterministic)")
        if len(lo_steps) == len(steps):
            ax.fill_between(steps, lo, hi, alpha=0.2, label="95% CI")
        ax.set_ylabel("success rate")
        ax.set_ylim(-0.02, 1.02)
    else:  # the env reports no success (or nothing was evaluated yet): the evaluation return, if any
        steps, returns = read("eval", "return")
        if len(steps):
            ax.plot(steps, returns, marker="o", label="eval return (deterministic; success unknown)")
        ax.set_ylabel("return")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="lower right", fontsize=8)
    else:
        ax.text(0.5, 0.5, "no evaluation yet", ha="center", va="center", transform=ax.transAxes)


def read_checkpoint(path: Path, device: str = "cpu", entry: str = "agent") -> dict[str, Any]:
    """A checkpoint written by ``robot-rl train`` or ``robot-rl learner`` (``robot-rl train-bc``: ``entry``
    ``network``); ``ValueError`` naming the file when it is empty, truncated or not one of ours."""
    import pickle
    import zipfile

    import torch

    try:
        state = torch.load(path, map_location=device, weights_only=False)
    except (EOFError, RuntimeError, pickle.UnpicklingError, zipfile.BadZipFile, ValueError, AttributeError,
            ModuleNotFoundError) as err:
        size, why = path.stat().st_size, str(err).split(". ")[0]
        raise ValueError(f"{path}: not a readable checkpoint ({size} bytes; {type(err).__name__}: {why}); "
                         "an interrupted copy? copy it again or use another checkpoint") from err
    if not isinstance(state, dict) or entry not in state:
        raise ValueError(f"{path}: not a robot_rl checkpoint (no {entry!r} entry)")
    return state
