"""The actor's side of the link: a bounded send buffer, resends, acknowledgements, the weight stream.

The control loop only calls ``add`` / ``end_episode``: they copy the observation and append to a queue, never
touching the network, so a slow or absent learner cannot stall it. A sender thread compresses, numbers and
pushes records, and keeps each one until the learner acknowledges it as durable (after its replay-log flush);
after a reconnect (exponential back-off) it resends from the learner's acknowledged watermark. A weights
thread follows the learner's weight stream. What may be dropped, and only that, is counted and logged: when
the unacknowledged data exceeds ``buffer_mb``, *new* steps are not recorded and the open episode is closed
as cut (``cut_by_drop_policy``) at its last recorded step; buffered records are never dropped.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import grpc
import numpy as np

from robot_rl.data.transition import Transition
from robot_rl.distributed.codec import encode_record
from robot_rl.distributed.config import LinkConfig
from robot_rl.distributed.protocol import (
    PROTOCOL_VERSION,
    LinkRefused,
    auth_metadata,
    format_address,
    make_channel,
    pb,
    services,
)

__all__ = ["ActorClient", "LinkRefused"]

log = logging.getLogger("robot_rl.distributed")
_FATAL = (
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.PERMISSION_DENIED,
)


class ActorClient:
    """Transport of one actor process. Thread-safe for one control thread plus its own two threads."""

    def __init__(
        self,
        link: LinkConfig,
        actor_id: str,
        spec: Mapping[str, Any],
        token: str,
        *,
        buffer_mb: float = 512.0,
        send_batch: int = 32,
        compression: int = 1,
        backoff_max_s: float = 5.0,
        ack_poll_s: float = 0.1,
        on_weights: Callable[[Any], None] | None = None,
    ) -> None:
        self.link, self.actor_id = link, actor_id
        self.session = uuid.uuid4().hex
        self._spec_json = json.dumps(spec, sort_keys=True)
        self._metadata = auth_metadata(token)
        self._limit = int(buffer_mb * 1024 * 1024)
        self._send_batch, self._level = send_batch, compression
        self._max_batch_bytes = link.max_message_mb * 1024 * 1024 // 2
        self._backoff_max, self._ack_poll = backoff_max_s, ack_poll_s
        self.on_weights = on_weights
        self._channel = make_channel(link, backoff_max_s)
        self._stub = services.LearnerStub(self._channel)
        self._inbox: deque[dict[str, Any]] = deque()
        self._unacked: deque[tuple[int, bytes]] = deque()
        # Buffered bytes = admitted (control thread) + re-encoding delta - acknowledged (sender thread): each
        # counter has a single writer, so the control loop never takes a lock another thread may hold.
        self._admitted = self._delta = self._freed = 0
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        self._weights_call: Any = None
        self._seq = 0
        self._next_send = 1
        self._last_push = 0.0
        self._last_warn = 0.0
        self.acked = 0
        self.connected = threading.Event()
        self.stop_requested = False
        self.hold = False
        """The learner asks actors that follow its pace to wait (sim only; a robot never waits)."""
        self.error: Exception | None = None
        self.weights_version = 0
        self.hello: Any = None
        # control-thread episode bookkeeping
        self._episode, self._index = 0, 0
        self._last_next_obs: Mapping[str, np.ndarray] | None = None
        self._dropping = False
        self.counters = dict(
            steps=0,
            recorded=0,
            dropped_steps=0,
            dropped_episodes=0,
            reconnects=0,
            duplicates=0,
            pushes=0,
            bytes_sent=0,
        )

    # ----------------------------------------------------------------------------------- connection
    def _hello(self) -> Any:
        try:
            reply = self._stub.Hello(
                pb.HelloRequest(
                    protocol_version=PROTOCOL_VERSION,
                    actor_id=self.actor_id,
                    session=self.session,
                    spec_json=self._spec_json,
                    resume_from=self.acked + 1,
                ),
                timeout=self.link.rpc_timeout_s,
                metadata=self._metadata,
            )
        except grpc.RpcError as e:
            if e.code() in (*_FATAL, grpc.StatusCode.FAILED_PRECONDITION):
                raise LinkRefused(f"learner refused actor {self.actor_id!r}: {e.details()}") from e
            raise
        self._on_ack(reply.acked_seq)
        self._next_send = max(reply.acked_seq + 1, self._unacked[0][0] if self._unacked else 0)
        self.stop_requested |= reply.stop
        self.hello = reply
        self.connected.set()
        return reply

    def connect(self, timeout_s: float) -> Any:
        """First handshake, retried with back-off until ``timeout_s``; returns the ``HelloReply``. Raises
        ``LinkRefused`` at once when the learner refuses, ``TimeoutError`` when it cannot be reached."""
        deadline, backoff = time.monotonic() + timeout_s, 0.1
        while True:
            try:
                return self._hello()
            except grpc.RpcError as e:
                if time.monotonic() + backoff > deadline:
                    raise TimeoutError(
                        f"no learner at {format_address(self.link.host, self.link.port)} "
                        f"after {timeout_s:.0f} s "
                        f"({e.code().name}: {e.details()})"
                    ) from e
                time.sleep(backoff)
                backoff = min(2 * backoff, self._backoff_max)

    def start(self) -> None:
        for target, name in ((self._send_loop, "sender"), (self._weights_loop, "weights")):
            thread = threading.Thread(target=target, name=f"{self.actor_id}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def close(self, timeout_s: float = 2.0) -> None:
        self._closed.set()
        if self._weights_call is not None:
            self._weights_call.cancel()
        for thread in self._threads:
            thread.join(timeout_s)
        self._channel.close()

    # ------------------------------------------------------------------------------- control thread
    def add(self, t: Transition, policy_version: int = 0) -> bool:
        """Record one control step (its extras go on the wire as doubles); never blocks. False: dropped (buffer
        full)."""
        obs, next_obs, terminated, truncated = t.obs, t.next_obs, t.terminated, t.truncated
        c = self.counters
        c["steps"] += 1
        done = bool(terminated) or bool(truncated)
        if self._dropping or self.buffered_bytes >= self._limit:
            c["dropped_steps"] += 1
            if not self._dropping:
                c["dropped_episodes"] += 1
                if self._index > 0:  # close the open episode at its last recorded step
                    self._put(dict(is_step=False, obs=obs, truncated=True, cut=True))
                self._warn_drop()
            self._dropping = not done
            if done:
                self._new_episode()
            return False
        self._put(
            dict(
                is_step=True,
                obs=obs,
                action=np.array(t.action, np.float32),
                reward=float(t.reward),
                terminated=bool(terminated),
                extras={k: float(v) for k, v in t.extras.items()},  # type: ignore[arg-type]
                policy_version=policy_version,
            )
        )
        c["recorded"] += 1
        self._index += 1
        if done:
            self._put(dict(is_step=False, obs=next_obs, truncated=not terminated))
            self._new_episode()
        else:
            self._last_next_obs = next_obs
        return True

    def end_episode(self) -> None:
        """Close the open episode as truncated (actor shutdown, operator stop)."""
        if self._index > 0 and not self._dropping and self._last_next_obs is not None:
            self._put(dict(is_step=False, obs=self._last_next_obs, truncated=True))
        self._dropping = False
        self._new_episode()

    def _new_episode(self) -> None:
        self._episode += 1
        self._index = 0
        self._last_next_obs = None

    def _put(self, item: dict[str, Any]) -> None:
        item["obs"] = {k: np.array(v, copy=True) for k, v in item["obs"].items()}
        item.update(episode=self._episode, index=self._index, actor_time=time.time())
        item["nbytes"] = sum(v.nbytes for v in item["obs"].values()) + 64
        self._admitted += item["nbytes"]
        self._inbox.append(item)

    def _warn_drop(self) -> None:
        now = time.monotonic()
        if now - self._last_warn > 10.0:
            self._last_warn = now
            c = self.counters
            log.warning(
                "actor %s: send buffer full (%.0f MB unacknowledged, learner %s): not recording new steps; "
                "%d steps in %d episodes dropped so far",
                self.actor_id,
                self.buffered_bytes / 2**20,
                "connected" if self.connected.is_set() else "unreachable",
                c["dropped_steps"],
                c["dropped_episodes"],
            )

    # ------------------------------------------------------------------------------------ sender thread
    def _encode_inbox(self) -> None:
        while self._inbox:
            item = self._inbox.popleft()
            self._seq += 1
            raw = encode_record(
                self._seq,
                item["episode"],
                item["index"],
                item["obs"],
                is_step=item["is_step"],
                action=item.get("action"),
                reward=item.get("reward", 0.0),
                terminated=item.get("terminated", False),
                truncated=item.get("truncated", False),
                cut=item.get("cut", False),
                extras=item.get("extras"),
                policy_version=item.get("policy_version", 0),
                actor_time=item["actor_time"],
                level=self._level,
            )
            self._unacked.append((self._seq, raw))
            self._delta += len(raw) - item["nbytes"]

    def take_records(self) -> list[bytes]:
        """Encode what ``add`` recorded and hand the records over instead of sending them, as acknowledged: to
        drive a ``Learner``'s ingestion in this process (tests, lock-step benchmarks). Not with ``start()``."""
        self._encode_inbox()
        raws = [raw for _, raw in self._unacked]
        self._on_ack(self._seq)
        return raws

    def _on_ack(self, acked: int) -> None:
        freed = 0
        while self._unacked and self._unacked[0][0] <= acked:
            freed += len(self._unacked.popleft()[1])
        self.acked = max(self.acked, acked)
        if freed:
            self._freed += freed

    def _batch(self) -> list[bytes]:
        if not self._unacked:
            return []
        start = max(0, self._next_send - self._unacked[0][0])
        out, size = [], 0
        for _, raw in itertools.islice(self._unacked, start, start + self._send_batch):
            if out and size + len(raw) > self._max_batch_bytes:
                break
            out.append(raw)
            size += len(raw)
        return out

    def _stats(self) -> Any:
        c = self.counters
        return pb.ActorStats(
            steps=c["steps"],
            dropped_steps=c["dropped_steps"],
            dropped_episodes=c["dropped_episodes"],
            buffered_records=len(self._unacked),
            weights_version=self.weights_version,
            reconnects=c["reconnects"],
        )

    def _disconnected(self, e: grpc.RpcError) -> None:
        if self.connected.is_set():
            self.counters["reconnects"] += 1
            log.warning(
                "actor %s: lost the learner (%s: %s); buffering and retrying",
                self.actor_id,
                e.code().name,
                e.details(),
            )
        self.connected.clear()
        self.hold = False

    def _send_loop(self) -> None:
        backoff = 0.1
        while not self._closed.is_set():
            if not self.connected.is_set():
                try:
                    self._hello()
                    backoff = 0.1
                    log.info("actor %s: connected; resending from seq %d", self.actor_id, self._next_send)
                except LinkRefused as e:
                    self.error = e
                    return
                except grpc.RpcError:
                    self._encode_inbox()  # keep the buffer accounting exact while offline
                    self._closed.wait(backoff)
                    backoff = min(2 * backoff, self._backoff_max)
                continue
            self._encode_inbox()
            batch = self._batch()
            idle = time.monotonic() - self._last_push
            if not batch and not ((self._unacked or self.hold) and idle >= self._ack_poll) and idle < 1.0:
                self._closed.wait(0.002)  # poll: a new record waits ~2 ms at most (no wake-up lock)
                continue
            request = pb.PushRequest(
                actor_id=self.actor_id, session=self.session, records=batch, stats=self._stats()
            )
            try:
                reply = self._stub.Push(request, timeout=self.link.rpc_timeout_s, metadata=self._metadata)
            except grpc.RpcError as e:
                if e.code() in _FATAL:
                    self.error = LinkRefused(
                        f"learner refused a push of actor {self.actor_id!r}: {e.details()}"
                    )
                    return
                self._disconnected(e)  # FAILED_PRECONDITION (unknown session) too: say Hello again
                continue
            self._last_push = time.monotonic()
            self.counters["pushes"] += 1
            self.counters["bytes_sent"] += sum(len(r) for r in batch)
            self.counters["duplicates"] += reply.duplicates
            self._on_ack(reply.acked_seq)
            first_held = self._unacked[0][0] if self._unacked else self._seq + 1
            self._next_send = max(reply.expected_seq, first_held)
            self.stop_requested |= reply.stop
            self.hold = reply.hold

    # ----------------------------------------------------------------------------------- weights thread
    def _weights_loop(self) -> None:
        backoff = 0.1
        while not self._closed.is_set():
            if not self.connected.wait(0.1):
                continue
            try:
                self._weights_call = self._stub.SubscribeWeights(
                    pb.WeightsRequest(actor_id=self.actor_id, have_version=self.weights_version),
                    metadata=self._metadata,
                )
                for message in self._weights_call:
                    if self.on_weights is not None:
                        self.on_weights(message)
                    self.weights_version = message.version
                    backoff = 0.1
            except grpc.RpcError as e:
                if self._closed.is_set():
                    return
                if e.code() in _FATAL:
                    self.error = LinkRefused(f"learner refused the weight stream: {e.details()}")
                    return
            self._closed.wait(backoff)
            backoff = min(2 * backoff, self._backoff_max)

    # ------------------------------------------------------------------------------------------ status
    @property
    def buffered_bytes(self) -> int:
        """Bytes recorded and not yet acknowledged (raw until encoded, then as sent)."""
        return self._admitted + self._delta - self._freed

    def pending(self) -> int:
        """Records recorded but not yet acknowledged."""
        return len(self._inbox) + len(self._unacked)

    def drain(self, timeout_s: float) -> bool:
        """Wait until the learner acknowledged everything recorded; False on timeout or a fatal error."""
        deadline = time.monotonic() + timeout_s
        while self.pending() and self.error is None and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.pending() == 0

    def status(self) -> dict[str, Any]:
        return {
            **self.counters,
            "acked_seq": self.acked,
            "last_seq": self._seq,
            "pending": self.pending(),
            "buffered_mb": round(self.buffered_bytes / 2**20, 3),
            "connected": self.connected.is_set(),
            "weights_version": self.weights_version,
            "session": self.session,
        }
