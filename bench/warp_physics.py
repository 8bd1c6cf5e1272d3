"""Physics steps/s of MuJoCo Warp against MuJoCo C on the task models in ``sim/``, and how closely they agree.

    pip install -r bench/gpu_requirements.txt      # mujoco-warp and the mujoco release it matches
    python bench/warp_physics.py [--tasks reach pick_cube] [--num-worlds 1 64 256 1024] [--device cpu]

For each task the scene file is loaded with plain ``mujoco.MjModel.from_xml_path`` and started from a state
the CPU env reaches (reset, then a few steps of the scripted expert, so the arm moves and objects touch).
Reported, all in the same run:

- MuJoCo C: ``mj_step`` on one thread (the peer);
- MuJoCo Warp: ``mujoco_warp.step`` of ``--num-worlds`` copies of that state on Warp's ``--device``
  (Warp's CPU device runs one thread; ``cuda`` where a GPU is present, the step captured as a CUDA graph), as
  physics steps/s, env steps/s (one env step is ``substeps`` physics steps) and the ratio to one MuJoCo C
  thread;
- parity: the largest ``|qpos|`` difference between one Warp world and MuJoCo C after ``--parity-steps``
  steps from the same state with the same controls;
- the first step's time, which includes compiling Warp's kernels (cached on disk after the first run).

This measures the physics alone, with none of the env's Python (gate, observation, reward). Results go to
``bench/results/warp_physics/``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import mujoco
import numpy as np
from _recipe import run_stamp, write_results

from robot_rl.sim import TASKS, make_env, make_expert
from robot_rl.sim.models import model_dir

try:
    import mujoco_warp as mjw
    import warp as wp
except ImportError as error:
    raise SystemExit(
        f"bench/warp_physics.py needs MuJoCo Warp ({error}); install it with the mujoco release it matches: "
        f"pip install -r bench/gpu_requirements.txt"
    ) from None

wp.config.log_level = wp.LOG_WARNING  # else a line per kernel module loaded; the first step's time says it all

# Per-world buffer sizes for contacts and constraint rows (``put_data`` takes them per world, not in total).
NCONMAX, NJMAX = 64, 512


def start_state(task: str, expert_steps: int = 15, seed: int = 0) -> tuple[mujoco.MjModel, mujoco.MjData, int]:
    """The ``sim/`` model of ``task`` and a data in the state the CPU env reaches after ``expert_steps``."""
    env = make_env(task)
    env.reset(seed=seed)
    expert = make_expert(env)
    for _ in range(expert_steps):
        env.step(expert.act(env.scene))
    model = mujoco.MjModel.from_xml_path(str(model_dir() / f"{task}.xml"))
    data = mujoco.MjData(model)
    source = env.scene.data
    data.qpos[:], data.qvel[:], data.ctrl[:] = source.qpos, source.qvel, source.ctrl
    data.mocap_pos[:], data.mocap_quat[:] = source.mocap_pos, source.mocap_quat
    mujoco.mj_forward(model, data)
    substeps = env.cfg.substeps
    env.close()
    return model, data, substeps


def copy_of(model: mujoco.MjModel, data: mujoco.MjData) -> mujoco.MjData:
    fresh = mujoco.MjData(model)
    for field in ("qpos", "qvel", "ctrl", "mocap_pos", "mocap_quat"):
        getattr(fresh, field)[:] = getattr(data, field)
    mujoco.mj_forward(model, fresh)
    return fresh


def stepper(warp_model, data) -> Callable[[], None]:
    """One physics step of every world: a captured CUDA graph on a GPU (one launch instead of hundreds of
    kernel launches per step), plain ``mujoco_warp.step`` elsewhere."""
    if wp.get_device().is_cuda:
        with wp.ScopedCapture() as capture:
            mjw.step(warp_model, data)
        return lambda: wp.capture_launch(capture.graph)
    return lambda: mjw.step(warp_model, data)


def measure(task: str, num_worlds: list[int], parity_steps: int, device: str) -> dict:
    model, start, substeps = start_state(task)
    c_data = copy_of(model, start)
    n = 4000
    began = time.perf_counter()
    mujoco.mj_step(model, c_data, nstep=n)
    c_rate = n / (time.perf_counter() - began)

    with wp.ScopedDevice(device):
        warp_model = mjw.put_model(model)
        one = mjw.put_data(model, copy_of(model, start), nworld=1, nconmax=NCONMAX, njmax=NJMAX)
        began = time.perf_counter()
        mjw.step(warp_model, one)
        wp.synchronize()
        first_step_s = time.perf_counter() - began
        reference = copy_of(model, start)
        mujoco.mj_step(model, reference)
        for _ in range(parity_steps - 1):
            mujoco.mj_step(model, reference)
            mjw.step(warp_model, one)
        wp.synchronize()
        parity = float(np.abs(one.qpos.numpy()[0] - reference.qpos).max())

        rows = []
        for worlds in num_worlds:
            batch = mjw.put_data(model, copy_of(model, start), nworld=worlds, nconmax=NCONMAX, njmax=NJMAX)
            mjw.step(warp_model, batch)  # loads the kernels before a graph captures them
            wp.synchronize()
            step = stepper(warp_model, batch)
            steps, began = 0, time.perf_counter()
            while steps < 20 or time.perf_counter() - began < 1.0:
                for _ in range(10):
                    step()
                wp.synchronize()
                steps += 10
            rate = worlds * steps / (time.perf_counter() - began)
            rows.append({"num_worlds": worlds, "physics_steps_per_s": rate, "vs_c_thread": rate / c_rate})
    return {
        "task": task,
        "substeps": substeps,
        "c_physics_steps_per_s": c_rate,
        "first_step_s": first_step_s,
        "parity_steps": parity_steps,
        "parity_max_abs_qpos": parity,
        "warp": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", nargs="+", default=["reach", "pick_cube"], choices=list(TASKS))
    parser.add_argument("--num-worlds", nargs="+", type=int, default=[1, 64, 256, 1024])
    parser.add_argument("--parity-steps", type=int, default=200)
    parser.add_argument("--device", default="cpu", help="Warp device: cpu, cuda, cuda:0, ...")
    args = parser.parse_args()
    stamp = run_stamp()
    print(f"mujoco {mujoco.__version__}, mujoco-warp {mjw.__version__}, warp {wp.__version__}, device {args.device}")
    print("| task | backend | worlds | physics steps/s | env steps/s | vs one MuJoCo C thread |")
    print("|---|---|---:|---:|---:|---:|")
    results = []
    for task in args.tasks:
        r = measure(task, args.num_worlds, args.parity_steps, args.device)
        results.append(r)
        c, sub = r["c_physics_steps_per_s"], r["substeps"]
        print(f"| {task} | MuJoCo C, 1 thread | 1 | {c:,.0f} | {c / sub:,.0f} | 1.00x |")
        for row in r["warp"]:
            rate = row["physics_steps_per_s"]
            print(
                f"| {task} | MuJoCo Warp ({args.device}) | {row['num_worlds']} | {rate:,.0f} | {rate / sub:,.0f} | "
                f"{row['vs_c_thread']:.2f}x |"
            )
        print(
            f"{task}: first Warp step {r['first_step_s']:.1f} s; max |qpos| difference to MuJoCo C after "
            f"{r['parity_steps']} steps: {r['parity_max_abs_qpos']:.1e}",
            flush=True,
        )
    meta = {"mujoco": mujoco.__version__, "mujoco_warp": mjw.__version__, "warp": wp.__version__}
    path = write_results(
        "warp_physics", f"{stamp}-{args.device}.json", {**meta, "device": args.device, "results": results}
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
