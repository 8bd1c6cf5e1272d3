"""What recording episodes costs the control loop, and what it writes.

    python bench/recording.py [--steps 3000] [--image-size 128] [--cameras 2] [--hz 10]

The ROS 2 policy actor records in its control loop: each step it calls ``EpisodeBagWriter.record`` with the
step's observations (state, privileged state and ``--cameras`` rgb images of ``--image-size``), executed
action, reward and infos (what ``robot_rl.formats.rosbag`` writes). This times that call over ``--steps`` steps
(episodes of 100 steps) against the control period at ``--hz``, and the recording's size per minute of control.
Camera frames are synthetic scenes (a lit table, a moving block, sensor noise); raw images are recorded
uncompressed, as ``ros2 bag record`` records them, so their content does not change the size.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np


def frames(size: int, n: int, seed: int) -> np.ndarray:
    """``n`` camera-like frames: a lit table, a moving block, sensor noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / size
    base = np.stack([0.55 + 0.2 * y, 0.45 + 0.1 * x, 0.35 + 0.1 * (x + y) / 2], -1) * 255
    out = np.empty((n, size, size, 3), np.uint8)
    for i in range(n):
        img = base.copy()
        cx, cy = 0.3 + 0.4 * (i % 50) / 50, 0.5
        block = (abs(x - cx) < 0.08) & (abs(y - cy) < 0.08)
        img[block] = (200, 40, 40)
        out[i] = np.clip(img + rng.normal(0, 2, img.shape), 0, 255)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--cameras", type=int, default=2)
    p.add_argument("--hz", type=float, default=10.0)
    args = p.parse_args()

    from robot_rl.data.demos import DemoMeta
    from robot_rl.data.transition import EnvStep, Transition, typed_extras
    from robot_rl.envs.contract import STATE_DIM, CameraSpec, ContractSpec, image_key
    from robot_rl.formats.rosbag import EpisodeBagWriter
    from robot_rl.sim import make_env

    names = [f"cam{i}" for i in range(args.cameras)]
    contract = ContractSpec(cameras=tuple(CameraSpec(n, args.image_size, args.image_size) for n in names),
                            privileged_layout=make_env("pick_cube").unwrapped.contract.privileged_layout,
                            control_hz=args.hz)
    meta = DemoMeta(task="pick_cube", contract=contract)
    space = meta.space()
    images = {n: frames(args.image_size, 64, i) for i, n in enumerate(names)}
    rng = np.random.default_rng(0)

    def obs(t: int) -> dict[str, np.ndarray]:
        out = {"state": rng.normal(size=STATE_DIM).astype(np.float32),
               "privileged": rng.normal(size=space["privileged"].shape).astype(np.float32)}
        out.update({image_key(n): images[n][t % 64] for n in names})
        return out

    timings = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rec"
        writer = EpisodeBagWriter(path, meta)
        current = obs(0)
        dt_ns = int(1e9 / args.hz)
        stamp = time.time_ns()
        writer.begin(current, stamp)
        for t in range(args.steps):
            nxt = obs(t + 1)
            end = (t + 1) % 100 == 0
            step = EnvStep(Transition(current, rng.uniform(-1, 1, 7).astype(np.float32), 0.0, nxt, False, end,
                                      typed_extras({})), {"is_success": False, "safety_clipped": False})
            stamp += dt_ns
            t0 = time.perf_counter()
            writer.record(step, stamp)
            if end and t + 1 < args.steps:
                writer.begin(nxt, stamp + dt_ns)
                stamp += dt_ns
            timings.append(time.perf_counter() - t0)
            current = nxt
        t0 = time.perf_counter()
        writer.close()
        close_s = time.perf_counter() - t0
        size = sum(f.stat().st_size for f in path.iterdir())
    ms = np.asarray(timings) * 1e3
    minutes = args.steps / args.hz / 60
    period_ms = 1e3 / args.hz
    print(json.dumps({
        "steps": args.steps, "cameras": args.cameras, "image_size": args.image_size, "hz": args.hz,
        "record_ms_p50": round(float(np.percentile(ms, 50)), 4),
        "record_ms_p99": round(float(np.percentile(ms, 99)), 4), "record_ms_max": round(float(ms.max()), 4),
        "p99_fraction_of_period": round(float(np.percentile(ms, 99)) / period_ms, 5),
        "close_s": round(close_s, 3), "mb_per_minute": round(size / 1e6 / minutes, 2),
        "raw_image_mb_per_minute": round(args.cameras * args.image_size**2 * 3 * args.hz * 60 / 1e6, 2),
    }))


if __name__ == "__main__":
    main()
