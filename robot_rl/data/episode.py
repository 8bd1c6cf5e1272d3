"""One recorded episode: the unit of demos on disk, of bulk replay insertion, and of actor->learner transfer."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Episode:
    """T steps of experience.

    observations: ``{key: array [T + 1, ...]}``: obs_0 .. obs_T (the last is the final next-observation).
    actions:      float32 [T, A]: executed actions (the human's while intervening).
    rewards:      float32 [T].
    terminated:   the final step reached a terminal state (no bootstrapping from obs_T).
    truncated:    the episode was cut (time limit, operator stop): obs_T is bootstrapped.
    infos:        per-step arrays [T]: ``intervention`` (bool), ``safety_clipped`` (bool), ``is_success`` (bool).
    """

    observations: dict[str, np.ndarray]
    actions: np.ndarray
    rewards: np.ndarray
    terminated: bool
    truncated: bool
    infos: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self) -> None:
        t = len(self.actions)
        if self.actions.ndim != 2:
            raise ValueError(f"Episode.actions must be [T, A], got shape {self.actions.shape}")
        if self.rewards.shape != (t,):
            raise ValueError(f"Episode.rewards must be [T]={t}, got shape {self.rewards.shape}")
        for key, value in self.observations.items():
            if len(value) != t + 1:
                raise ValueError(f"Episode.observations[{key!r}] must hold T+1={t + 1} entries, got {len(value)}")
        for key, value in self.infos.items():
            if len(value) != t:
                raise ValueError(f"Episode.infos[{key!r}] must hold T={t} entries, got {len(value)}")

    def __len__(self) -> int:
        return len(self.actions)

    @property
    def success(self) -> bool:
        flags = self.infos.get("is_success")
        return bool(flags is not None and len(flags) and flags.any())
