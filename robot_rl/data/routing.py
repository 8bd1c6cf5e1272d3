"""Where intervention transitions go: RLIF relabelling and online / demo buffer routing (no env, no torch).

RLIF (Luo et al. 2024): when the human takes over at step t, the transition (s_{t-1}, a_{t-1}, s_t) -- the
last *policy* step -- gets reward ``penalty`` (-1); every other reward is 0 and the takeover does not end the
episode. ``RLIFLabeler`` applies this while streaming, holding each transition back one step (its reward is
final only once the next step is known); ``rlif_rewards`` is the same rule over a whole episode.

HIL-SERL: every transition goes to the online buffer and intervention transitions *also* to the demo
buffer (``TransitionRouter``). In the demo buffer each intervention segment is its own short episode: it
ends (truncated, bootstrapped) at the hand-back, or with the episode's own terminated / truncated flag.
Both classes only need ``add`` / ``end_episode`` buffers: ``robot-rl train`` routes into its replays, the
learner runs one router per actor over that actor's replay streams (``ReplayBuffer.stream``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from robot_rl.data.transition import Transition


class StepBuffer(Protocol):
    def add(self, obs: Any, action: Any, reward: float, next_obs: Any, terminated: bool, truncated: bool,
            extras: Mapping[str, object] | None = None) -> None: ...

    def end_episode(self) -> bool: ...


def takeover_steps(interventions: np.ndarray) -> np.ndarray:
    """Indices t >= 1 where an intervention segment starts (intervention[t] and not intervention[t-1])."""
    flags = np.asarray(interventions, bool)
    return np.flatnonzero(flags[1:] & ~flags[:-1]) + 1


def rlif_rewards(interventions: np.ndarray, penalty: float = -1.0) -> np.ndarray:
    """RLIF rewards [T] for one episode's intervention flags [T]: ``penalty`` at t-1 for every takeover at t,
    0 elsewhere (a takeover at t=0 has no policy step before it in this episode)."""
    rewards = np.zeros(len(interventions), np.float32)
    rewards[takeover_steps(interventions) - 1] = penalty
    return rewards


class RLIFLabeler:
    """Streaming RLIF relabelling with a one-step delay: ``push`` returns the transitions that are final."""

    def __init__(self, penalty: float = -1.0) -> None:
        self.penalty = float(penalty)
        self._pending: Transition | None = None
        self.penalties = 0

    def push(self, transition: Transition) -> list[Transition]:
        out: list[Transition] = []
        if self._pending is not None:
            previous = self._pending
            if transition.intervention and not previous.intervention:
                previous = dataclasses.replace(previous, reward=self.penalty)
                self.penalties += 1
            out.append(previous)
            self._pending = None
        if transition.done:
            out.append(transition)
        else:
            self._pending = transition
        return out

    def flush(self) -> list[Transition]:
        """Release the held transition (episode cut mid-way, e.g. the step budget ended)."""
        out = [self._pending] if self._pending is not None else []
        self._pending = None
        return out


class TransitionRouter:
    """Stores every transition in ``online``; intervention transitions also in ``demo`` when
    ``interventions_to_demo``; relabels rewards RLIF-style when ``rlif_penalty`` is given."""

    def __init__(
        self,
        online: StepBuffer,
        demo: StepBuffer | None = None,
        interventions_to_demo: bool = True,
        rlif_penalty: float | None = None,
    ) -> None:
        self.online = online
        self.demo = demo if interventions_to_demo else None
        self.labeler = RLIFLabeler(rlif_penalty) if rlif_penalty is not None else None
        self._demo_open = False
        self.demo_transitions = 0

    def add(self, t: Transition) -> None:
        for ready in self.labeler.push(t) if self.labeler is not None else [t]:
            self._store(ready)

    def _store(self, t: Transition) -> None:
        self.online.add(t.obs, t.action, t.reward, t.next_obs, t.terminated, t.truncated, t.extras)
        if self.demo is None:
            return
        if t.intervention:
            self.demo.add(t.obs, t.action, t.reward, t.next_obs, t.terminated, t.truncated, t.extras)
            self._demo_open = not t.done
            self.demo_transitions += 1
        elif self._demo_open:
            self.demo.end_episode()
            self._demo_open = False

    def flush(self) -> None:
        """Store held transitions and close an open demo segment (call before ``online.end_episode()``)."""
        if self.labeler is not None:
            for t in self.labeler.flush():
                self._store(t)
        if self.demo is not None and self._demo_open:
            self.demo.end_episode()
            self._demo_open = False
