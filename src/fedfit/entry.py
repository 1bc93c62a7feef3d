"""The ``fedfit`` command's entry point: a Ctrl-C while the program is still starting up (torch
and fedfit's modules take seconds to import) ends in one line and exit status 130, as one during
a run does (:func:`fedfit.cli.main`).

The interrupt is held back until the imports finish rather than raised inside them: a
``KeyboardInterrupt`` raised in the middle of numpy's or scipy's own imports can leave them
half-initialised, and the next import then fails with an unrelated error.

Python's cyclic garbage collector is paused while the program imports (:func:`collector_paused`)
and what the imports built is then frozen out of its scans. Importing torch creates hundreds of
thousands of objects, none of them cyclic garbage, and every full collection in the middle of it
walks all of them: about 0.8 s of CPU on a 2-core host, a third of importing torch
(bench/RESULTS.md, *Start-up without the collector*). Nothing a run computes depends on when the
collector runs.

Once the command has returned, the process ends with :func:`exit_now`: everything the
interpreter's own exit does that anyone can observe (waiting for non-daemon threads, the
``atexit`` handlers: pool shutdowns, Ray's, logging's, temporary files', then flushing stdout and
stderr), but not its teardown, which frees every object torch and fedfit built one by one
(module by module, each object's memory handed back) only for the operating system to reclaim
the whole address space a moment later: 0.3–0.7 s of a 2-core host's time at the end of every
run (bench/RESULTS.md, *The end of a run*). fedfit closes every file it writes before the
command returns; a file a user's plug-in left open is still closed, its buffer written, and a
thread pool nobody shut down is still told to stop, as the interpreter's own exit would. Under a profiler or a tracer
(``python -m cProfile -o FILE -m fedfit.entry ...``, a debugger) ``main`` returns as before, so
the tool can write its output once the command is done.
"""

from __future__ import annotations

import atexit
import gc
import io
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import NoReturn

EXIT_INTERRUPTED = 130


@contextmanager
def collector_paused() -> Iterator[None]:
    """Run the block (a program's imports) with the cyclic garbage collector off, then move
    every object alive into the collector's permanent generation (``gc.freeze``), where no
    later collection scans it, and turn the collector back on if it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()


def exit_now(status: int) -> NoReturn:
    """End the process with exit status ``status`` as the interpreter's exit would, less the
    teardown: thread pools are told to stop and non-daemon threads are waited for
    (:func:`_wait_for_threads`), the ``atexit`` handlers run (last registered first), files
    still open are closed with their buffers written (:func:`_close_open_files`, as their
    destructors would in the teardown), stdout and stderr are flushed, then the process exits
    without freeing its objects one by one (the operating system reclaims them at once)."""
    _wait_for_threads()
    atexit._run_exitfuncs()
    _close_open_files()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing left to flush there
            pass
    os._exit(status)


def _wait_for_threads() -> None:
    """What the interpreter's exit does first: ``threading._shutdown`` runs the hooks that tell
    idle ``concurrent.futures`` pools' workers to stop, then joins every non-daemon thread
    (without the hooks, a pool nobody shut down would keep its workers waiting, and this join,
    forever). Where an interpreter lacks it, the non-daemon threads are joined directly."""
    shutdown = getattr(threading, "_shutdown", None)
    if callable(shutdown):
        shutdown()
        return
    current = threading.current_thread()
    for thread in threading.enumerate():
        if thread is not current and not thread.daemon:
            thread.join()


def _close_open_files() -> None:
    """Close every file object the run left open, text wrappers before the buffers and raw files
    under them so each layer's buffered bytes reach the file (a user's plug-in may not close
    what it writes; the teardown's destructors would have). Objects frozen at start-up (read
    only: the imports') are not visited; standard streams are flushed, not closed."""
    std = {id(s) for s in (sys.stdin, sys.stdout, sys.stderr, sys.__stdin__, sys.__stdout__, sys.__stderr__)}
    files = [o for o in gc.get_objects() if isinstance(o, io.IOBase) and id(o) not in std]
    for layer in (io.TextIOBase, io.BufferedIOBase, io.IOBase):
        for f in files:
            if isinstance(f, layer):
                try:
                    f.close()
                except (OSError, ValueError):  # already closed, or its disk went away: as the destructor would
                    pass


def main() -> int:
    """Import the command line with Ctrl-C held back, then run it (or stop, if one came)."""
    interrupted: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        interrupted.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        with collector_paused():
            from fedfit.prefetch import for_command

            for_command(sys.argv[1:])  # the data set's files read meanwhile, on a thread
            from fedfit.cli import main as cli_main
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        print("fedfit: interrupted during start-up", file=sys.stderr)
        return EXIT_INTERRUPTED
    status = cli_main()
    if sys.getprofile() is None and sys.gettrace() is None:
        exit_now(status)
    return status  # under a profiler or debugger (``python -m cProfile -o ...``): it writes its output after this


if __name__ == "__main__":
    sys.exit(main())
