"""Append-only, checksummed replay log: how the learner makes received transitions durable.

    <run>/replay_log/meta.json            format, version, observation space, action dim, spec
    <run>/replay_log/segment_000000.rrl   b"RRLSEG01", then chunks appended one per flush:
        header  <4s I Q Q 32s>            b"RRLC", format version, chunk number in the segment, payload bytes,
                                          sha256(header fields + payload)
        payload                           a serialized ``LogChunk`` (link.proto): batches of records exactly
                                          as actors sent them, with actor id and the actor process's session id

Every flush appends one chunk, then ``fsync``s: a chunk is durable before any record in it is acknowledged.
Each learner process starts a new segment (and a new one after ``segment_bytes``); old segments are never
written again. Reading checks every header and checksum:

- a chunk cut short at the end of the newest segment is an interrupted write (never acknowledged): reported
  as a warning and truncated away before appending;
- anything else (bad checksum, bad header, a short chunk in an older segment) raises ``CorruptChunkError``
  naming the file, the chunk and the byte offset, or, with ``skip_corrupt``, is logged as an error and left
  out.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import struct
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from robot_rl.distributed.protocol import pb
from robot_rl.utils.atomic import atomic_write, fsync_dir

log = logging.getLogger("robot_rl.distributed")

FORMAT_NAME = "robot_rl.replay_log"
FORMAT_VERSION = 1
SEGMENT_MAGIC = b"RRLSEG01"
CHUNK_MAGIC = b"RRLC"
CHUNK_HEADER = struct.Struct("<4sIQQ32s")
_SEGMENT_RE = re.compile(r"^segment_(\d{6,})\.rrl$")


class CorruptChunkError(ValueError):
    """A chunk on disk failed its header or checksum check; ``path``, ``chunk`` and ``offset`` say where."""

    def __init__(self, path: Path, chunk: int, offset: int, reason: str) -> None:
        self.path, self.chunk, self.offset = path, chunk, offset
        super().__init__(f"{path}: chunk {chunk} at byte {offset}: {reason}")


@dataclass(frozen=True)
class ChunkRef:
    path: Path
    chunk: int
    offset: int
    nbytes: int


def _digest(header_fields: bytes, payload: bytes) -> bytes:
    return hashlib.sha256(header_fields + payload).digest()


class ReplayLog:
    """One run's replay log folder (see the module docstring)."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        meta: Mapping[str, Any] | None = None,
        segment_bytes: int = 256 * 1024 * 1024,
    ) -> None:
        self.path = Path(directory)
        self.segment_bytes = segment_bytes
        self._file: Any = None
        self._segment: Path | None = None
        self._chunk = 0
        self._size = 0
        meta_file = self.path / "meta.json"
        if meta_file.exists():
            self.meta = json.loads(meta_file.read_text())
            if self.meta.get("format") != FORMAT_NAME or self.meta.get("format_version") != FORMAT_VERSION:
                raise ValueError(f"{meta_file}: not a {FORMAT_NAME} v{FORMAT_VERSION} folder")
            for key in ("observation_space", "action_dim"):
                if meta is not None and self.meta.get(key) != meta.get(key):
                    raise ValueError(
                        f"{meta_file}: {key} {self.meta.get(key)!r} does not match this run's "
                        f"{meta.get(key)!r}"
                    )
        elif meta is not None:
            self.path.mkdir(parents=True, exist_ok=True)
            self.meta = {
                "format": FORMAT_NAME,
                "format_version": FORMAT_VERSION,
                **meta,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            }
            data = json.dumps(self.meta, indent=2).encode()
            atomic_write(meta_file, data)
        else:
            raise FileNotFoundError(f"{self.path} holds no replay log (no meta.json)")

    def segments(self) -> list[Path]:
        if not self.path.exists():
            return []
        found = [(int(m.group(1)), p) for p in self.path.iterdir() if (m := _SEGMENT_RE.match(p.name))]
        return [p for _, p in sorted(found)]

    # ------------------------------------------------------------------------------------------ reading
    def _scan(self, path: Path, last: bool, verify: bool) -> Iterator[tuple[ChunkRef, bytes | None, str]]:
        """Yield (ref, payload, status): status ``ok``, ``torn`` (ends the scan) or a corruption reason."""
        size = path.stat().st_size
        with open(path, "rb") as f:
            magic = f.read(len(SEGMENT_MAGIC))
            if magic != SEGMENT_MAGIC:
                torn = last and len(magic) < len(SEGMENT_MAGIC) and SEGMENT_MAGIC.startswith(magic)
                yield ChunkRef(path, 0, 0, 0), None, "torn" if torn else "bad segment header"
                return
            chunk, offset = 0, len(SEGMENT_MAGIC)
            while offset < size:
                head = f.read(CHUNK_HEADER.size)
                magic, version, number, length, digest = (
                    CHUNK_HEADER.unpack(head) if len(head) == CHUNK_HEADER.size else (b"", 0, 0, 0, b"")
                )
                ref = ChunkRef(path, chunk, offset, CHUNK_HEADER.size + length)
                if len(head) < CHUNK_HEADER.size or offset + ref.nbytes > size:
                    yield ref, None, "torn" if last else "chunk cut short (not the newest segment)"
                    return
                if magic != CHUNK_MAGIC or version != FORMAT_VERSION or number != chunk:
                    yield ref, None, f"bad chunk header (magic {magic!r}, version {version}, number {number})"
                    return  # the chunk boundaries after this one cannot be trusted
                payload = f.read(length)
                if verify and _digest(head[: -len(digest)], payload) != digest:
                    yield ref, None, "checksum mismatch"
                else:
                    yield ref, payload, "ok"
                chunk, offset = chunk + 1, offset + ref.nbytes

    def chunks(self, skip_corrupt: bool = False) -> Iterator[tuple[ChunkRef, Any]]:
        """Every intact chunk in order as (ref, ``pb.LogChunk``); see the module docstring for damage."""
        segments = self.segments()
        for i, path in enumerate(segments):
            for ref, payload, status in self._scan(path, last=i == len(segments) - 1, verify=True):
                if status == "torn":
                    log.warning(
                        "%s: chunk %d at byte %d is incomplete (an interrupted, never acknowledged "
                        "write); ignored",
                        path,
                        ref.chunk,
                        ref.offset,
                    )
                elif status != "ok" or payload is None:
                    err = CorruptChunkError(path, ref.chunk, ref.offset, status)
                    if not skip_corrupt:
                        raise err
                    log.error("%s; skipped (skip_corrupt_chunks)", err)
                else:
                    try:
                        yield ref, pb.LogChunk.FromString(payload)
                    except Exception as e:  # checksum fine but unparseable: written by something else
                        err = CorruptChunkError(path, ref.chunk, ref.offset, f"unparseable payload ({e})")
                        if not skip_corrupt:
                            raise err from e
                        log.error("%s; skipped (skip_corrupt_chunks)", err)

    def batches(self, skip_corrupt: bool = False) -> Iterator[tuple[str, str, Sequence[bytes]]]:
        """(actor_id, session, serialized records) in the order they were received."""
        for _, chunk in self.chunks(skip_corrupt):
            for batch in chunk.batches:
                yield batch.actor_id, batch.session, batch.records

    # ------------------------------------------------------------------------------------------ writing
    def open_for_append(self) -> None:
        """Truncate an interrupted write at the end of the newest segment; later appends go to a new one."""
        segments = self.segments()
        if segments:
            last = segments[-1]
            for ref, _, status in self._scan(last, last=True, verify=False):
                if status == "torn" and ref.offset == 0:
                    log.warning("%s: removing a segment whose header was never completely written", last)
                    last.unlink()
                elif status == "torn":
                    log.warning(
                        "%s: truncating an interrupted write at byte %d (chunk %d)",
                        last,
                        ref.offset,
                        ref.chunk,
                    )
                    os.truncate(last, ref.offset)
        match = _SEGMENT_RE.match(segments[-1].name) if segments else None
        self._next_segment = int(match.group(1)) + 1 if match else 0

    def _new_segment(self) -> None:
        self.close()
        path = self.path / f"segment_{self._next_segment:06d}.rrl"
        self._next_segment += 1
        self._file = open(path, "xb")  # noqa: SIM115 - kept open for appends
        self._file.write(SEGMENT_MAGIC)
        self._file.flush()
        os.fsync(self._file.fileno())
        fsync_dir(self.path)
        self._segment, self._chunk, self._size = path, 0, len(SEGMENT_MAGIC)

    def append(self, batches: Sequence[tuple[str, str, Sequence[bytes]]]) -> ChunkRef:
        """Append one chunk of (actor_id, session, records) batches and fsync it; return where it went."""
        if not hasattr(self, "_next_segment"):
            self.open_for_append()
        if self._file is None or self._size >= self.segment_bytes:
            self._new_segment()
        chunk = pb.LogChunk(batches=[pb.LogBatch(actor_id=a, session=s, records=r) for a, s, r in batches])
        payload = chunk.SerializeToString()
        fields = CHUNK_HEADER.pack(CHUNK_MAGIC, FORMAT_VERSION, self._chunk, len(payload), b"\0" * 32)[:-32]
        header = fields + _digest(fields, payload)
        assert self._segment is not None
        ref = ChunkRef(self._segment, self._chunk, self._size, len(header) + len(payload))
        self._file.write(header)
        self._file.write(payload)
        self._file.flush()
        os.fsync(self._file.fileno())
        self._chunk += 1
        self._size += ref.nbytes
        return ref

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
