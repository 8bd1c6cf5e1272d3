"""ROS 2 figures over real DDS (loopback, Fast DDS from the Kilted wheels): control-loop latency, a soak,
camera throughput. Needs rclpy and the built package (``bash scripts/build_ros.sh`` and
``source ros2_ws/install/setup.bash``, or ``pip install ./ros2_ws/src/robot_rl_ros``).

    python bench/ros_latency.py latency [--hz 10] [--seconds 30] [--driver-hz 250] [--rt-priority 50]
    python bench/ros_latency.py soak [--minutes 10] [--hz 100] [--rt-priority 50]
    python bench/ros_latency.py cameras [--seconds 20] [--size 128]
    python bench/ros_latency.py timer [--hz 100] [--seconds 30] [--rt-priority 50]

latency: this process is the driver stack (``current_pose``, ``joint_states`` and ``wrench`` at ``--driver-hz``, crisp's
    ``target_pose`` in); the robot_bridge and policy_actor nodes run as processes, the actor with an untrained
    SAC state policy (256x256 MLP) at ``--hz``. Observation -> command latency is, per control step, the time
    from the driver's pose stamp to the arrival of the command it caused back at the driver: the bridge's
    echo gives obs stamp -> command sent; the driver's receipt gives command sent -> received. Missed
    cycles: commands that reached the driver more than 1.5 periods after the previous one (measurement
    window), and the actor's own count of steps that overran their period (whole run, start-up included).
    ``--rt-priority``: driver, bridge and actor run SCHED_FIFO, as on a real-time control PC.
soak: the latency setup for ``--minutes``; resident memory (RSS) of bridge and actor is sampled every 10 s;
    growth is reported over the second half, after bounded buffers (the actor's stats window) have filled.
    The peer: a bare timer loop (``timer``, no ROS, no work) runs beside it at the same rate and priority
    and logs host events; each of the actor's missed cycles is listed with the host events and the driver's
    publishing gaps around it.
cameras: this process publishes two ``--size``^2 rgb8 cameras at 30 Hz (reliable, like realsense); two
    camera_bridge processes forward them to ``rl/images/*``; counts frames in and out, and the latency.
timer: the control loop's schedule (sleep to the next tick; later than the tick counts as a missed cycle)
    with nothing else in the process: how late the host wakes a process that does no work. Host events with
    their wall time: its own late wake-ups (stalls) and steal time per vCPU (from /proc/stat every tick:
    time a VM's hypervisor did not run that vCPU). Until SIGTERM or ``--seconds``; ``--out`` writes JSON.
latency, soak and cameras also write their figures (latencies as percentiles) to ``bench/results/ros_latency/``.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
from _recipe import percentiles, run_stamp, write_results

REPO = Path(__file__).resolve().parents[1]
sys.path.append(str(REPO / "ros2_ws" / "src" / "robot_rl_ros"))


def _env(domain: int) -> dict[str, str]:
    from robot_rl_ros.specs import ENVIRONMENT

    env = dict(os.environ, **ENVIRONMENT, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED="1",
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(p for p in (sys.prefix, env.get("AMENT_PREFIX_PATH")) if p)
    return env


def start_node(spec: str, domain: int, log_dir: Path, name: str | None = None, rt_priority: int = 0,
           **overrides) -> subprocess.Popen:
    from robot_rl_ros.specs import SPECS, share_dir

    argv = SPECS[spec].argv(share_dir(), "/bench", name, overrides, rt_priority=rt_priority)
    log = open(log_dir / f"{name or spec}.log", "w")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(argv, env=_env(domain), stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_nodes(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _node(domain: int, name: str):
    import rclpy
    from rclpy.context import Context
    from rclpy.node import Node
    from robot_rl_ros.specs import ENVIRONMENT

    from robot_rl.ros.runtime import BackgroundSpinner

    os.environ.update(ENVIRONMENT, ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = Node(name, namespace="/bench", context=context)
    return node, BackgroundSpinner(node), context  # the nodes' executor: the driver stack it stands for is C++


def _save(cmd: str, args: argparse.Namespace, figures: dict) -> None:
    """The run's figures as ``bench/results/ros_latency/<time>-<cmd>.json``: per-step latencies as percentiles,
    everything else (incidents, RSS samples, host events) as measured."""
    figures = {k: percentiles(v) if k.endswith("_ms") and isinstance(v, list) else v
               for k, v in figures.items() if k != "logs"}  # the logs folder is temporary
    settings = {k: v for k, v in vars(args).items() if k != "cmd"}
    path = write_results("ros_latency", f"{run_stamp()}-{cmd}.json", {"cmd": cmd, "args": settings, **figures})
    print(f"results: {path}")


def _percentiles(values_ms: list[float]) -> str:
    p = percentiles(values_ms)
    if p is None:
        return "no samples"
    return f"p50 {p['p50']:.2f} ms, p99 {p['p99']:.2f} ms, max {p['max']:.1f} ms (n={p['n']})"


class Driver:
    """A driver stack: PoseStamped + JointState at ``hz``; records target_pose arrivals by command stamp and
    its own publishing gaps longer than two periods (the bridge publishes robot state on driver poses)."""

    def __init__(self, node, hz: float) -> None:
        from geometry_msgs.msg import PoseStamped, WrenchStamped
        from rclpy.qos import QoSProfile
        from sensor_msgs.msg import JointState

        from robot_rl.ros.messages import from_stamp, pose_from_msg, pose_msg

        self.node, self.pose_msg, self.JointState, self.WrenchStamped = node, pose_msg, JointState, WrenchStamped
        self.position, self.rotation = np.array([0.5, 0.0, 0.3]), np.diag([1.0, -1.0, -1.0])
        self.arrivals: dict[float, float] = {}
        self.hz, self.last_publish, self.gaps = hz, None, []
        self.pose_pub = node.create_publisher(PoseStamped, "current_pose", QoSProfile(depth=10))
        self.joint_pub = node.create_publisher(JointState, "joint_states", QoSProfile(depth=10))
        self.wrench_pub = node.create_publisher(WrenchStamped, "wrench", QoSProfile(depth=10))

        def on_target(msg) -> None:
            self.arrivals[round(from_stamp(msg.header.stamp), 6)] = time.time()
            pose = pose_from_msg(msg)
            if pose is not None:  # an ideal controller: the arm is where it was told to be
                self.position, self.rotation = pose

        node.create_subscription(PoseStamped, "target_pose", on_target, QoSProfile(depth=100))  # keep all
        node.create_timer(1.0 / hz, self.publish)

    def publish(self) -> None:
        now = time.monotonic()
        if self.last_publish is not None and now - self.last_publish > 2.0 / self.hz:
            self.gaps.append({"kind": "driver gap", "time": round(time.time(), 4),
                              "ms": round((now - self.last_publish) * 1e3, 3)})
        self.last_publish = now
        stamp = self.node.get_clock().now().to_msg()
        js = self.JointState(name=[*(f"fr3_joint{i}" for i in range(1, 8)), "fr3_finger_joint1",
                                   "fr3_finger_joint2"], position=[0.0] * 7 + [0.04, 0.04])
        js.header.stamp = stamp
        self.joint_pub.publish(js)
        wrench = self.WrenchStamped()
        wrench.header.stamp, wrench.header.frame_id = stamp, "base"
        self.wrench_pub.publish(wrench)
        self.pose_pub.publish(self.pose_msg(self.position, self.rotation, "base", stamp))


STALL_MS = 2.0  # a wake-up this late is a stall of the host (the actor's cycle needs ~2 ms of a 10-ms period)


def _steal_ticks() -> list[int]:
    """Steal time per CPU so far (USER_HZ ticks, /proc/stat): time the hypervisor did not run that vCPU."""
    lines = Path("/proc/stat").read_text().splitlines()
    return [int(f[8]) for f in (line.split() for line in lines[1:]) if f[0][3:].isdigit() and len(f) > 8]


def run_timer(hz: float, seconds: float, rt_priority: int, out: Path | None, wait_for_signal: bool = False) -> dict:
    """The actor's tick schedule with no work: wake-up lateness and missed ticks; each host event with its wall
    time: a stall (this loop woke > ``STALL_MS`` late) or steal time on a vCPU (10-ms resolution).
    ``wait_for_signal``: start counting at SIGUSR1 (the soak's measurement window), sleeping until then."""
    stop, go = threading.Event(), threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: (stop.set(), go.set()))
    signal.signal(signal.SIGUSR1, lambda *_: go.set())
    if rt_priority:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(rt_priority))
    if wait_for_signal:
        while not go.wait(0.1):
            pass
    period, tick_ms = 1.0 / hz, 1e3 / os.sysconf("SC_CLK_TCK")
    late_ms: list[float] = []
    events: list[dict] = []
    steal = _steal_ticks()
    missed = stalls = 0
    end = time.monotonic() + seconds
    next_tick = time.monotonic()
    while not stop.is_set() and time.monotonic() < end:
        next_tick += period
        now = time.monotonic()
        if now > next_tick:  # as RosArmEnv counts: woke more than a period late
            missed += 1
            next_tick = now
        else:
            time.sleep(next_tick - now)
        late = (time.monotonic() - next_tick) * 1e3
        late_ms.append(late)
        if late > STALL_MS:
            stalls += 1
            events.append({"kind": "stall", "time": round(time.time(), 4), "ms": round(late, 3)})
        steal, before = _steal_ticks(), steal
        events += [{"kind": "steal", "time": round(time.time(), 4), "cpu": cpu, "ms": (b - a) * tick_ms}
                   for cpu, (a, b) in enumerate(zip(before, steal)) if b > a]
    lateness, ticks = np.asarray(late_ms), len(late_ms)
    result = {"hz": hz, "ticks": ticks, "missed": missed, "stalls": stalls, "events": events[-2000:],
              "steal_ms": sum(e["ms"] for e in events if e["kind"] == "steal"),
              "late_ms_p50": float(np.percentile(lateness, 50)) if ticks else None,
              "late_ms_p99": float(np.percentile(lateness, 99)) if ticks else None,
              "late_ms_max": float(lateness.max()) if ticks else None}
    if out is not None:
        out.write_text(json.dumps(result))
    return result


