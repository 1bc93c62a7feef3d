"""Set-up work run on a thread beside the rest of a run's set-up, so the two overlap.

A run's start-up does two kinds of work: the fleet's traces (numpy draws and Python loops
that hold the interpreter lock) and reading the data set (``zlib`` decompression, ``torch``
conversions and gathers, which release it). :func:`fedfit.inputs.run_inputs` starts the
traces with :func:`started` and reads the data meanwhile; on a machine with a free core the
two take about the time of the longer instead of their sum. Nothing is shared between them,
and each uses only its own seeded random streams, so the results are those of running them
one after the other (``tests/test_overlap.py``).

>>> started(sum, [1, 2, 3]).result()
6
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

T = TypeVar("T")
P = ParamSpec("P")


class Pending(Generic[T]):
    """A call running on its own thread; :meth:`result` waits for it and returns its value or
    raises its exception (the same object, so a :class:`~fedfit.errors.ConfigError` stays one line)."""

    def __init__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        # a daemon: a run stopped early (an error, Ctrl-C) exits without waiting for its set-up
        self._thread = threading.Thread(target=self._run, args=(fn, args, kwargs), name="fedfit-setup", daemon=True)

    def _run(self, fn: Callable[..., T], args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        try:
            self._value = fn(*args, **kwargs)
        except BaseException as error:  # handed to the caller of result()
            self._error = error

    def start(self) -> Pending[T]:
        self._thread.start()
        return self

    def result(self) -> T:
        """The call's value, once it has finished (re-raises what it raised)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was raised


def started(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Pending[T]:
    """``fn(*args, **kwargs)`` started on its own thread."""
    return Pending(fn, *args, **kwargs).start()
