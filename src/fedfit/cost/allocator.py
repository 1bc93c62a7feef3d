"""Measure peak live tensor bytes with the tensor allocator (``torch.profiler`` memory events).

The reference for the memory model (:mod:`fedfit.cost.memory`): the profiler records every
allocation and free of the CPU tensor allocator, so the running sum of the events is the bytes
of live tensors at each moment and its maximum is the peak, independent of the process's other
memory (interpreter, libraries, allocator caching). Like :mod:`fedfit.cost.profile` this runs
the real module, and is one of the cost model's few impure parts.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator

import torch
from torch import nn
from torch._C._autograd import DeviceType
from torch.autograd.profiler import profile

from fedfit.models.custom import probe_inputs


#: The profiler is process-wide: two threads profiling at once crash it (in-process deployment tests).
_PROFILING = threading.Lock()


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 (the profiler's C++ start/stop log lines) for the block."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_live_bytes(run: Callable[[], object]) -> int:
    """Peak growth of live CPU tensor bytes while ``run()`` runs (0 if it only frees).

    Tensors alive before the call (and not freed in it) are not counted; what ``run`` returns
    is freed only after the measurement ends, so it counts as live to the end.
    """
    # torch.autograd's profiler, which torch.profiler.profile wraps: the wrapper's start probes
    # torch._inductor, which imports torch._dynamo (~1.8 s) for nothing measured here.
    with _PROFILING, _quiet_stderr(), profile(use_cpu=True, profile_memory=True, use_kineto=True) as prof:
        result = run()
    del result
    events = prof.kineto_results.events() if prof.kineto_results else []
    deltas = sorted((e.start_ns(), i, e.nbytes()) for i, e in enumerate(events)
                    if e.name() == "[memory]" and e.device_type() == DeviceType.CPU)
    live = peak = 0
    for _, _, nbytes in deltas:
        live += nbytes
        peak = max(peak, live)
    return peak


def step_peak_bytes(model: nn.Module, input_shape: tuple[int, ...], num_classes: int, batch: int) -> int:
    """Peak live bytes of one plain training micro-step of ``model`` on ``batch`` samples.

    The step is what the trainer's micro-step does: the batch is gathered (allocated) inside
    the step, then forward, summed cross-entropy over the batch, backward; gradients start
    empty and are freed afterwards. The model's weights exist before and are not counted. It
    runs on one intra-op thread (kernels' scratch depends on the thread count), so the figure,
    and every virtual time derived from it, is the same on any host.
    """
    x = probe_inputs(input_shape, batch)  # uniform on [0, 1): valid as images and as token ids
    y = torch.randint(0, num_classes, (batch,), generator=torch.Generator().manual_seed(0))
    index = torch.arange(batch)

    def step() -> None:
        loss = nn.functional.cross_entropy(model(x[index]), y[index], reduction="sum") / batch
        loss.backward()

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model.zero_grad(set_to_none=True)
        step()  # warm-up: lazily initialised kernels and caches are not part of a step's peak
        model.zero_grad(set_to_none=True)
        return peak_live_bytes(step)
    finally:
        model.zero_grad(set_to_none=True)
        torch.set_num_threads(threads)