def _timer_summary(r: dict) -> str:
    if not r["ticks"]:
        return "no ticks"
    return (f"{r['missed']} missed of {r['ticks']} ticks, {r['stalls']} wake-ups > {STALL_MS:g} ms late "
            f"(lateness p50 {r['late_ms_p50']:.2f} / p99 {r['late_ms_p99']:.2f} / max {r['late_ms_max']:.1f} ms); "
            f"host steal time {r['steal_ms']:.0f} ms")


def _host_events_near(incident: dict, events: list[dict], period_s: float) -> list[dict]:
    """The events (the peer's, the driver's) within the periods before the actor noticed its miss (and one
    after)."""
    window = incident["ms"] / 1e3 + 2 * period_s
    return [e for e in events if incident["time"] - window <= e["time"] <= incident["time"] + period_s]


def _arm_config(directory: Path, hz: float) -> str:
    import yaml

    data = yaml.safe_load((REPO / "hardware_configs/arms/sim_panda.yaml").read_text())
    arm = data["arm"]
    arm.update(control_hz=hz, reset_services=[], gripper={"backend": "none"})
    arm["command"]["publish_hz"] = max(50.0, 4 * hz)
    arm["safety"]["max_step_m"] = min(0.02, 0.2 / hz)  # same TCP speed at every rate
    path = directory / f"bench_{int(hz)}hz.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def run_loop(args: argparse.Namespace, seconds: float, soak: bool = False) -> dict:
    """Driver here, bridge + actor as processes, for ``seconds``; returns the figures."""
    from sensor_msgs.msg import JointState

    from robot_rl.envs import names
    from robot_rl.ros.messages import from_stamp
    from robot_rl.ros.qos import EVENTS
    from robot_rl.ros.runtime import settle_heap

    tmp = Path(tempfile.mkdtemp(prefix="ros_latency_"))
    cfg = _arm_config(tmp, args.hz)
    peer_path = tmp / "timer_peer.json"
    peer = None  # the soak's peer: the same schedule with nothing in it, at the same priority; started first
    if soak:  # (a child forked later would inherit SCHED_FIFO for its start-up), counting from SIGUSR1
        peer = subprocess.Popen([sys.executable, __file__, "timer", "--hz", str(args.hz), "--seconds", "inf",
                                 "--rt-priority", str(args.rt_priority), "--out", str(peer_path),
                                 "--wait-for-signal"], stdout=subprocess.DEVNULL)
    if args.rt_priority:  # this process is the driver stack: real drivers run SCHED_FIFO too
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(args.rt_priority))
    node, spinner, context = _node(args.domain, "bench_driver")
    driver = Driver(node, args.driver_hz)
    settle_heap()  # as our nodes do (the C++ driver stack this stands for has no collector)
    echoes: list[tuple[float, float]] = []  # (obs stamp, command stamp)

    def on_echo(msg) -> None:
        e = dict(zip(msg.name, msg.position))
        if e.get("command_stamp", names.NO_COMMAND) != names.NO_COMMAND:
            echoes.append((from_stamp(msg.header.stamp), e["command_stamp"]))

    node.create_subscription(JointState, names.EXECUTED_ACTION, on_echo, EVENTS)
    stats_path = tmp / "actor_stats.json"
    rt = args.rt_priority
    bridge = start_node("robot_bridge", args.domain, tmp, rt_priority=rt, hardware_config=cfg, state_hz=1000.0)
    actor = start_node("policy_actor", args.domain, tmp, rt_priority=rt, **{
        "env.hardware_config": cfg, "env.reward": False, "env.max_episode_steps": 1_000_000,
        "actor.policy": "network", "actor.stats_path": str(stats_path)})
    procs = [bridge, actor] + ([peer] if peer else [])
    rss: dict[str, list[tuple[float, float]]] = {"robot_bridge": [], "policy_actor": []}
    try:
        deadline = time.monotonic() + 60
        while not echoes and time.monotonic() < deadline:
            time.sleep(0.1)
        if not echoes:
            raise RuntimeError(f"no control loop within 60 s; logs in {tmp}")
        time.sleep(2.0)  # warm-up
        echoes.clear()
        driver.gaps.clear()
        if peer is not None:
            peer.send_signal(signal.SIGUSR1)
        start = time.monotonic()
        next_sample = start
        while time.monotonic() - start < seconds:
            if time.monotonic() >= next_sample:
                for key, proc in (("robot_bridge", bridge), ("policy_actor", actor)):
                    rss[key].append((time.monotonic() - start, _rss_mb(proc.pid)))
                next_sample += 10.0
                if soak:
                    elapsed = time.monotonic() - start
                    print(f"  {elapsed / 60:5.1f} min: bridge {rss['robot_bridge'][-1][1]:.1f} MB, "
                          f"actor {rss['policy_actor'][-1][1]:.1f} MB, {len(echoes)} steps", flush=True)
            time.sleep(0.2)
        window = list(echoes)
    finally:
        stop_nodes(procs[::-1])  # the actor first: a bridge stopped under it would end its last step stale
        spinner.stop()
        node.destroy_node()
        import rclpy

        rclpy.try_shutdown(context=context)
    actor_stats = json.loads(stats_path.read_text()) if stats_path.exists() else {}
    peer_stats = json.loads(peer_path.read_text()) if peer_path.exists() else None
    to_bridge = [(c - o) * 1e3 for o, c in window]
    total = [(driver.arrivals[round(c, 6)] - o) * 1e3 for o, c in window if round(c, 6) in driver.arrivals]
    expected = seconds * args.hz
    # As the arm sees it: a command that came more than 1.5 periods after the previous one is a missed cycle.
    gaps = np.diff(np.sort([c for _, c in window]))
    late = int(np.sum(gaps > 1.5 / args.hz))
    return {"hz": args.hz, "steps": len(window), "expected_steps": expected, "late_commands": late,
            "missed_cycles": actor_stats.get("missed_cycles"), "actor_steps": actor_stats.get("steps"),
            "stale_steps": actor_stats.get("stale_steps"), "incidents": actor_stats.get("incidents", []),
            "late_observations": actor_stats.get("late_observations"),
            "actor_alive": actor.returncode in (None, 0, -15),
            "policy_ms_p50": actor_stats.get("policy_ms_p50"), "to_bridge_ms": to_bridge, "total_ms": total,
            "rss": rss, "logs": str(tmp), "peer": peer_stats, "driver_gaps": list(driver.gaps)}


