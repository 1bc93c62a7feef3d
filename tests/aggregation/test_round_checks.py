"""A round's checks read in bulk (``valid_rows``: names, types, dtypes and shapes in C-level
passes when every update holds a name alike) say what each update's own check says, on random rounds."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from fedfit.aggregation import validate_params
from fedfit.aggregation.validate import valid_rows
from fedfit.errors import UpdateRejected
from fedfit.types import Params

_MASTER = {"w": torch.zeros(3, 4), "b": torch.zeros(3), "n": torch.tensor(0)}
#: Ways an update's tensor can differ from the master's (``None``: the name left out).
_FLAWS = ("none", "missing", "nan", "inf", "overflow", "shape", "dtype", "list", "parameter", "extra")


def _update(name: str, flaw: str, g: torch.Generator) -> Params:
    params = {n: torch.randn(ref.shape, generator=g) if ref.is_floating_point() else torch.tensor(2)
              for n, ref in _MASTER.items()}
    value = params[name]
    if flaw == "missing":
        del params[name]
    elif flaw in ("nan", "inf") and value.is_floating_point():
        value.view(-1)[0] = float(flaw)
    elif flaw == "overflow" and value.is_floating_point():
        params[name] = torch.full(value.shape, 3.0e38)  # finite entries whose sum is not
    elif flaw == "shape":
        params[name] = torch.zeros(7)
    elif flaw == "dtype":
        params[name] = value.to(torch.float64 if value.is_floating_point() else torch.int32)
    elif flaw == "list":
        params[name] = value.tolist()
    elif flaw == "parameter" and value.is_floating_point():
        params[name] = torch.nn.Parameter(value, requires_grad=False)  # a tensor subclass: valid
    elif flaw == "extra":
        params["unknown"] = torch.zeros(1)
    return params


def _passes(master: Params, params: Params) -> bool:
    try:
        validate_params(master, params)
    except UpdateRejected:
        return False
    return True


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31), count=st.integers(0, 40),
       flaws=st.lists(st.tuples(st.sampled_from(sorted(_MASTER)), st.sampled_from(_FLAWS)), max_size=6))
def test_valid_rows_says_what_each_updates_own_check_says(seed: int, count: int,
                                                         flaws: list[tuple[str, str]]) -> None:
    g = torch.Generator().manual_seed(seed)
    updates = [_update("w", "none", g) for _ in range(count)]
    for i, (name, flaw) in enumerate(flaws):  # a few flawed updates among clean ones (none: all alike)
        updates.insert((i * 7 + seed) % (len(updates) + 1), _update(name, flaw, g))

    assert valid_rows(_MASTER, updates) == [_passes(_MASTER, u) for u in updates]
