"""The learner's side of the durability protocol: de-duplicate, log, assemble, acknowledge.

Per actor the ingestor keeps its current ``session`` and two watermarks over that session's sequence numbers:
``received`` (highest contiguous seq taken in) and ``durable`` (highest seq inside a flushed, fsynced chunk).
Acknowledgements report ``durable`` only, so an actor keeps (and after a reconnect resends) everything above
it. A record at or below ``received`` is a duplicate and ignored; one above ``received + 1`` is a gap: the
push stops there and the reply tells the actor where to resume. After a learner restart the watermarks, the
open episodes and the replay are rebuilt from the log alone, so what was received but not flushed is simply
received again from the actor, and nothing is counted twice.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import gymnasium as gym

from robot_rl.data.transition import Transition
from robot_rl.distributed.assembler import AssembledEpisode, EpisodeAssembler
from robot_rl.distributed.codec import RecordData, decode_record
from robot_rl.distributed.replay_log import ReplayLog

log = logging.getLogger("robot_rl.distributed")


@dataclass
class ActorState:
    actor_id: str
    session: str
    received: int = 0
    durable: int = 0
    records: int = 0
    duplicates: int = 0
    episodes: int = 0
    last_seen: float = field(default_factory=time.time)
    stats: dict[str, int] = field(default_factory=dict)
    """The actor's latest ``ActorStats`` (steps, drops, buffered records, weights version)."""


@dataclass
class PushResult:
    acked: int
    expected: int
    accepted: int
    duplicates: int