def cmd_latency(args: argparse.Namespace) -> None:
    r = run_loop(args, args.seconds)
    print(f"control loop at {args.hz:g} Hz, driver at {args.driver_hz:g} Hz, {args.seconds:g} s "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
    print(f"  observation -> command received by the driver: {_percentiles(r['total_ms'])}")
    print(f"  observation -> command sent by the bridge:     {_percentiles(r['to_bridge_ms'])}")
    print(f"  steps {r['steps']} of {r['expected_steps']:.0f} expected, {r['late_commands']} commands > 1.5 periods "
          f"after the previous one; missed cycles (actor, whole run) {r['missed_cycles']} of {r['actor_steps']}; "
          f"policy forward p50 {r['policy_ms_p50']:.2f} ms")
    _print_incidents(r)
    _save("latency", args, r)


def _print_incidents(r: dict) -> None:
    """The actor's missed cycles and stale steps: when (step of the run, of its episode), by how much, and
    where a missed period went (`StepStats.incidents` in robot_rl/ros/env.py)."""
    for i in r["incidents"][-10:]:
        cycle = ", ".join(f"{k} {v:.1f}" for k, v in i.get("cycle", {}).items())
        print(f"  actor {i['kind']} at step {i['step']} of {r['actor_steps']} (episode step {i['episode_step']}): "
              f"{i['ms']:.1f} ms" + (f"; the period (ms): {cycle}" if cycle else ""))


def _print_peer(r: dict, period_s: float) -> None:
    peer = r["peer"]
    if peer is None:
        print("  timer peer: no result (it did not stop cleanly)")
        return
    print(f"  timer peer (same schedule, no work): {_timer_summary(peer)}")
    gaps = r["driver_gaps"]
    print(f"  driver (this process): {len(gaps)} publishing gaps > 2 periods, max "
          f"{max((g['ms'] for g in gaps), default=0):.1f} ms")
    misses = [i for i in r["incidents"] if i["kind"] == "missed" and "time" in i]
    near = [_host_events_near(i, peer["events"] + gaps, period_s) for i in misses]
    if misses:
        print(f"  of the actor's last {len(misses)} missed cycles, {sum(map(bool, near))} came with a host event "
              "or a driver gap:")
    for incident, events in zip(misses[-10:], near[-10:]):
        what = ", ".join(f"{e['kind']} {e['ms']:.0f} ms" + (f" on cpu{e['cpu']}" if "cpu" in e else "")
                         for e in events) or "none"
        print(f"    step {incident['step']}: {what}")


def cmd_soak(args: argparse.Namespace) -> None:
    args.seconds = args.minutes * 60
    r = run_loop(args, args.seconds, soak=True)
    print(f"soak: {args.minutes:g} min at {args.hz:g} Hz, {r['steps']} steps of {r['expected_steps']:.0f}, "
          f"{r['late_commands']} commands > 1.5 periods after the previous one; actor (whole run, start-up "
          f"included): missed cycles {r['missed_cycles']}, stale-observation steps {r['stale_steps']}, late "
          f"observations {r['late_observations']} "
          f"(load average {os.getloadavg()[0]:.1f})")
    print(f"  observation -> command received by the driver: {_percentiles(r['total_ms'])}")
    _print_incidents(r)
    _print_peer(r, 1.0 / args.hz)
    if not r["actor_alive"]:
        print(f"  the actor exited before the end: see {r['logs']}/policy_actor.log")
    for key, samples in r["rss"].items():
        samples = [x for x in samples if np.isfinite(x[1])]
        if len(samples) >= 4:  # growth over the second half: bounded windows (the actor's stats) fill first
            (_, m0), (th, mh), (t1, m1) = samples[0], samples[len(samples) // 2], samples[-1]
            rate = (m1 - mh) / max(t1 - th, 1e-9) * 3600
            print(f"  {key} RSS {m0:.1f} -> {mh:.1f} -> {m1:.1f} MB at 0 / {th / 60:.1f} / {t1 / 60:.1f} min "
                  f"(second half {rate:+.1f} MB/h)")
    _save("soak", args, r)


def cmd_timer(args: argparse.Namespace) -> None:
    r = run_timer(args.hz, args.seconds, args.rt_priority, args.out, args.wait_for_signal)
    print(f"timer at {args.hz:g} Hz: {_timer_summary(r)}")


def cmd_cameras(args: argparse.Namespace) -> None:
    from rclpy.qos import QoSProfile
    from sensor_msgs.msg import Image

    from robot_rl.ros.messages import from_stamp, image_msg
    from robot_rl.ros.qos import SENSOR

    tmp = Path(tempfile.mkdtemp(prefix="ros_cameras_"))
    node, spinner, context = _node(args.domain, "bench_cameras")
    cams = ("front", "wrist")
    pubs = {c: node.create_publisher(Image, f"/bench/camera/{c}/color/image_raw", QoSProfile(depth=10))
            for c in cams}
    got: dict[str, list[float]] = {c: [] for c in cams}
    for c in cams:
        def on_image(m, c=c) -> None:
            got[c].append((time.time() - from_stamp(m.header.stamp)) * 1e3)

        node.create_subscription(Image, f"/bench/rl/images/{c}", on_image, SENSOR)
    procs = [start_node("camera_bridge", args.domain, tmp, name=f"camera_bridge_{c}", camera_config=f"sim_{c}")
             for c in cams]
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (args.size, args.size, 3), dtype=np.uint8) for _ in range(4)]
    try:
        def send(i: int) -> None:
            stamp = node.get_clock().now().to_msg()
            for c in cams:
                pubs[c].publish(image_msg(frames[i % 4], stamp, f"{c}_optical_frame"))

        deadline = time.monotonic() + 60
        while not all(got.values()) and time.monotonic() < deadline:
            send(0)
            time.sleep(1 / 30)
        time.sleep(0.5)
        for c in cams:
            got[c].clear()
        n = int(args.seconds * 30)
        next_t = time.monotonic()
        for i in range(n):
            send(i)
            next_t = max(next_t + 1 / 30, time.monotonic())  # a camera does not burst after a stall
            time.sleep(max(0.0, next_t - time.monotonic()))
        time.sleep(1.0)
    finally:
        stop_nodes(procs)
        spinner.stop()
        node.destroy_node()
        import rclpy

        rclpy.try_shutdown(context=context)
    print(f"two {args.size}x{args.size} rgb8 cameras at 30 Hz through camera_bridge, {args.seconds:g} s "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs):")
    for c in cams:
        dropped = n - len(got[c])
        print(f"  {c}: {len(got[c])}/{n} frames out ({dropped} dropped), latency {_percentiles(got[c])}")
    _save("cameras", args, {"frames_in": n, **{f"{c}_frames_out": len(got[c]) for c in cams},
                            **{f"{c}_latency_ms": got[c] for c in cams}})


