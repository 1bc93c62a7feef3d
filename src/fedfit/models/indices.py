"""Which units of each hidden dimension a sub-model keeps: one mechanism, three choices.

* ``prefix``     — the first k units (HeteroFL, Diao et al. 2021; FjORD's ordered dropout,
  Horváth et al. 2021): nested sub-models, the narrow ones inside the wide ones;
* ``random``     — k units drawn without replacement from (seed, device, round) (federated
  dropout, Caldas et al. 2018, "Expanding the Reach of Federated Learning by Reducing Client
  Resource Requirements");
* ``importance`` — the k units with the largest accumulated update magnitude (structured
  pruning by channel statistics, :mod:`fedfit.models.channel_stats`); ties and units never
  scored fall back to index order, so with no statistics it equals ``prefix``.

Each returns a :class:`~fedfit.models.coordinates.CoordinateMap`. Pure: no global RNG.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
import torch

from fedfit.errors import PlanError
from fedfit.models.coordinates import CoordinateMap, WidthGroup, width_groups
from fedfit.models.zoo import ModelSpec

IndexChoice = Literal["prefix", "random", "importance"]
INDEX_CHOICES: tuple[str, ...] = ("prefix", "random", "importance")


def _check_counts(groups: Sequence[WidthGroup], counts: Mapping[str, int]) -> None:
    names = {g.name for g in groups}
    if set(counts) != names:
        raise PlanError(f"sub-model width groups {sorted(counts)} do not match the master's {sorted(names)}")
    for g in groups:
        if not 1 <= counts[g.name] <= g.size:
            raise PlanError(f"width group '{g.name}': sub-model keeps {counts[g.name]} units, master has {g.size}")


def _random_indices(size: int, k: int, seed: int, device_id: int, round_: int, salt: int) -> torch.Tensor:
    rng = np.random.default_rng([seed, device_id, round_, salt, 0xD40])
    return torch.from_numpy(np.sort(rng.choice(size, size=k, replace=False))).to(torch.int64)


def _top_indices(scores: torch.Tensor | None, size: int, k: int) -> torch.Tensor:
    if scores is None:
        return torch.arange(k)
    order = sorted(range(size), key=lambda i: (-float(scores[i]), i))
    return torch.tensor(sorted(order[:k]), dtype=torch.int64)


def choose_map(
    groups: Sequence[WidthGroup],
    counts: Mapping[str, int],
    choice: str,
    *,
    seed: int = 0,
    device_id: int = 0,
    round_: int = 0,
    scores: Mapping[str, torch.Tensor] | None = None,
) -> CoordinateMap:
    """The coordinate map keeping ``counts[g]`` units of each master group ``g``.

    Args:
        groups: the master's width groups.
        counts: units the sub-model has per group (from the sub-model's own groups).
        choice: ``prefix``, ``random`` or ``importance``.
        seed, device_id, round_: fix the draw of ``random``.
        scores: per-group unit scores for ``importance`` (missing: index order).

    Raises:
        PlanError: counts that do not fit the master, or an unknown choice.

    >>> from fedfit.models.coordinates import WidthGroup
    >>> choose_map([WidthGroup("h", 4, ())], {"h": 2}, "importance",
    ...            scores={"h": torch.tensor([0.1, 0.9, 0.0, 0.5])}).kept["h"]
    tensor([1, 3])
    """
    _check_counts(groups, counts)
    kept: dict[str, torch.Tensor] = {}
    for salt, g in enumerate(groups):
        k = counts[g.name]
        if k == g.size:
            continue
        if choice == "prefix":
            kept[g.name] = torch.arange(k)
        elif choice == "random":
            kept[g.name] = _random_indices(g.size, k, seed, device_id, round_, salt)
        elif choice == "importance":
            kept[g.name] = _top_indices((scores or {}).get(g.name), g.size, k)
        else:
            raise PlanError(f"width.indices: unknown choice '{choice}' (known: {', '.join(INDEX_CHOICES)})")
    return CoordinateMap(tuple(groups), kept)


def width_counts(spec: ModelSpec, width: float) -> dict[str, int]:
    """Units per width group of ``spec``'s sub-model at ``width`` (relative to the master).

    Raises:
        PlanError: a width outside (0, 1], or a width below 1 on a model with nothing to slice.
    """
    if not 0.0 < width <= 1.0:
        raise PlanError(f"plan width {width}: must be in (0, 1]")
    groups = width_groups(spec.build(width))
    if width < 1.0 and not groups:
        raise PlanError(f"plan width {width}: model '{spec.name}' has no hidden dimension to scale")
    return {g.name: g.size for g in groups}


def sub_map(spec: ModelSpec, width: float, choice: str = "prefix",
            scores: Mapping[str, torch.Tensor] | None = None) -> CoordinateMap:
    """The coordinate map of ``spec``'s sub-model at ``width`` (deterministic choices only)."""
    groups = width_groups(spec.build())
    return choose_map(groups, width_counts(spec, width), choice, scores=scores)
