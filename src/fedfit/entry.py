"""The ``fedfit`` command's entry point: a Ctrl-C while the program is still starting up (torch
and fedfit's modules take seconds to import) ends in one line and exit status 130, as one during
a run does (:func:`fedfit.cli.main`).

The interrupt is held back until the imports finish rather than raised inside them: a
``KeyboardInterrupt`` raised in the middle of numpy's or scipy's own imports can leave them
half-initialised, and the next import then fails with an unrelated error.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType

EXIT_INTERRUPTED = 130


def main() -> int:
    """Import the command line with Ctrl-C held back, then run it (or stop, if one came)."""
    interrupted: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        interrupted.append(signum)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        from fedfit.prefetch import for_command

        for_command(sys.argv[1:])  # the data set's files read meanwhile, on a thread
        from fedfit.cli import main as cli_main
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        print("fedfit: interrupted during start-up", file=sys.stderr)
        return EXIT_INTERRUPTED
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
