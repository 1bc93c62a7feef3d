"""A zoo model's per-stage costs, measured the first time something reads them.

Only the techniques' cost formulas (:mod:`fedfit.cost.techniques`) read
:attr:`~fedfit.cost.profile.ModelCost.stages`, and only for a plan with a technique on; yet
measuring them (a forward and backward of every stage at five micro-batches under the tensor
allocator's profiler) is most of :func:`~fedfit.cost.profile.measure`'s time (≈ 0.1–0.25 s for
the MLP), paid in the first round of every run. :class:`LazyStages` is the tuple
:func:`~fedfit.cost.stages.measure_stages` returns, measured on first use with the intra-op
thread count of its creation and grad mode on, as ``measure`` ran it; it equals, compares,
hashes and pickles as that tuple (``tests/cost/test_lazy_stages.py``). The measurement draws
no random number from the global generator (its probe inputs are seeded), so when it runs
changes nothing else in a run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import overload

import torch

from fedfit.cost.stages import StageCost


class LazyStages(Sequence[StageCost]):
    """``measure()``'s per-stage costs, taken on first use (length, item, iteration, equality)."""

    __slots__ = ("_measure", "_threads", "_value")

    def __init__(self, measure: Callable[[], tuple[StageCost, ...]]) -> None:
        self._measure: Callable[[], tuple[StageCost, ...]] | None = measure
        self._threads = torch.get_num_threads()
        self._value: tuple[StageCost, ...] | None = None

    def value(self) -> tuple[StageCost, ...]:
        """The stages' costs (measured now if not yet)."""
        if self._value is None:
            assert self._measure is not None  # cleared only once the value is set
            threads = torch.get_num_threads()
            if threads != self._threads:
                torch.set_num_threads(self._threads)
            try:
                with torch.enable_grad():
                    self._value = self._measure()
            finally:
                if threads != self._threads:
                    torch.set_num_threads(threads)
            self._measure = None  # the model it measured is not kept
        return self._value

    def __len__(self) -> int:
        return len(self.value())

    @overload
    def __getitem__(self, index: int) -> StageCost: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[StageCost, ...]: ...

    def __getitem__(self, index: int | slice) -> StageCost | tuple[StageCost, ...]:
        return self.value()[index]

    def __iter__(self) -> Iterator[StageCost]:
        return iter(self.value())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyStages):
            other = other.value()
        return isinstance(other, tuple) and self.value() == other

    def __hash__(self) -> int:
        return hash(self.value())

    def __repr__(self) -> str:
        return repr(self.value()) if self._value is not None else "LazyStages(not measured yet)"

    def __reduce__(self) -> tuple[type[tuple[StageCost, ...]], tuple[tuple[StageCost, ...]]]:
        return tuple, (self.value(),)
