"""Learner throughput: SACAgent updates/s against Stable-Baselines3 SAC gradient steps/s (same run, sizes).

One "update" here is what one SB3 gradient step does: one critic step (TD target, loss, Adam, Polyak), one
actor step and one temperature step, at batch 256, with 256x256 MLPs, state observations (35-D: the 22-D
contract state plus 13 privileged dims) and 7-D actions; ``utd_ratio=1``. Both sides sample their batch from
an in-memory buffer of random transitions inside the timed loop. SB3 with ``n_critics=N`` takes the min over
all N critics; ours over a random subset of 2. Both run on one CPU thread (``torch.set_num_threads(1)``;
``--threads`` for more).
Rounds alternate ours / SB3 so machine noise hits both; the median round is reported. The process keeps
freed heap for reuse as ``robot-rl train``'s learner does (``TrainConfig.retained_heap_mb``, for both sides
alike; ``--allocator default`` keeps glibc's defaults). The "no LayerNorm"
row runs SB3's architecture (the RLPD recipe's LayerNorm costs time SB3 does not spend). The bfloat16 row
computes the hidden layers of actor and critics in bfloat16 (``SACConfig.precision``; parameters, optimiser
state, output layers and losses stay float32); SB3 has no such mode and runs float32.

    python bench/learner_throughput.py            # full run (about a minute per row)
    python bench/learner_throughput.py --quick    # smoke run
    python bench/learner_throughput.py --compile  # also time SACConfig(compile="on"): whole compiled steps
    python bench/learner_throughput.py --allocator default  # glibc's malloc defaults for both sides
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
from _recipe import run_stamp, write_results

from robot_rl.agents.config import SACConfig
from robot_rl.agents.sac import SACAgent, cpu_has_native_bfloat16
from robot_rl.data.batch import Batch
from robot_rl.training.config import TrainConfig
from robot_rl.utils.allocator import retain_freed_memory

OBS_DIM, ACTION_DIM, BATCH, HIDDEN, BUFFER = 35, 7, 256, (256, 256), 10_000


def ours(num_critics: int, **overrides: object) -> Callable[[int], float]:
    """Returns run(steps) -> seconds for ``steps`` SACAgent updates."""
    space = gym.spaces.Dict({"state": gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)})
    config = SACConfig(
        hidden_dims=HIDDEN, num_critics=num_critics, num_min_critics=2, utd_ratio=1, **overrides
    )
    agent = SACAgent(config, space, gym.spaces.Box(-1, 1, (ACTION_DIM,), np.float32))
    g = torch.Generator().manual_seed(0)
    obs, next_obs = torch.randn(BUFFER, OBS_DIM, generator=g), torch.randn(BUFFER, OBS_DIM, generator=g)
    action = torch.rand(BUFFER, ACTION_DIM, generator=g) * 2 - 1
    reward, discount = torch.randn(BUFFER, generator=g), torch.full((BUFFER,), 0.99)

    def sample() -> Batch:
        i = torch.randint(0, BUFFER, (BATCH,), generator=g)
        return Batch({"state": obs[i]}, action[i], reward[i], discount[i], {"state": next_obs[i]})

    def run(steps: int) -> float:
        start = time.perf_counter()
        for _ in range(steps):
            agent.update(sample)
        return time.perf_counter() - start

    run(3)  # warm-up (and compilation)
    return run


def sb3(num_critics: int) -> Callable[[int], float] | None:
    """Returns run(steps) -> seconds for ``steps`` SB3 SAC gradient steps, or None without SB3."""
    try:
        from stable_baselines3 import SAC
        from stable_baselines3.common.logger import configure
    except ImportError:
        return None

    class Dummy(gym.Env):
        observation_space = gym.spaces.Box(-np.inf, np.inf, (OBS_DIM,), np.float32)
        action_space = gym.spaces.Box(-1, 1, (ACTION_DIM,), np.float32)

        def reset(self, *, seed=None, options=None):
            return np.zeros(OBS_DIM, np.float32), {}

        def step(self, action):
            return np.zeros(OBS_DIM, np.float32), 0.0, False, False, {}

    kwargs = {"net_arch": list(HIDDEN), "n_critics": num_critics}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = SAC(
            "MlpPolicy", Dummy(), batch_size=BATCH, buffer_size=BUFFER, policy_kwargs=kwargs, device="cpu"
        )
    model.set_logger(configure(None, []))
    rb, rng = model.replay_buffer, np.random.default_rng(0)
    rb.observations[:] = rng.standard_normal(rb.observations.shape)
    rb.next_observations[:] = rng.standard_normal(rb.next_observations.shape)
    rb.actions[:] = rng.uniform(-1, 1, rb.actions.shape)
    rb.rewards[:] = rng.standard_normal(rb.rewards.shape)
    rb.full = True

    def run(steps: int) -> float:
        start = time.perf_counter()
        model.train(gradient_steps=steps, batch_size=BATCH)
        return time.perf_counter() - start

    run(3)
    return run


def measure(runs: dict[str, Callable[[int], float]], steps: int, rounds: int) -> dict[str, float]:
    """Median steps/s over ``rounds`` alternating rounds."""
    rates: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            rates[name].append(steps / run(steps))
    return {name: statistics.median(r) for name, r in rates.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few steps, one round")
    parser.add_argument("--compile", action="store_true", help="also time SACConfig(compile='on')")
    parser.add_argument("--steps", type=int, default=None, help="updates per round (default 40; quick 5)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (default 5; quick 1)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads, both sides (default 1)")
    parser.add_argument(
        "--allocator",
        choices=("retain", "default"),
        default="retain",
        help="retain: keep freed heap for reuse as robot-rl train does (default); default: glibc's defaults",
    )
    args = parser.parse_args()
    steps = args.steps or (5 if args.quick else 40)
    rounds = args.rounds or (1 if args.quick else 5)
    torch.set_num_threads(args.threads)
    retained = args.allocator == "retain" and retain_freed_memory(TrainConfig.retained_heap_mb)

    native_bfloat16 = cpu_has_native_bfloat16()  # emulated bfloat16 runs ~13x slower: not worth a row
    rows = []
    for n in (10, 2):
        runs = {"ours": ours(n)}
        if native_bfloat16:
            runs["ours, precision=bfloat16"] = ours(n, precision="bfloat16")
        runs["ours, no LayerNorm (SB3's MLP)"] = ours(n, critic_layer_norm=False)
        if args.compile:
            runs["ours, compiled"] = ours(n, compile="on")
            if native_bfloat16:
                runs["ours, compiled, precision=bfloat16"] = ours(n, compile="on", precision="bfloat16")
        baseline = sb3(n)
        if baseline is not None:
            runs["sb3"] = baseline
        rates = measure(runs, steps, rounds)
        base = rates.get("sb3")
        for name, rate in rates.items():
            if name != "sb3":
                ratio = f"{rate / base:.2f}x" if base else "n/a"
                rows.append((f"{n} critics, {name}", rate, base, ratio))

    print(f"\nLearner throughput, batch {BATCH}, MLP {HIDDEN}, obs {OBS_DIM}, action {ACTION_DIM}, "
          f"{args.threads} thread(s)")
    heap = f"freed heap retained ({TrainConfig.retained_heap_mb} MB)" if retained else "glibc malloc defaults"
    print(f"({steps} updates x {rounds} rounds, median; torch {torch.__version__}; {heap})\n")
    print("| config | ours updates/s | SB3 SAC steps/s (same N) | ours / SB3 |")
    print("|---|---:|---:|---:|")
    for name, rate, base, ratio in rows:
        base_text = f"{base:.1f}" if base else "-"
        print(f"| {name} | {rate:.1f} | {base_text} | {ratio} |")
    if not native_bfloat16:
        print("\n(no bfloat16 rows: this CPU has no AVX512-BF16/AMX and would emulate it)")
    doc = vars(args) | {"torch": torch.__version__, "retained_heap": bool(retained),
                        "rows": [{"config": n, "ours": r, "sb3": b, "ratio": q} for n, r, b, q in rows]}
    print(f"results: {write_results('learner_throughput', f'{run_stamp()}-threads{args.threads}.json', doc)}")


if __name__ == "__main__":
    main()
