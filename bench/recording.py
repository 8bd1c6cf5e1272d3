"""What recording episodes costs the control loop, and what it writes.

    python bench/recording.py [--steps 3000] [--image-size 128] [--cameras 2] [--hz 10]
    python bench/recording.py --roundtrip [--episodes 5]

The ROS 2 policy actor records in its control loop: each step it calls ``EpisodeBagWriter.record`` with the
step's observations (state, privileged state and ``--cameras`` rgb images of ``--image-size``), executed
action, reward and infos (what ``robot_rl.formats.rosbag`` writes). This times that call over ``--steps`` steps
(episodes of 100 steps) against the control period at ``--hz``, and the recording's size per minute of control.
Camera frames are synthetic scenes (a lit table, a moving block, sensor noise); raw images are recorded
uncompressed, as ``ros2 bag record`` records them, so their content does not change the size.
Prints one JSON line.

``--roundtrip``: scripted pick_cube demos with two 64x64 cameras go out as a rosbag2 recording and as LeRobot
datasets at four video settings, and come back through ``import-demos``' readers: whether state, actions,
rewards and flags are exact, the images' mean and largest error (0-255), and the sizes on disk against the
demo folder.
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


def roundtrip(episodes: int) -> dict:
    from robot_rl.data.demos import load_demos, meta_from_document, read_meta
    from robot_rl.formats.lerobot import VideoSettings, read_lerobot_dataset, write_lerobot_dataset
    from robot_rl.formats.rosbag import read_episodes_bag, write_episodes_bag
    from robot_rl.training.env_factory import make_training_env
    from robot_rl.training.record import record_scripted_demos

    def size(path: Path) -> float:
        return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6

    out: dict = {"episodes": episodes}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = make_training_env("pick_cube", "pixels", 64)
        record_scripted_demos(env, "pick_cube", episodes, root / "demos", seed=0)
        demos = load_demos(root / "demos")
        meta = meta_from_document(read_meta(root / "demos"), "demos")
        out["steps"] = sum(len(e) for e in demos)
        out["demo_folder_mb"] = round(size(root / "demos"), 2)
        copies = {"rosbag": read_episodes_bag(write_episodes_bag(root / "bag", meta, demos))[1]}
        out["rosbag_mb"] = round(size(root / "bag"), 2)
        for crf, pix in ((0, "yuv444p"), (0, "yuv420p"), (18, "yuv420p"), (30, "yuv420p")):
            name = f"lerobot_crf{crf}_{pix}"
            path = write_lerobot_dataset(root / name, meta, demos, VideoSettings(crf=crf, pix_fmt=pix))
            copies[name] = read_lerobot_dataset(path)[1]
            out[f"{name}_mb"] = round(size(path), 2)
        for name, back in copies.items():
            exact = all(np.array_equal(a.actions, b.actions) and np.array_equal(a.rewards, b.rewards)
                        and np.array_equal(a.observations["state"], b.observations["state"])
                        and a.terminated == b.terminated and a.truncated == b.truncated
                        for a, b in zip(demos, back, strict=True))
            errors = np.concatenate([np.abs(a.observations[k].astype(int) - b.observations[k].astype(int)).ravel()
                                     for a, b in zip(demos, back) for k in a.observations if k.startswith("images/")])
            out[name] = {"state_actions_exact": exact, "image_error_mean": round(float(errors.mean()), 3),
                         "image_error_max": int(errors.max())}
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--roundtrip", action="store_true")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--cameras", type=int, default=2)
    p.add_argument("--hz", type=float, default=10.0)
    args = p.parse_args()
    if args.roundtrip:
        print(json.dumps(roundtrip(args.episodes)))
        return

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
