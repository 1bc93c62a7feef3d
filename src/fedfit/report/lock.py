"""An exclusive lock on a run directory, held for a run's life and released by the OS on death.

``fedfit run`` and ``fedfit resume`` take ``RUN_DIR/.lock`` with ``flock`` before writing
anything. A second writer fails at once with one line naming the holder's PID (written into the
lock file); a process killed with ``kill -9`` releases the lock with its file descriptors, so a
stale lock file never blocks a resume.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from fedfit.errors import ConfigError

LOCK_NAME = ".lock"


class RunLock:
    """``with RunLock(run_dir):`` — exclusive ownership of ``run_dir`` (created if missing).

    Raises:
        ConfigError: another process holds the lock, or the directory cannot be created.
    """

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()

    def acquire(self) -> None:
        """Take the lock or raise :class:`ConfigError` naming the holder."""
        make_run_dir(self.path.parent)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise ConfigError(f"{self.path.parent}: cannot write there ({err.strerror})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise ConfigError(f"{self.path.parent}: in use by another fedfit process (PID {holder})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self._fd = fd

    def release(self) -> None:
        """Give the lock back (the file stays; it is harmless unlocked)."""
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def make_run_dir(path: Path) -> None:
    """Create ``path`` (and parents) or raise a one-line :class:`ConfigError` saying why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ConfigError(f"--out: {path} is not a directory (a file is in the way)") from None
    except NotADirectoryError:
        raise ConfigError(f"--out: {path} lies under a file, not a directory") from None
    except OSError as err:
        raise ConfigError(f"--out: cannot create {path} ({err.strerror})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"--out: {path} is not writable")
