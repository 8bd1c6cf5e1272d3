"""The safety filter's state machine, transition by transition: every row of ``TRANSITIONS`` is driven from
each of its start states and must land in its end state (the table is what docs/hardware.md shows)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from test_filter import DOWN, HOME, LIMITS, PERIOD

from robot_rl.safety import SafetyFilter
from robot_rl.safety.filter import STATES, TRANSITIONS

ACTION = np.zeros(7)


class Rig:
    """A pose filter with its own clock; ``read`` delivers a TCP reading at HOME."""

    def __init__(self) -> None:
        self.f = SafetyFilter(LIMITS)
        self.t = 0.0
        self.read()
        self.read()

    def advance(self, dt: float = 0.01) -> None:
        self.t += dt

    def read(self) -> None:
        self.advance()
        self.f.observe(HOME, DOWN, self.t)

    def act(self, action: np.ndarray = ACTION) -> str:
        self.read()
        return self.f.on_action(action, self.t).state

    def tick(self) -> str:
        return self.f.tick(self.t).state


def enter(state: str) -> Rig:
    rig = Rig()
    if state == "inactive":
        pass
    elif state == "active":
        rig.act()
    elif state == "holding":
        rig.act()
        rig.advance(2 * PERIOD)
        rig.f.observe(HOME, DOWN, rig.t)
        rig.tick()
    elif state == "faulted":
        rig.act()
        rig.f.set_fault("driver", "program stopped")
        rig.tick()
    elif state == "estopped":
        rig.act()
        rig.f.set_estop_input(True)
        rig.tick()
    assert rig.f.state == state, f"could not enter {state}"
    return rig


def _stale_action(rig: Rig) -> str:
    for _ in range(int(2 / 0.01 * PERIOD)):
        rig.read()
    return rig.tick()


def _stale_reading(rig: Rig) -> str:
    rig.advance(2 * PERIOD)
    return rig.tick()


def _clear_faults(rig: Rig) -> str:
    rig.f.set_fault("driver", None)
    assert rig.f.clear_faults()[0]
    return rig.tick()


def _clear_faults_refused(rig: Rig) -> str:
    assert not rig.f.clear_faults()[0]
    return rig.tick()


def _clear_estop(rig: Rig) -> str:
    rig.f.set_estop_input(False)
    assert rig.f.clear_estop()[0]
    return rig.tick()


def _clear_estop_refused(rig: Rig) -> str:
    assert not rig.f.clear_estop()[0]
    return rig.tick()


def _then_tick(change: Callable[[SafetyFilter], object]) -> Callable[[Rig], str]:
    def run(rig: Rig) -> str:
        change(rig.f)
        return rig.tick()
    return run


EVENTS: dict[str, Callable[[Rig], str]] = {
    "valid action, fresh reading": lambda rig: rig.act(),
    "no action for stale_periods": _stale_action,
    "no TCP reading for stale_periods": _stale_reading,
    "NaN / malformed action": lambda rig: rig.act(np.full(7, np.nan)),
    "required input missing or stale": _then_tick(lambda f: f.set_input_problem("wrench: silent")),
    "disable": _then_tick(lambda f: f.disable()),
    "enable": _then_tick(lambda f: f.enable()),
    "fault raised": _then_tick(lambda f: f.set_fault("driver", "program stopped")),
    "clear_faults (no condition left)": _clear_faults,
    "clear_faults while a condition persists": _clear_faults_refused,
    "e-stop asserted": _then_tick(lambda f: f.set_estop_input(True)),
    "e-stop released": _then_tick(lambda f: f.set_estop_input(False)),
    "clear_estop (input released)": _clear_estop,
    "clear_estop while asserted": _clear_estop_refused,
}
CASES = [(start, event, end) for starts, event, end in TRANSITIONS for start in starts.split()]


@pytest.mark.parametrize(("start", "event", "end"), CASES, ids=[f"{s}--{e}" for s, e, _ in CASES])
def test_transition(start: str, event: str, end: str) -> None:
    rig = enter(start)
    assert EVENTS[event](rig) == end


def test_the_table_covers_every_state_and_is_documented() -> None:
    assert {s for starts, _, _ in TRANSITIONS for s in starts.split()} == set(STATES)
    assert set(EVENTS) == {event for _, event, _ in TRANSITIONS}
    doc = (Path(__file__).resolve().parents[2] / "docs" / "hardware.md").read_text()
    for starts, event, end in TRANSITIONS:
        assert f"| {starts} | {event} | {end} |" in doc, f"docs/hardware.md lacks the row {starts} / {event}"


def test_commands_by_state() -> None:
    """What each state publishes: pose backends hold a target in holding/estopped, nothing otherwise."""
    for state, publishes in (("inactive", False), ("active", True), ("holding", True), ("faulted", False),
                             ("estopped", True)):
        rig = enter(state)
        assert rig.f.tick(rig.t).has_command == publishes, state
