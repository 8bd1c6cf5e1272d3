"""Ctrl-C and SIGTERM as a clean stop for long-running processes (nodes, training, actors).

The first SIGINT or SIGTERM only asks: loops check ``requested`` at their next safe point (between control
steps, at an episode boundary) and wind down (hold the arm, flush the learner link, write a checkpoint). A
second signal interrupts at once (``KeyboardInterrupt``). ``ros2 launch`` sends SIGINT, then SIGTERM after a
grace period, so a process that stops within it exits cleanly with status 0.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable


class StopRequested(Exception):
    """Raised out of a wait that a stop request ended (the caller abandons what it waited for)."""


class GracefulStop:
    def __init__(self, on_request: Callable[[], None] | None = None) -> None:
        """``on_request``: also called at the first request (e.g. a learner's ``stop``)."""
        self.signal_name: str | None = None
        self._event = threading.Event()
        self._on_request = on_request
        self._previous: dict[int, object] = {}

    def install(self) -> GracefulStop:
        """Handle SIGINT and SIGTERM in this (main) thread from now on."""
        self._previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __enter__(self) -> GracefulStop:
        return self.install()

    def __exit__(self, *_: object) -> None:
        """Give the signals back to the handlers they had before (a command run inside a larger program)."""
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def request(self, why: str) -> None:
        first = not self._event.is_set()
        if self.signal_name is None:
            self.signal_name = why
        self._event.set()
        if first and self._on_request is not None:
            self._on_request()

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    @property
    def event(self) -> threading.Event:
        return self._event

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``; True as soon as a stop is requested."""
        return self._event.wait(timeout_s)

    def check(self) -> None:
        """Raise ``StopRequested`` if a stop was requested (for waits that poll)."""
        if self._event.is_set():
            raise StopRequested(self.signal_name or "stop requested")

    def _handle(self, signum: int, _frame: object) -> None:
        if self._event.is_set():  # the second signal: stop now
            raise KeyboardInterrupt
        self.request(signal.Signals(signum).name)