class Ingestor:
    """Thread-safe. Under the ingest lock, in arrival order, and also while ``restore`` replays the log:
    ``on_step(actor_id, transition, restoring)`` for each transition as soon as it is complete (the record
    after it arrived), ``on_episode(episode, restoring)`` for each finished episode (after its last
    transition), and ``on_cut(actor_id)`` when an actor's open episode is cut short (see ``EpisodeAssembler``)."""

    def __init__(
        self,
        space: gym.spaces.Dict,
        action_dim: int,
        replay_log: ReplayLog,
        on_episode: Callable[[AssembledEpisode, bool], None],
        on_step: Callable[[str, Transition, bool], None] | None = None,
        on_cut: Callable[[str], None] | None = None,
    ) -> None:
        self.space, self.action_dim = space, action_dim
        self.log = replay_log
        self.on_episode = on_episode
        self.on_step = on_step
        self.assembler = EpisodeAssembler(on_cut)
        self.actors: dict[str, ActorState] = {}
        self.max_policy_version = 0
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._pending: list[tuple[str, str, list[bytes]]] = []
        self.pending_records = 0

    # ---------------------------------------------------------------------------------------- restore
    def restore(self, skip_corrupt: bool = False) -> int:
        """Rebuild watermarks, open episodes and (through ``on_step``) the replay from the log; return the
        number of records read. Raises ``CorruptChunkError`` unless ``skip_corrupt``."""
        n = 0
        for actor_id, session, raws in self.log.batches(skip_corrupt):
            decoded = [decode_record(raw, self.space, self.action_dim) for raw in raws]
            with self._lock:
                state = self.actors.get(actor_id)
                if state is None or state.session != session:
                    self._new_session(actor_id, session, decoded[0].seq if decoded else 1)
                self._take(actor_id, decoded, [], restoring=True)
                state = self.actors[actor_id]
                state.durable = state.received
            n += len(raws)
        self.log.open_for_append()
        return n

    # ------------------------------------------------------------------------------------------- live
    def hello(self, actor_id: str, session: str, resume_from: int) -> int:
        """Register a (re)connecting actor session; return its durable watermark (resend what is above)."""
        with self._lock:
            state = self.actors.get(actor_id)
            if state is None or state.session != session:
                self._new_session(actor_id, session, resume_from)
                state = self.actors[actor_id]
            elif resume_from > state.received + 1:
                log.warning(
                    "actor %s no longer holds seq %d..%d (lost on its side); continuing at %d",
                    actor_id,
                    state.received + 1,
                    resume_from - 1,
                    resume_from,
                )
                self.assembler.discard(actor_id, "records missing")
                state.received = state.durable = resume_from - 1
            state.last_seen = time.time()
            return state.durable

    def _new_session(self, actor_id: str, session: str, first_seq: int) -> None:
        old = self.actors.get(actor_id)
        if old is not None:
            log.info("actor %s: new session %s (was %s)", actor_id, session[:8], old.session[:8])
            self.assembler.discard(actor_id, "the actor restarted")
        start = max(0, first_seq - 1)
        self.actors[actor_id] = ActorState(actor_id, session, received=start, durable=start)

    def push(self, actor_id: str, session: str, raws: Sequence[bytes], stats: dict[str, int]) -> PushResult:
        """Take a batch from a live actor. Raises ``KeyError`` for an unknown session (say Hello first) and
        ``RecordError`` for a malformed record (nothing of the batch is taken)."""
        with self._lock:
            state = self.actors.get(actor_id)
            if state is None or state.session != session:
                raise KeyError(
                    f"actor {actor_id!r} session {session[:8]} is not registered: call Hello first"
                )
            first_new = state.received + 1
        # Decode outside the lock (decompression dominates); skip what is certainly a duplicate.
        decoded: list[RecordData] = []
        raw_new: list[bytes] = []
        dups = 0
        for raw in raws:
            rec = decode_record(raw, self.space, self.action_dim)
            if rec.seq < first_new:
                dups += 1
                continue
            decoded.append(rec)
            raw_new.append(raw)
        with self._lock:
            state = self.actors.get(actor_id)
            if state is None or state.session != session:
                raise KeyError(f"actor {actor_id!r} session {session[:8]} was replaced during the push")
            accepted, more_dups = self._take(actor_id, decoded, raw_new, restoring=False)
            state.duplicates += dups + more_dups
            state.stats = stats
            state.last_seen = time.time()
            return PushResult(state.durable, state.received + 1, accepted, dups + more_dups)

    def _take(
        self, actor_id: str, decoded: list[RecordData], raws: list[bytes], restoring: bool
    ) -> tuple[int, int]:
        state = self.actors[actor_id]
        accepted = dups = 0
        keep: list[bytes] = []
        for i, rec in enumerate(decoded):
            if rec.seq <= state.received:
                dups += 1
                continue
            if rec.seq != state.received + 1:
                if restoring:  # a skipped corrupt chunk: the records in between are gone
                    log.warning(
                        "actor %s: seq %d..%d missing from the log", actor_id, state.received + 1, rec.seq - 1
                    )
                    self.assembler.discard(actor_id, "records missing from the log")
                else:
                    break  # a gap: the reply's expected seq makes the actor resend from there
            state.received = rec.seq
            state.records += 1
            accepted += 1
            self.max_policy_version = max(self.max_policy_version, rec.policy_version)
            if not restoring:
                keep.append(raws[i])
            ready, done = self.assembler.add(actor_id, rec)
            if ready is not None and self.on_step is not None:
                self.on_step(actor_id, ready, restoring)
            if done is not None:
                state.episodes += 1
                self.on_episode(done, restoring)
        if keep:
            if self._pending and self._pending[-1][:2] == (actor_id, state.session):
                self._pending[-1][2].extend(keep)
            else:
                self._pending.append((actor_id, state.session, keep))
            self.pending_records += len(keep)
        return accepted, dups

    def flush(self) -> int:
        """Write what was received since the last flush as one chunk (fsynced), then advance ``durable``."""
        with self._flush_lock:
            with self._lock:
                batches, self._pending = self._pending, []
                self.pending_records = 0
                marks = {a: (s.session, s.received) for a, s in self.actors.items()}
            if batches:
                self.log.append(batches)
            with self._lock:
                for actor_id, (session, received) in marks.items():
                    state = self.actors.get(actor_id)
                    if state is not None and state.session == session:
                        state.durable = max(state.durable, received)
            return sum(len(r) for _, _, r in batches)

    def open_steps(self) -> int:
        """Steps received whose transitions are not complete yet (one per open episode), over all actors."""
        with self._lock:
            return sum(self.assembler.open_steps(a) for a in self.actors)

    def snapshot(self) -> list[ActorState]:
        with self._lock:
            return [ActorState(**vars(s)) for s in self.actors.values()]
