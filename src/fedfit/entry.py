"""The ``fedfit`` command's entry point: a Ctrl-C while the program is still starting up (torch
and fedfit's modules take seconds to import) ends in one line and exit status 130, as one during
a run does (:func:`fedfit.cli.main`).

The interrupt is held back until the imports finish rather than raised inside them: a
``KeyboardInterrupt`` raised in the middle of numpy's or scipy's own imports can leave them
half-initialised, and the next import then fails with an unrelated error.

Python's cyclic garbage collector is paused while the program imports (:func:`collector_paused`)
and what the imports built is then frozen out of its scans; the process also freezes what is
alive before it exits (:func:`before_exit`). Importing torch creates hundreds of thousands of
objects, none of them cyclic garbage, and every full collection in the middle of it, or at the
interpreter's shutdown, walks all of them: about 0.8 s of CPU on a 2-core host, a third of
importing torch (bench/RESULTS.md, *Start-up without the collector*). Nothing a run computes
depends on when the collector runs.
"""

from __future__ import annotations

import gc
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

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


def before_exit() -> None:
    """Freeze every object alive out of the collector's scans: the process is ending, and the
    interpreter's shutdown would otherwise walk them all once more for cycles the operating
    system reclaims anyway."""
    gc.freeze()


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
    before_exit()
    return status


if __name__ == "__main__":
    sys.exit(main())
