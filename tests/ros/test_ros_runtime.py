"""Node process plumbing: executor choice and the spin loop that every node runs."""

from __future__ import annotations

import gc
import threading
import time

import pytest

rclpy = pytest.importorskip("rclpy")

from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from ros_harness import ros_domain  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from robot_rl.ros.runtime import (  # noqa: E402
    EXECUTOR_ENV,
    BackgroundSpinner,
    make_executor,
    settle_heap,
    spin_until_shutdown,
)


def test_unknown_executor_is_refused_with_its_source(monkeypatch) -> None:
    monkeypatch.setenv(EXECUTOR_ENV, "multi")
    with pytest.raises(ValueError, match=r"ROBOT_RL_EXECUTOR='multi' \(environment\)"):
        make_executor(None)  # refused before the node is touched


@pytest.mark.parametrize("choice", ["events", "single"])
def test_spin_loop_delivers_and_returns_on_shutdown(choice: str, monkeypatch) -> None:
    """Timers and subscriptions run, and the loop ends when the context shuts down (as SIGTERM does):
    ``EventsExecutor.spin()`` never returned there, which is why nodes spin with this loop."""
    monkeypatch.setenv(EXECUTOR_ENV, choice)
    with ros_domain(f"runtime_{choice}") as domain:
        context = Context()
        rclpy.init(context=context, domain_id=domain)
        node = Node("runtime_probe", context=context)
        executor = make_executor(node)
        if choice == "single":
            assert isinstance(executor, SingleThreadedExecutor)
        else:
            assert type(executor).__name__ == "EventsExecutor"
        got: list[str] = []
        node.create_subscription(String, "chatter", lambda m: got.append(m.data), 10)
        pub = node.create_publisher(String, "chatter", 10)
        node.create_timer(0.01, lambda: pub.publish(String(data="tick")))
        thread = threading.Thread(target=spin_until_shutdown, args=(executor, node), daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while len(got) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(got) >= 20, f"{choice}: only {len(got)} messages in 10 s"
        context.shutdown()
        thread.join(timeout=2.0)
        assert not thread.is_alive(), f"{choice}: the spin loop did not return after shutdown"
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()


def test_background_spinner_stops_while_its_context_is_still_up() -> None:
    """An actor stops its spinner before the node and context go (no SIGTERM needed): the loop is left before
    the executor is shut down, with a timer firing all along."""
    with ros_domain("runtime_spinner") as domain:
        context = Context()
        rclpy.init(context=context, domain_id=domain)
        node = Node("spinner_probe", context=context)
        ticks: list[float] = []
        node.create_timer(0.005, lambda: ticks.append(time.monotonic()))
        spinner = BackgroundSpinner(node)
        deadline = time.monotonic() + 10
        while len(ticks) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(ticks) >= 10, f"only {len(ticks)} timer callbacks in 10 s"
        spinner.stop()
        assert not spinner.thread.is_alive(), "the spin thread outlived stop()"
        assert context.ok(), "stop() must not need the context shut down"
        count = len(ticks)
        time.sleep(0.05)
        assert len(ticks) == count, "callbacks still ran after stop()"
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        gc.unfreeze()  # BackgroundSpinner froze this test process's heap


def test_settle_heap_leaves_a_full_collection_only_what_was_allocated_after() -> None:
    try:
        settle_heap()
        assert gc.get_freeze_count() > 10_000, "start-up objects (torch, rclpy) were not frozen"
        assert not any(gc.get_objects(generation=g) for g in (1, 2)), "objects left for the collector to walk"
    finally:
        gc.unfreeze()
