"""Spare the import of ``torch._dynamo`` (about 1.8 s of CPU, as long as importing torch itself).

torch wraps a few eager functions in ``torch._disable_dynamo``: optimizer bookkeeping
(``Optimizer.add_param_group``, ``state_dict``, ``load_state_dict``, ``zero_grad``) and every
``TorchDispatchMode`` subclass's ``__torch_dispatch__`` (``FlopCounterMode``, the cost model's
byte counter). On its first call the wrapper imports ``torch._dynamo`` only to build "this
function, never compiled", and caches that as the function's ``__dynamo_disable`` attribute.
fedfit runs eagerly and never calls ``torch.compile``, so :func:`spare_dynamo_import` seeds that
cache with the function itself: the same eager code runs (results are bit-identical), without
the import. Once ``torch._dynamo`` is imported anyway (a user's own ``torch.compile``), it seeds
nothing, and functions already seeded keep running eagerly as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import torch

#: The attribute ``torch._disable_dynamo``'s wrapper caches its disabled function under.
CACHE_ATTRIBUTE = "__dynamo_disable"


def _optimizer_methods() -> list[Callable[..., Any]]:
    opt = torch.optim.Optimizer
    return [opt.add_param_group, opt.state_dict, opt.load_state_dict, opt.zero_grad]


def spare_dynamo_import(*functions: Callable[..., Any]) -> int:
    """Seed the disable-dynamo cache of ``functions`` (default: torch's optimizer methods and
    ``FlopCounterMode``'s dispatch) so their first call does not import ``torch._dynamo``.

    Returns:
        How many functions were seeded (0 once ``torch._dynamo`` is imported, or for functions
        torch does not wrap).
    """
    if "torch._dynamo" in sys.modules:
        return 0
    if not functions:
        from torch.utils import flop_counter

        functions = (*_optimizer_methods(), flop_counter._FlopCounterMode.__torch_dispatch__)
    seeded = 0
    for fn in functions:
        raw = getattr(fn, "__wrapped__", None)
        if raw is not None and getattr(raw, CACHE_ATTRIBUTE, None) is None:
            setattr(raw, CACHE_ATTRIBUTE, raw)
            seeded += 1
    return seeded
