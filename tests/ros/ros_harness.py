"""Real-process ROS 2 test harness: isolated domains, node processes from the shared specs, a probe node.

- Each test (or module fixture) locks its own ROS_DOMAIN_ID (file locks under the temp dir, so pytest-xdist
  workers and other developers' runs on the same machine never share one), with
  ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``.
- Nodes start from ``robot_rl_ros.specs.SPECS`` (the launch files' definitions) as
  ``<exe> --ros-args --params-file f -r __ns:=/x -r __node:=n -p k:=v``; they stop with SIGTERM, then SIGKILL.
- ``Probe`` is the test's own rclpy node in its own context on that domain, spun in a background thread.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import rclpy
from rclpy.client import Client
from rclpy.context import Context
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.subscription import Subscription

REPO = Path(__file__).resolve().parents[2]
PACKAGE_SRC = REPO / "ros2_ws" / "src" / "robot_rl_ros"
if str(PACKAGE_SRC) not in sys.path:  # specs are pure Python: import them from the checkout if not installed
    sys.path.append(str(PACKAGE_SRC))

from robot_rl_ros.specs import ENVIRONMENT, SPECS, share_dir  # noqa: E402

LOCK_DIR = Path(tempfile.gettempdir()) / "robot_rl_ros_domains"
DOMAINS = range(1, 101)


@contextmanager
def ros_domain(key: str) -> Iterator[int]:
    """Lock a free ROS domain id; the search starts at a hash of the worker and ``key``."""
    LOCK_DIR.mkdir(exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    start = zlib.crc32(f"{worker}/{key}".encode()) % len(DOMAINS)
    for i in range(len(DOMAINS)):
        domain = DOMAINS[(start + i) % len(DOMAINS)]
        handle = open(LOCK_DIR / f"{domain}.lock", "w")  # noqa: SIM115 - held for the whole block
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            continue
        try:
            yield domain
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            handle.close()
        return
    raise RuntimeError("no free ROS domain id")


def process_env(domain: int) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ENVIRONMENT)
    env.update(ROS_DOMAIN_ID=str(domain), ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST", PYTHONUNBUFFERED="1",
               MUJOCO_GL=env.get("MUJOCO_GL", "egl"), RCUTILS_COLORIZED_OUTPUT="0",
               AMENT_PREFIX_PATH=os.pathsep.join(p for p in (sys.prefix, env.get("AMENT_PREFIX_PATH")) if p))
    return env


class Processes:
    """Node processes of one test; ``stop_all`` sends SIGTERM, then SIGKILL after ``grace_s``."""

    def __init__(self, domain: int, log_dir: Path) -> None:
        self.domain, self.log_dir = domain, log_dir
        self.procs: dict[str, subprocess.Popen] = {}

    def start(self, spec: str, name: str | None = None, namespace: str = "",
              **overrides: Any) -> subprocess.Popen:
        name = name or SPECS[spec].name
        argv = SPECS[spec].argv(share_dir(), namespace, name, overrides)
        log = open(self.log_dir / f"{namespace.strip('/').replace('/', '_')}_{name}.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(argv, env=process_env(self.domain), stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        self.procs[f"{namespace}/{name}"] = proc
        return proc

    def kill(self, key: str, sig: int = signal.SIGKILL) -> None:
        proc = self.procs[key]
        if proc.poll() is None:
            proc.send_signal(sig)
            proc.wait(timeout=10)

    def stop_all(self, grace_s: float = 5.0) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.log_dir.glob("*.log")))

    def assert_alive(self) -> None:
        dead = {k: p.returncode for k, p in self.procs.items() if p.poll() is not None}
        assert not dead, f"node processes exited: {dead}\n{self.logs()}"


class Probe:
    """The test's node: its own context on the test's domain, a SingleThreadedExecutor in a thread."""

    def __init__(self, domain: int, namespace: str = "") -> None:
        self.context = Context()
        rclpy.init(context=self.context, domain_id=domain)
        self.node = Node("test_probe", namespace=namespace or "/", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self._closing = False
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        """Spin until closed. A callback that raises ends the spin (and with it every subscription, timer and
        service reply of the test's node): keep the error so that the next call, and the session's teardown,
        report it instead of timing out without a cause."""
        try:
            self.executor.spin()
        except ExternalShutdownException:
            pass
        except Exception as err:
            if not self._closing:  # errors while closing are shutdown races
                self.error = err

    def check(self) -> None:
        """Raise if the probe's executor died on a callback error."""
        if self.error is not None:
            raise AssertionError(f"the test probe's executor died: {type(self.error).__name__}: {self.error}") \
                from self.error

    def collect(
        self, msg_type: type, topic: str, qos: Any, wait_matched_s: float = 0.0
    ) -> list[tuple[float, Any]]:
        """Every message on ``topic`` as (monotonic arrival time, message), appended as they arrive.
        ``wait_matched_s`` > 0: first wait that long for a publisher to match, for topics that carry a
        message only on change (a volatile message sent before the match is lost)."""
        out: list[tuple[float, Any]] = []
        sub = self.node.create_subscription(msg_type, topic, lambda m: out.append((time.monotonic(), m)), qos)
        if wait_matched_s > 0:
            wait_for(lambda: sub.get_publisher_count() > 0, wait_matched_s, f"a publisher on {topic}")
        return out

    def call(self, srv_type: type, name: str, timeout_s: float = 10.0, request: Any = None) -> Any:
        self.check()
        client = self.node.create_client(srv_type, name)
        try:
            assert client.wait_for_service(timeout_sec=timeout_s), f"service {name} not available"
            try:
                return client.call(request if request is not None else srv_type.Request(), timeout_sec=timeout_s)
            except TimeoutError:
                self.check()  # a reply the dead executor never took in
                raise AssertionError(f"service {name}: no reply within {timeout_s} s") from None
        finally:
            self.destroy(client)

    def destroy(self, entity: Any) -> None:
        """Destroy a publisher, subscription or client of the test's node on the executor's own thread:
        destroyed from another thread while the executor builds its wait set, the entity's handle is
        invalid there and the executor dies."""
        kinds = {Publisher: self.node.destroy_publisher, Subscription: self.node.destroy_subscription,
                 Client: self.node.destroy_client}
        destroy = next(fn for kind, fn in kinds.items() if isinstance(entity, kind))
        done = self.executor.create_task(destroy, entity)
        wait_for(lambda: done.done() or self.error is not None, 5.0, f"the executor to destroy {entity!r}")
        self.check()

    def close(self) -> None:
        self._closing = True
        self.executor.shutdown(timeout_sec=1.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
        self.thread.join(timeout=2.0)


def wait_for(cond: Callable[[], Any], timeout_s: float, what: str, procs: Processes | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.01)
    if procs is not None:
        procs.assert_alive()
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}" +
                         (f"\n{procs.logs()}" if procs is not None else ""))


