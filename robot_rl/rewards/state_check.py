"""``StateCheck``: a condition on the contract state ANDed with the success classifier, its text form
(``parse_state_check``) and the validation of a config's classifier-reward fields (``check_classifier_reward``,
shared by ``TrainConfig`` and ``ActorConfig``). Numpy only: configs import it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robot_rl.envs.contract import STATE_LAYOUT


@dataclass(frozen=True)
class StateCheck:
    """``low <= obs[key][STATE_LAYOUT field][index] <= high`` (e.g. tcp_pos[2] >= 0.06 m: lifted)."""

    field: str
    index: int = 0
    low: float = -np.inf
    high: float = np.inf
    key: str = "state"

    def __post_init__(self) -> None:
        sl = STATE_LAYOUT.slice(self.field)  # raises naming the known fields
        if not 0 <= self.index < sl.stop - sl.start:
            raise ValueError(f"StateCheck({self.field}).index must be in [0, {sl.stop - sl.start}), got {self.index}")
        if self.low > self.high:
            raise ValueError(f"StateCheck({self.field}).low must be <= high, got {self.low} > {self.high}")

    def passes(self, obs: Mapping[str, np.ndarray]) -> bool:
        value = float(np.asarray(obs[self.key])[STATE_LAYOUT.slice(self.field).start + self.index])
        return self.low <= value <= self.high


def parse_state_check(text: str) -> StateCheck:
    """``"tcp_pos:2:0.06:inf"`` -> ``StateCheck("tcp_pos", 2, 0.06, inf)``; errors name the bad text."""
    parts = text.split(":")
    if len(parts) != 4:
        raise ValueError(f"state check {text!r} must be field:index:low:high (e.g. tcp_pos:2:0.06:inf)")
    try:
        index, low, high = int(parts[1]), float(parts[2]), float(parts[3])
    except ValueError as err:
        raise ValueError(f"state check {text!r}: index must be an int, low/high numbers ({err})") from None
    if math.isnan(low) or math.isnan(high):
        raise ValueError(f"state check {text!r}: low/high must not be NaN")
    try:
        return StateCheck(parts[0], index, low, high)
    except KeyError as err:  # unknown field: the message lists the known ones
        raise ValueError(f"state check {text!r}: {err.args[0]}") from None


def check_classifier_reward(owner: str, classifier: object, threshold: float | None,
                            state_checks: Sequence[str]) -> None:
    """Validate a config's ``reward_classifier`` / ``classifier_threshold`` / ``classifier_state_checks``."""
    if classifier is not None and not Path(str(classifier)).is_file():
        raise ValueError(f"{owner}.reward_classifier: no such file {classifier}")
    if threshold is not None and not 0.0 < threshold < 1.0:
        raise ValueError(f"{owner}.classifier_threshold must be in (0, 1), got {threshold}")
    if state_checks and classifier is None:
        raise ValueError(f"{owner}.classifier_state_checks need a --reward-classifier to AND with")
    for text in state_checks:
        parse_state_check(text)
