"""Writing a file so that a reader (or a restart after a crash) sees the old content or the new, never a part.

The data goes to a temporary name beside the target (unique per process and thread, ending in ``TMP_SUFFIX``
so that loaders can recognise an interrupted write), is flushed and fsynced, then renamed over the target,
and the folder is fsynced so the rename itself survives a power loss. Every file that a resume or a reader
depends on (checkpoints, replay, demos, metadata, status) is written this way.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

TMP_SUFFIX = ".tmp"

Content = bytes | str | Callable[[BinaryIO], object]


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename or a new file in ``path`` durable (best effort: some filesystems refuse it)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike[str], content: Content, exclusive: bool = False) -> Path:
    """Replace ``path`` with ``content``: bytes, text (UTF-8), or a function that writes to a binary file.
    ``exclusive``: create ``path`` only if it does not exist (``FileExistsError`` otherwise), still complete or
    not at all: the claim of a folder by the first of two writers."""
    final = Path(path)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.{threading.get_ident()}{TMP_SUFFIX}")
    try:
        with open(tmp, "wb") as f:
            if isinstance(content, str):
                f.write(content.encode())
            elif isinstance(content, bytes):
                f.write(content)
            else:
                content(f)
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            os.link(tmp, final)  # atomic, and fails if the target exists
            tmp.unlink()
        else:
            os.replace(tmp, final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(final.parent)
    return final
