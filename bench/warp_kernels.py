"""Compile MuJoCo Warp's CUDA kernels for the task models ahead of time, on a machine without a GPU.

    python bench/warp_kernels.py [--arch 90] [--out .gpu_pack/kernels.tar.xz] [--tasks reach pick_cube ...]

A cold start on a GPU spends minutes compiling MuJoCo Warp's kernels (200 s on an H200, most of it four
convex-collision kernels). This steps every task's batched env once on Warp's CPU device, which defines all
the kernel modules the models need (some are generated per model), compiles each for the CUDA architecture
``--arch`` (90: Hopper) into a fresh kernel cache with Warp's own NVRTC, and packs the binaries and their
metadata. ``bench/gpu_check.sh`` unpacks them into the GPU machine's Warp cache (``WARP_CACHE_PATH``), where
Warp loads them instead of compiling. Kernels Warp builds only on CUDA devices (a few solver kernels with
tile instructions) still compile there.
"""

from __future__ import annotations

import argparse
import os
import sys
import tarfile
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", type=int, default=90, help="CUDA compute capability, e.g. 90 (H100/H200)")
    parser.add_argument("--out", type=Path, default=Path(".gpu_pack/kernels.tar.xz"))
    parser.add_argument("--tasks", nargs="+", default=["reach", "pick_cube", "push", "peg_insert"])
    args = parser.parse_args()
    cache = tempfile.mkdtemp(prefix="warp_kernels_")
    os.environ["WARP_CACHE_PATH"] = cache  # read when Warp initialises, below
    import warp as wp

    from robot_rl.sim.batched import BatchedEnvConfig, WarpConfig, make_batched_env

    wp.config.log_level = wp.LOG_WARNING
    for task in args.tasks:
        env = make_batched_env(task, BatchedEnvConfig(num_envs=2, backend="warp", seed=0,
                                                      warp=WarpConfig(device="cpu", start_pool=2)))
        env.reset(seed=0)
        env.step(env.actions)
        env.close()
    from warp._src.context import user_modules

    modules = [m for m in user_modules.values() if m.kernels]
    started = time.perf_counter()
    for i, module in enumerate(modules):
        wp.compile_aot_module(module, arch=args.arch, use_ptx=False)
        print(f"[{i + 1}/{len(modules)}] {module.name} ({time.perf_counter() - started:.0f} s)", flush=True)
    suffix = f".sm{args.arch}.cubin"
    root = Path(wp.config.kernel_cache_dir)
    files = [p for p in root.rglob("*") if p.is_file() and (p.name.endswith(suffix) or p.suffix == ".meta")]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.out, "w:xz") as tar:
        for path in files:
            tar.add(path, arcname=str(path.relative_to(root.parent)))  # with the version folder
    print(f"{sum(p.name.endswith(suffix) for p in files)} kernel modules for sm_{args.arch} -> {args.out} "
          f"({args.out.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)


if __name__ == "__main__":
    main()
