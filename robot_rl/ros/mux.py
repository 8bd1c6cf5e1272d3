"""``InterventionMux``: the executed action is the human's while an intervention is active and fresh."""

from __future__ import annotations

import numpy as np


class InterventionMux:
    """Holds the latest ``rl/intervention`` vector (active, dx..gripper) and its arrival time (s)."""

    def __init__(self, stale_after_s: float) -> None:
        self.stale_after_s = stale_after_s
        self._human: np.ndarray | None = None
        self._time_s = -np.inf

    def update(self, values: np.ndarray | None, now_s: float) -> None:
        """``values`` = [active, 7 action values]; None (malformed message) ends the intervention."""
        self._human = None if values is None or not values[0] >= 0.5 else np.asarray(values[1:], float)
        self._time_s = now_s

    def active(self, now_s: float) -> bool:
        return self._human is not None and now_s - self._time_s <= self.stale_after_s

    def select(self, policy_action: np.ndarray, now_s: float) -> tuple[np.ndarray, bool]:
        """(action to execute, intervened)."""
        if self.active(now_s):
            return self._human.copy(), True  # type: ignore[union-attr]
        return policy_action, False
