"""How many threads torch gets: fedfit picks them, ``simulation.torch_threads`` overrides.

Small models gain nothing from intra-op parallelism, and on a machine with any other load a
second intra-op thread waits for a core at every operation's barrier, which makes a client
update several times slower (bench/RESULTS.md, "Threads"). So fedfit trains each task on one
intra-op thread (in the driver and in every pool worker; this also makes training bitwise the
same in any process), and by default (``"auto"``) runs the driver's own work — evaluation,
aggregation, cost measurement — on one thread too: parallelism comes from devices training
concurrently (the default ``simulation.executor: auto``, :func:`auto_executor`; or ``threads``
or ``process``, one worker per core with ``workers: auto``), not from threads inside one small op. A number overrides the driver's count (say, a big model
evaluated on an idle many-core machine); training stays at one thread per task.

>>> driver_threads("auto"), driver_threads(4)
(1, 4)
>>> pool_workers("auto", cores=8), pool_workers(3, cores=8)
(8, 3)
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import torch

Auto = Literal["auto"]


def driver_threads(setting: int | Auto) -> int:
    """Intra-op threads of the driver process for ``simulation.torch_threads``."""
    return 1 if setting == "auto" else setting


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity, where the platform reports one."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, cores or 1)


def pool_workers(setting: int | Auto, cores: int | None = None) -> int:
    """Worker processes for ``simulation.workers``: ``"auto"`` is one per core this process may
    run on (its CPU affinity, where the platform reports one)."""
    if setting != "auto":
        return setting
    return max(1, usable_cores() if cores is None else cores)


def auto_executor(zoo_model: bool, cores: int | None = None) -> tuple[Literal["local", "threads"], int]:
    """``simulation.executor: auto``: the executor and its workers for this machine.

    ``threads`` with one worker per core this process may run on, when there are two or more
    and the model is the zoo's; ``local`` on one core, or for a user's module, which may draw
    torch's global random generator (dropout) and would then draw it in a different order on
    concurrent threads from run to run.

    >>> auto_executor(True, cores=8), auto_executor(True, cores=1), auto_executor(False, cores=8)
    (('threads', 8), ('local', 1), ('local', 1))
    """
    workers = pool_workers("auto", cores)
    return ("threads", workers) if zoo_model and workers > 1 else ("local", 1)


@contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Run the block with ``threads`` intra-op threads; the caller's count is restored after."""
    before = torch.get_num_threads()
    if threads != before:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