FINGERS = ("fr3_finger_joint1", "fr3_finger_joint2")
FOLLOW_SPEED_M_S, FOLLOW_SPEED_RAD_S = 0.5, 2.0
"""How fast ``FakeDriver`` follows its targets: well inside the bridge's measured-speed plausibility limits."""


class FakeDriver:
    """A driver stack on the probe node: publishes ``current_pose``, ``joint_states`` (reliable, like
    joint_state_broadcaster; ``joints`` and the sim arm's finger joints) and a zero ``wrench`` at ``rate_hz``
    under ``namespace``; the pose can be set or made to follow the pose targets it receives (a controller
    with bounded speed). ``frame_id`` is the pose's frame; ``with_wrench = False`` stops the wrench."""

    def __init__(self, probe: Probe, namespace: str, rate_hz: float = 100.0, joints: tuple[str, ...] = (),
                 follow: bool = False) -> None:
        import numpy as np
        from geometry_msgs.msg import PoseStamped, WrenchStamped
        from sensor_msgs.msg import JointState

        from robot_rl.envs.geometry import matrix_to_rotvec, rotvec_to_matrix
        from robot_rl.ros.messages import pose_from_msg, pose_msg

        self.to_rotvec, self.from_rotvec = matrix_to_rotvec, rotvec_to_matrix
        self.np, self.pose_msg, self.JointState, self.WrenchStamped = np, pose_msg, JointState, WrenchStamped
        node = probe.node
        self.node, self.ns = node, namespace.rstrip("/")
        self.target: tuple | None = None
        self._lock = threading.Lock()  # the test's thread places the arm while the executor's thread moves it
        self._position = np.array([0.5, 0.0, 0.3])
        self.rotation = np.diag([1.0, -1.0, -1.0])
        self.joints = joints
        self.q = np.zeros(len(joints))
        self.publishing = True
        self.frame_id = "base"
        self.with_wrench = True
        self.pose_pub = node.create_publisher(PoseStamped, f"{self.ns}/current_pose", 10)
        self.joint_pub = node.create_publisher(JointState, f"{self.ns}/joint_states", 10)
        self.wrench_pub = node.create_publisher(WrenchStamped, f"{self.ns}/wrench", 10)
        if follow:
            def on_target(msg: PoseStamped) -> None:
                pose = pose_from_msg(msg)
                if pose is not None:
                    self.target = pose
            node.create_subscription(PoseStamped, f"{self.ns}/target_pose", on_target, 10)
        self.period_s = 1.0 / rate_hz
        self._last_publish_s: float | None = None
        node.create_timer(self.period_s, self.publish)

    @property
    def position(self):
        return self._position

    @position.setter
    def position(self, value) -> None:
        """Placing the arm by hand (a test's reset, a garbage reading) ends the pursuit of the last target."""
        with self._lock:
            self._position, self.target = value, None

    def _track_target(self) -> None:
        """Move toward the last target at a real controller's bounded speed: an arm never teleports, and a
        teleport at the bridge's step cap reads as an implausible TCP jump once DDS delivery jitters."""
        now = time.monotonic()
        dt = self.period_s if self._last_publish_s is None else min(now - self._last_publish_s, 2 * self.period_s)
        self._last_publish_s = now
        if self.target is None:
            return
        np = self.np
        to_go = self.target[0] - self._position
        dist = float(np.linalg.norm(to_go))
        self._position = self.target[0] if not dist > FOLLOW_SPEED_M_S * dt else \
            self._position + to_go * (FOLLOW_SPEED_M_S * dt / dist)  # (a NaN position jumps to the target)
        turn = self.to_rotvec(self.rotation.T @ self.target[1])
        angle = float(np.linalg.norm(turn))
        step = turn if angle <= FOLLOW_SPEED_RAD_S * dt else turn * (FOLLOW_SPEED_RAD_S * dt / angle)
        self.rotation = self.rotation @ self.from_rotvec(step)

    def publish(self) -> None:
        with self._lock:
            self._track_target()
        if not self.publishing:
            return
        stamp = self.node.get_clock().now().to_msg()
        js = self.JointState(name=[*self.joints, *FINGERS], position=[*(float(v) for v in self.q), 0.04, 0.04])
        js.header.stamp = stamp
        self.joint_pub.publish(js)
        if self.with_wrench:
            wrench = self.WrenchStamped()
            wrench.header.stamp, wrench.header.frame_id = stamp, "base"
            self.wrench_pub.publish(wrench)
        self.pose_pub.publish(self.pose_msg(self.position, self.rotation, self.frame_id, stamp))
