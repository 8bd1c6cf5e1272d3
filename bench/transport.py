"""Actor/learner link figures over loopback: throughput, actor-side added latency, weight-push latency. (The
sample efficiency of ``train --actors 2`` against one process is ``bench/learning.py --methods ours_actors2``.)

    python bench/transport.py throughput [--transitions 3000] [--image-size 128] [--pattern scene]
    python bench/transport.py latency [--seconds 30] [--hz 10] [--publish-every 1.0]

throughput: one actor pushes CounterEnv transitions with two cameras as fast as the link takes them, to a
    learner process that decodes, validates, assembles episodes into a ReplayBuffer and fsyncs the replay log
    (flush 0.2 s), without training. Reports transitions/s until the last one is acknowledged as durable, the
    raw image MB/s that represents, and the compressed MB/s on the wire.
latency: one actor at ``--hz`` runs a pixel SAC policy (2 x 128x128 cameras) while the learner pushes new
    weights every ``--publish-every`` s and ingests. Reports the time the control loop spends in link calls
    per step (``ActorClient.add`` + ``PolicyHolder.maybe_swap``), the step time (act + link) against the same
    loop without a link, and weight latency: learner publish -> loaded on the actor, and -> first control step
    using it.
Each process of a pair uses ``torch.set_num_threads(1)``. Figures are also written to
``bench/results/transport/``.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from _recipe import percentiles, run_stamp, write_results

TOKEN_ENV = "ROBOT_RL_TOKEN"


def _learner_role(args: argparse.Namespace) -> None:
    """A learner without training: LinkServer + Ingestor + ReplayLog (+ weight publishing for ``latency``)."""
    import threading

    from robot_rl.agents.config import SACConfig
    from robot_rl.agents.sac import SACAgent
    from robot_rl.data.replay import ReplayBuffer, ReplayConfig
    from robot_rl.data.spaces import describe_space
    from robot_rl.data.transition import EXTRAS
    from robot_rl.distributed.codec import dump_weights
    from robot_rl.distributed.config import LinkConfig
    from robot_rl.distributed.ingest import Ingestor
    from robot_rl.distributed.replay_log import ReplayLog
    from robot_rl.distributed.server import LinkServer
    from robot_rl.distributed.spec import env_spec
    from robot_rl.distributed.testing import CounterEnv
    from robot_rl.utils.config_io import to_jsonable

    torch.set_num_threads(1)
    env = CounterEnv(image_size=args.image_size, pattern=args.pattern, episode_len=100)
    space, adim = env.observation_space, env.action_space.shape[0]
    replay = ReplayBuffer(space, adim, ReplayConfig(capacity=20_000), extras_keys=EXTRAS)

    def on_episode(done, restoring: bool) -> None:
        n = len(done.episode)
        infos = {"intervention": np.zeros(n, bool), "grasp_penalty": np.zeros(n, np.float32)}
        replay.add_episode(done.episode.__class__(**{**vars(done.episode), "infos": infos}))

    folder = Path(args.folder)
    log = ReplayLog(folder / "replay_log", {"observation_space": describe_space(space), "action_dim": adim})
    ingestor = Ingestor(space, adim, log, on_episode)
    log.open_for_append()
    agent_cfg = SACConfig()
    agent = SACAgent(agent_cfg, space, env.action_space)
    server = LinkServer(
        LinkConfig(port=0),
        os.environ[TOKEN_ENV],
        env_spec(env, "bench"),
        json.dumps(to_jsonable(agent_cfg)),
        ingestor,
        max_actors=4,
        learner_id="bench",
    )
    port = server.start()
    version = 1
    server.publish(version, 0, dump_weights(agent))
    (folder / "port").write_text(str(port))
    stop = threading.Event()

    def flush_loop() -> None:
        while not stop.wait(0.2):
            ingestor.flush()

    threading.Thread(target=flush_loop, daemon=True).start()
    next_publish = time.monotonic() + args.publish_every if args.publish_every > 0 else float("inf")
    while not (folder / "stop").exists():
        time.sleep(0.01)
        if time.monotonic() >= next_publish:
            with torch.no_grad():
                for p in agent.actor.parameters():
                    p.add_(0.001)
            version += 1
            server.publish(version, version, dump_weights(agent))
            next_publish += args.publish_every
    stop.set()
    ingestor.flush()
    server.stop()


def _start_learner(args: argparse.Namespace, folder: Path) -> subprocess.Popen:
    cmd = [
        sys.executable,
        __file__,
        "_learner",
        "--folder",
        str(folder),
        "--image-size",
        str(args.image_size),
        "--pattern",
        args.pattern,
        "--publish-every",
        str(getattr(args, "publish_every", 0.0)),
    ]
    proc = subprocess.Popen(cmd, env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not (folder / "port").exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("bench learner did not start")
        time.sleep(0.05)
    return proc


def _client(port: int, on_weights=None):
    from robot_rl.distributed.client import ActorClient
    from robot_rl.distributed.config import LinkConfig
    from robot_rl.distributed.spec import env_spec
    from robot_rl.distributed.testing import CounterEnv

    return ActorClient(
        LinkConfig(port=port),
        "bench-actor",
        env_spec(CounterEnv(**_ENV), "bench"),
        os.environ[TOKEN_ENV],
        buffer_mb=1024,
        on_weights=on_weights,
        compression=_LEVEL[0],
    )


_ENV: dict = {}
_LEVEL = [1]


def throughput(args: argparse.Namespace) -> None:
    from robot_rl.data.transition import Transition
    from robot_rl.distributed.testing import CounterEnv

    torch.set_num_threads(1)
    _ENV.update(image_size=args.image_size, pattern=args.pattern, episode_len=100)
    env = CounterEnv(**_ENV)
    frames, obs = [], env.reset(seed=0)[0]
    for _ in range(100):  # distinct observations, generated before timing
        nxt, *_ = env.step(np.zeros(7))
        frames.append((obs, nxt))
        obs = nxt
    raw_bytes = sum(v.nbytes for k, v in obs.items())
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        learner = _start_learner(args, folder)
        client = _client(int((folder / "port").read_text()))
        client.connect(30)
        client.start()
        start = time.perf_counter()
        for i in range(args.transitions):
            while client.buffered_bytes > 64 * 2**20:
                time.sleep(0.001)
            o, n = frames[i % 100]
            done = i % 100 == 99
            client.add(Transition(o, np.zeros(7), 0.0, n, False, done))
        if not client.drain(120):
            raise RuntimeError("not everything was acknowledged")
        elapsed = time.perf_counter() - start
        sent = client.counters["bytes_sent"]
        client.close()
        (folder / "stop").write_text("")
        learner.wait(30)
    n = args.transitions
    save("throughput", args, {"transitions": n, "seconds": elapsed, "transitions_per_s": n / elapsed,
                              "raw_mb_per_s": n * raw_bytes / elapsed / 2**20,
                              "wire_mb_per_s": sent / elapsed / 2**20, "compression": n * raw_bytes / max(sent, 1)})
    print(
        f"throughput ({args.image_size}x{args.image_size} x2 cameras, pattern={args.pattern}, "
        f"zlib level {args.compression}; acked = fsynced):"
    )
    print(
        f"  {n / elapsed:.0f} transitions/s; raw {n * raw_bytes / elapsed / 2**20:.1f} MB/s; "
        f"wire {sent / elapsed / 2**20:.1f} MB/s (compression x{n * raw_bytes / max(sent, 1):.1f}); "
        f"{n} transitions in {elapsed:.1f} s"
    )


def latency(args: argparse.Namespace) -> None:
    from robot_rl.agents.config import SACConfig
    from robot_rl.agents.policy import ActingPolicy
    from robot_rl.data.transition import Transition
    from robot_rl.distributed.actor import PolicyHolder
    from robot_rl.distributed.testing import CounterEnv

    torch.set_num_threads(1)
    if args.switch_interval_ms > 0:
        sys.setswitchinterval(args.switch_interval_ms / 1e3)
    _ENV.update(image_size=args.image_size, pattern=args.pattern, episode_len=100)
    env = CounterEnv(**_ENV)
    steps = int(args.seconds * args.hz)
    period = 1.0 / args.hz

    def make() -> ActingPolicy:
        return ActingPolicy(SACConfig(), env.observation_space, env.action_space)

    def loop(client, holder: PolicyHolder) -> tuple[np.ndarray, np.ndarray]:
        obs, _ = env.reset(seed=0)
        link, step = np.zeros(steps), np.zeros(steps)
        next_tick = time.perf_counter()
        for i in range(steps):
            t0 = time.perf_counter()
            holder.maybe_swap()
            t1 = time.perf_counter()
            action = holder.active.act(obs)
            nxt, r, term, trunc, _ = env.step(action)
            t2 = time.perf_counter()
            if client is not None:
                client.add(Transition(obs, action, r, nxt, term, trunc), holder.version)
            t3 = time.perf_counter()
            link[i], step[i] = (t1 - t0) + (t3 - t2), t3 - t0
            obs = env.reset(seed=i)[0] if term or trunc else nxt
            next_tick += period
            time.sleep(max(0.0, next_tick - time.perf_counter()))
        return link * 1e3, step * 1e3

    _, baseline = loop(None, PolicyHolder(make))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        learner = _start_learner(args, folder)
        holder = PolicyHolder(make)
        client = _client(int((folder / "port").read_text()), on_weights=holder.load)
        client.connect(30)
        client.start()
        holder.loaded.wait(30)
        link, step = loop(client, holder)
        client.drain(30)
        client.close()
        (folder / "stop").write_text("")
        learner.wait(30)
    pct = lambda a, q: float(np.percentile(a, q))  # noqa: E731
    loads = np.array([(loaded - pub) * 1e3 for _, pub, loaded in holder.loads[1:]])
    swaps = np.array([(swapped - pub) * 1e3 for _, pub, swapped in holder.swaps[1:]])
    save("latency", args, {"steps": steps, **{name: percentiles(values) for name, values in (
        ("link_calls_ms", link), ("step_ms", step), ("step_without_link_ms", baseline),
        ("weights_publish_to_loaded_ms", loads), ("weights_publish_to_first_step_ms", swaps))}})
    print(
        f"actor latency at {args.hz:g} Hz, {steps} steps, pixel SAC policy (2 x {args.image_size}px cameras):"
    )
    print(
        f"  link calls per step: p50 {pct(link, 50):.3f} ms, p99 {pct(link, 99):.3f} ms, "
        f"max {link.max():.3f} ms"
    )
    print(
        f"  step (act + link): p50 {pct(step, 50):.2f} ms, p99 {pct(step, 99):.2f} ms; without a link: "
        f"p50 {pct(baseline, 50):.2f} ms, p99 {pct(baseline, 99):.2f} ms -> p99 added "
        f"{pct(step, 99) - pct(baseline, 99):.2f} ms"
    )
    if len(loads):
        print(
            f"  weight push ({len(loads)} pushes, {args.publish_every:g} s period): "
            f"publish -> loaded on actor p50 {pct(loads, 50):.1f} ms, p99 {pct(loads, 99):.1f} ms; "
            f"publish -> first step using it "
            f"p50 {pct(swaps, 50):.1f} ms, p99 {pct(swaps, 99):.1f} ms (includes waiting for the next "
            f"{period * 1e3:.0f} ms tick)"
        )


def save(mode: str, args: argparse.Namespace, figures: dict[str, object]) -> None:
    settings = {k: v for k, v in vars(args).items() if k not in ("mode", "folder")}
    path = write_results("transport", f"{run_stamp()}-{mode}.json", {"mode": mode, "args": settings, **figures})
    print(f"results: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    for mode in ("throughput", "latency", "_learner"):
        p = sub.add_parser(mode)
        p.add_argument("--image-size", type=int, default=128)
        p.add_argument("--pattern", default="scene", choices=["scene", "counter", "noise"])
        p.add_argument("--transitions", type=int, default=3000)
        p.add_argument("--seconds", type=float, default=30.0)
        p.add_argument("--hz", type=float, default=10.0)
        p.add_argument("--publish-every", type=float, default=1.0)
        p.add_argument("--folder", default="")
        p.add_argument("--compression", type=int, default=1, help="zlib level for images (0: raw)")
        p.add_argument(
            "--switch-interval-ms", type=float, default=0.0, help="sys.setswitchinterval (0: keep)"
        )
    args = parser.parse_args()
    os.environ.setdefault(TOKEN_ENV, secrets.token_urlsafe(24))
    _LEVEL[0] = getattr(args, "compression", 1)
    {"throughput": throughput, "latency": latency, "_learner": _learner_role}[args.mode](
        args
    )


if __name__ == "__main__":
    main()