def main() -> None:
    fmt = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=fmt)
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("latency", "soak", "cameras", "timer"):
        p = sub.add_parser(name)
        p.add_argument("--domain", type=int, default=int(os.environ.get("ROS_DOMAIN_ID", "57")))
        if name in ("latency", "soak", "timer"):
            p.add_argument("--hz", type=float, default=10.0)
            p.add_argument("--rt-priority", type=int, default=0,
                           help="SCHED_FIFO priority (1-99; 0: normal) of driver, bridge, actor and timer peer")
        if name in ("latency", "soak"):
            p.add_argument("--driver-hz", type=float, default=250.0)
        if name in ("latency", "timer"):
            p.add_argument("--seconds", type=float, default=30.0)
        if name == "timer":
            p.add_argument("--out", type=Path, default=None)
            p.add_argument("--wait-for-signal", action="store_true", help="start counting at SIGUSR1")
        if name == "soak":
            p.add_argument("--minutes", type=float, default=10.0)
        if name == "cameras":
            p.add_argument("--seconds", type=float, default=20.0)
            p.add_argument("--size", type=int, default=128)
    args = parser.parse_args()
    {"latency": cmd_latency, "soak": cmd_soak, "cameras": cmd_cameras, "timer": cmd_timer}[args.cmd](args)


if __name__ == "__main__":
    main()
