"""Process plumbing shared by our node entry points: init, parameters as a typed dataclass, spinning.

Executors: our callbacks are all short (the robot bridge's reset is a coroutine that awaits instead of
blocking), so one executor thread per node is enough. rclpy's Python executors rebuild their wait set on
every wake-up, which costs more than our callbacks: with the robot bridge fed 500 driver messages/s, half
its CPU went there. So nodes run rclpy's C++ ``EventsExecutor`` (``rclpy.experimental``: recent Jazzy and
Kilted; tested with Kilted) where it exists and fall back to the ``SingleThreadedExecutor``;
``ROBOT_RL_EXECUTOR=single`` forces the fallback; the events executor cuts the 100 Hz observation -> command
p99 by about a third (docs/benchmarks.md). Both are driven by a ``spin_once`` loop: ``EventsExecutor.spin()``
does not return on shutdown. The MultiThreadedExecutor is avoided: on a 2-core machine it costs most of a core
in scheduling and drops a large share of the bridge's states.
Callback groups stay explicit so a node can move to a multi-threaded executor if it ever needs a blocking
callback.

SIGINT (Ctrl-C, and what ``ros2 launch`` sends first) and SIGTERM are a clean stop (``STOP``, not rclpy's
handlers, which shut the context down under running callbacks and re-raise ``KeyboardInterrupt``): the spin
loop ends, the node does its last safe act (the bridge holds or zeroes the arm, the actor abandons its step and
flushes the learner link), logs one line and exits 0.

Before a node starts spinning, ``settle_heap`` freezes what start-up allocated, so that Python's garbage
collector never again walks it in the middle of a control period.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import os
import threading
import typing
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import rclpy
from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException
from rclpy.executors import Executor, ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from robot_rl.utils.shutdown import GracefulStop

T = TypeVar("T")
EXECUTOR_ENV = "ROBOT_RL_EXECUTOR"
EXECUTORS = ("events", "single")


def declare_dataclass(node: Node, cls: type[T], prefix: str = "") -> T:
    """Declare one ROS parameter per field of ``cls`` (defaults from the dataclass) and build ``cls``.

    Tuple fields are declared as arrays; an empty tuple default needs a typed array, so it is declared as a
    string array. Validation errors name the node and the parameter.
    """
    values: dict[str, Any] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        if default is None:
            default = ""
        if isinstance(default, tuple):
            default = list(default) if default else [""]
        try:
            value = node.declare_parameter(prefix + f.name, default).value
        except (InvalidParameterTypeException, InvalidParameterValueException) as err:
            raise SystemExit(f"{node.get_fully_qualified_name()}: parameter {prefix + f.name}: {err}") from None
        if typing.get_origin(hints[f.name]) is tuple:
            value = tuple(v for v in value if v != "")
        elif value == "" and f.default is None:
            value = None
        if typing.get_origin(hints[f.name]) is typing.Literal and value not in typing.get_args(hints[f.name]):
            raise SystemExit(f"{node.get_fully_qualified_name()}: parameter {prefix + f.name} = {value!r}: "
                             f"expected one of {list(typing.get_args(hints[f.name]))}")
        values[f.name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise SystemExit(f"{node.get_fully_qualified_name()}: bad parameters: {err}") from None


USER_ERRORS = (ValueError, FileNotFoundError, ImportError)
"""What a user's setting causes at start-up (a bad config, a missing file, a missing ROS package)."""


@contextlib.contextmanager
def startup_errors(node: Node) -> Iterator[None]:
    """Around a node's set-up: a user error ends the process with one line naming the node and the cause
    (exit status 1), not a traceback."""
    try:
        yield
    except USER_ERRORS as err:
        name = node.get_fully_qualified_name()
        node.destroy_node()
        rclpy.try_shutdown(context=node.context)
        raise SystemExit(f"{name}: {err}") from None


def make_executor(node: Node) -> Executor:
    """The executor for ``node``: events (default, where rclpy has it) or single-threaded."""
    choice = os.environ.get(EXECUTOR_ENV, "events")
    if choice not in EXECUTORS:
        raise ValueError(f"{EXECUTOR_ENV}={choice!r} (environment): expected one of {EXECUTORS}")
    executor: Executor | None = None
    if choice == "events":
        try:
            from rclpy.experimental import EventsExecutor
        except ImportError:  # an rclpy without it (Humble)
            pass
        else:
            executor = EventsExecutor(context=node.context)
    executor = executor or SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    return executor


def spin_until_shutdown(executor: Executor, node: Node, stop: threading.Event | None = None) -> None:
    """Run callbacks until ``node``'s context shuts down (``rclpy.shutdown``) or ``stop`` is set (checked every
    0.1 s)."""
    with contextlib.suppress(ExternalShutdownException):  # raised by a wait that the shutdown ended
        while node.context.ok() and not (stop is not None and stop.is_set()):
            executor.spin_once(timeout_sec=0.1)


def settle_heap() -> None:
    """Collect once, then move every live object to the collector's permanent generation (``gc.freeze``).

    A full (generation 2) collection walks every tracked object. Over the policy actor's start-up heap (torch,
    rclpy, the policy: ~180-300k objects) one took 80-100 ms on a quiet machine and ~200 ms under load, i.e.
    8-20 missed cycles at 100 Hz whenever enough surviving allocations trigger one; over a frozen heap it
    walks only what was allocated since (measured: under 0.01 ms)."""
    gc.collect()
    gc.freeze()


def spin(node: Node, on_stop: Callable[[], None] | None = None) -> None:
    """Spin ``node`` until SIGINT/SIGTERM (``STOP``) or shutdown; then ``on_stop`` (the node's last safe act,
    while it can still publish), one log line, and a clean teardown."""
    settle_heap()
    executor = make_executor(node)
    try:
        spin_until_shutdown(executor, node, STOP.event)
    except KeyboardInterrupt:  # a second signal while spinning: stop now
        pass
    finally:
        try:
            if on_stop is not None:
                on_stop()
        except Exception as err:  # the context may be gone already (an external shutdown)
            if node.context.ok():
                node.get_logger().warning(f"while stopping: {type(err).__name__}: {err}")
        finally:
            log_stopped(node)
            executor.shutdown(timeout_sec=1.0)
            node.destroy_node()
            rclpy.try_shutdown(context=node.context)


def log_stopped(node: Node) -> None:
    if node.context.ok():
        node.get_logger().info(f"stopped ({STOP.signal_name or 'shutdown'})")


class BackgroundSpinner:
    """The executor in a daemon thread, for processes whose main thread runs a loop (the actor)."""

    def __init__(self, node: Node) -> None:
        settle_heap()
        self.node = node
        self.executor = make_executor(node)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"spin-{node.get_name()}")
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(Exception):  # shutdown races end the thread
            spin_until_shutdown(self.executor, self.node, self._stop)

    def stop(self) -> None:
        """Leave the spin loop, then shut the executor down: shutting an EventsExecutor down (or destroying
        its node) while another thread is inside ``spin_once`` crashed the process (segfault, seen once)."""
        self._stop.set()
        self.thread.join(timeout=2.0)
        self.executor.shutdown(timeout_sec=1.0)


STOP = GracefulStop()
"""This process's stop request (SIGINT/SIGTERM), installed by ``init``."""


def init(argv: Sequence[str] | None) -> None:
    rclpy.init(args=list(argv) if argv is not None else None, signal_handler_options=SignalHandlerOptions.NO)
    STOP.install()
