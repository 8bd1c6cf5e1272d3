"""``DropLog``: every input a node drops is counted by kind and logged without flooding the log.

The first drop of each kind *and shape* (the detail with its numbers masked) is logged at once, so a new kind of
error is never hidden behind an old one; repeats are logged at the 10th, 100th, 1000th... of their kind.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

_NUMBER = re.compile(r"[-+]?\d[\d.e+-]*")
MAX_SHAPES = 1000


class DropLog:
    def __init__(self, log: Callable[[str], None], kinds: Iterable[str]) -> None:
        self.log = log
        self.counts: dict[str, int] = dict.fromkeys(kinds, 0)
        self._shapes: set[tuple[str, str]] = set()

    def drop(self, kind: str, detail: str) -> None:
        """Count one dropped input of ``kind`` and log it if it is new or a power of ten."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.report(kind, detail, self.counts[kind])

    def report(self, kind: str, detail: str, count: int) -> None:
        """Log a drop counted elsewhere (e.g. by the safety filter) by the same rule."""
        shape = (kind, _NUMBER.sub("#", detail)[:120])
        new = shape not in self._shapes and len(self._shapes) < MAX_SHAPES
        if new:
            self._shapes.add(shape)
        if new or _power_of_ten(count):
            self.log(f"dropped {kind} (#{count}): {detail}")


def _power_of_ten(n: int) -> bool:
    while n >= 10 and n % 10 == 0:
        n //= 10
    return n == 1
