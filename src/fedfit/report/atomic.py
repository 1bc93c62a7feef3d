"""Atomic file writes: a reader (or a resume after a crash) sees the old file or the new one, whole.

Every file fedfit rewrites in a run directory goes through here: the bytes are written to a
hidden temporary file in the same directory (``.NAME.tmp.EXT``), flushed and fsynced, then renamed over the target
(``os.replace`` is atomic on POSIX), and the directory is fsynced so the rename survives a power
cut. A process killed at any moment leaves at most a stray temporary file behind, never a torn or
empty target.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path


def write_bytes(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with staged(path) as tmp:
        tmp.write_bytes(data)


def write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) atomically."""
    write_bytes(path, text.encode("utf-8"))


def write_with(path: Path, writer: Callable[[Path], object]) -> None:
    """Replace ``path`` with what ``writer(tmp_path)`` writes to a temporary path, atomically."""
    with staged(path) as tmp:
        writer(tmp)


@contextmanager
def staged(path: Path) -> Iterator[Path]:
    """A temporary path beside ``path``; renamed over it (fsynced) if the block succeeds."""
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")  # the suffix kept: plotters read it
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def fsync_dir(directory: Path) -> None:
    """Make renames in ``directory`` durable (a no-op where directories cannot be opened)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    with path.open("rb") as f:
        os.fsync(f.fileno())
