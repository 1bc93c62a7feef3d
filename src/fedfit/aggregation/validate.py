"""Validation of incoming updates: names, shapes, dtypes and finite values.

An update that fails is rejected and counted by the orchestrator, never averaged in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import repeat
from operator import attrgetter, itemgetter, le, methodcaller

import torch

from fedfit.errors import UpdateRejected
from fedfit.types import Params


def validate_params(master: Params, params: Params, *, known_finite: bool = False) -> None:
    """Raise :class:`UpdateRejected` unless ``params`` matches ``master`` and is finite.

    Names must be a subset of the master's; each tensor has the master's shape and dtype.
    ``known_finite``: every floating tensor of ``params`` is already known finite (checked for
    a whole round at once by :func:`finite_rows`), so only names, shapes and dtypes are checked.
    """
    for name, value in params.items():
        ref = master.get(name)
        if ref is None:
            raise UpdateRejected(f"unknown parameter '{name}'")
        if not isinstance(value, torch.Tensor) or value.shape != ref.shape:
            shape = getattr(value, "shape", type(value).__name__)
            raise UpdateRejected(f"parameter '{name}' has shape {tuple(shape)}, expected {tuple(ref.shape)}")
        if value.dtype != ref.dtype:
            raise UpdateRejected(f"parameter '{name}' has dtype {value.dtype}, expected {ref.dtype}")
        if not known_finite and value.is_floating_point() and not all_finite(value):
            raise UpdateRejected(f"parameter '{name}' has non-finite values")


def all_finite(value: torch.Tensor) -> bool:
    """Whether every entry of the floating-point tensor ``value`` is finite.

    A sum is finite only if every term is (a NaN or an infinity never sums back to a finite
    number), so a finite sum settles it in one pass with no mask tensor; only a non-finite sum
    (a non-finite entry, or finite entries overflowing) needs the entry-wise check.

    >>> [all_finite(torch.tensor(v)) for v in ([1.0, 2.0], [3e38, 3e38], [1.0, float("nan")])]
    [True, True, False]
    """
    return math.isfinite(float(value.sum())) or bool(torch.isfinite(value).all())


def finite_rows(updates: Sequence[Params]) -> list[bool]:
    """Whether every floating tensor of each of ``updates`` is known finite, in one check per
    parameter name and shape for the whole batch (as :func:`all_finite` says of each tensor).

    ``False`` only means "not known": a non-tensor value, or a row whose stacked sum is not
    finite (an entry not finite, or finite entries overflowing) and has a non-finite entry.

    >>> finite_rows([{"w": torch.tensor([1.0])}, {"w": torch.tensor([float("inf")])}, {"w": 3}])
    [True, False, False]
    """
    known = [True] * len(updates)
    groups: dict[tuple[str, tuple[int, ...], torch.dtype], list[int]] = {}
    for i, params in enumerate(updates):
        for name, value in params.items():
            if not isinstance(value, torch.Tensor):
                known[i] = False
            elif value.is_floating_point():
                groups.setdefault((name, tuple(value.shape), value.dtype), []).append(i)
    for (name, shape, _), rows in groups.items():
        if math.prod(shape) == 0:
            continue  # no entries: vacuously finite
        for i, finite in zip(rows, _finite_stacked([updates[i][name] for i in rows]), strict=True):
            known[i] = known[i] and finite
    return known


def valid_rows(master: Params, updates: Sequence[Params]) -> list[bool]:
    """Whether each of ``updates`` is known to pass :func:`validate_params` against ``master``
    (names among the master's, its shapes and dtypes, every floating value finite), checked a
    parameter name at a time for the whole batch, the finite values as :func:`finite_rows` does.

    ``False`` only means "not known": such an update is checked on its own, so the error that
    rejects it is :func:`validate_params`'s.

    >>> master = {"w": torch.zeros(2)}
    >>> valid_rows(master, [{"w": torch.ones(2)}, {"w": torch.ones(3)}, {"v": torch.ones(2)}, {}])
    [True, False, False, True]
    """
    names = master.keys()
    known = list(map(le, map(methodcaller("keys"), updates), repeat(names)))  # params.keys() <= names
    for name, ref in master.items():
        good, values = _matching(name, ref, updates, known)
        if good and ref.is_floating_point() and ref.numel():
            finite = _finite_stacked(values)
            if all(finite):
                continue
            for i, ok in zip(good, finite, strict=True):
                known[i] = known[i] and ok
    return known


def _matching(name: str, ref: torch.Tensor, updates: Sequence[Params],
              known: list[bool]) -> tuple[list[int], list[torch.Tensor]]:
    """The rows of ``updates`` holding ``name`` as a tensor of ``ref``'s dtype and shape, and
    those tensors; the other rows holding it are marked not ``known``. When every update holds it
    as a plain tensor of one dtype and shape (a round of one model), that is read in C-level passes."""
    try:
        values = list(map(itemgetter(name), updates))
    except KeyError:
        values = []
    if values and set(map(type, values)) == {torch.Tensor} and set(map(_DTYPE, values)) == {ref.dtype} \
            and set(map(_SHAPE, values)) == {ref.shape}:
        return list(range(len(updates))), values
    good = []
    dtype, shape = ref.dtype, ref.shape
    for i, params in enumerate(updates):
        if name not in params:
            continue
        value = params[name]
        if isinstance(value, torch.Tensor) and value.dtype == dtype and value.shape == shape:
            good.append(i)
        else:
            known[i] = False
    return good, [updates[i][name] for i in good]


_DTYPE, _SHAPE = attrgetter("dtype"), attrgetter("shape")


def _finite_stacked(values: list[torch.Tensor]) -> list[bool]:
    """Whether every entry of each of ``values`` (tensors of one shape and dtype) is finite: one
    sum of the whole stack; when that is not finite, one per row, and the entries of a row whose
    sum is not finite looked at."""
    stacked = torch.stack(values).reshape(len(values), -1)
    finite = [True] * len(values)
    if math.isfinite(float(stacked.sum())):  # finite only if every entry is (as in all_finite)
        return finite
    for j in torch.nonzero(~torch.isfinite(stacked.sum(dim=1))).flatten().tolist():
        finite[j] = bool(torch.isfinite(stacked[j]).all())
    return finite


def validate_masks(params: Params, masks: dict[str, torch.Tensor] | None) -> None:
    """Raise :class:`UpdateRejected` unless every mask is a boolean tensor shaped like its parameter.

    ``None`` (every tensor held whole) always passes.
    """
    for name, mask in (masks or {}).items():
        ref = params.get(name)
        if ref is None:
            raise UpdateRejected(f"mask for '{name}', which the update does not hold")
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.shape != ref.shape:
            raise UpdateRejected(f"mask for '{name}' is not a boolean tensor of shape {tuple(ref.shape)}")
