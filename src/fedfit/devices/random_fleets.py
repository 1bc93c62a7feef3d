"""Seeded random fleets: configs no one tuned anything on (the generalisation benchmark's input).

:func:`random_fleet` draws one experiment as a raw config mapping (the YAML a user would write):
a data set × model pair, a label skew, a mix of 2–4 catalogue tiers with random counts and 1–2
custom tiers whose training memory lies near the model's own footprint (1.05–3× the predicted
peak of one plain sample), small data and a short run. :func:`random_fleets` draws ``count`` of
them, cycling through every data set × model pair in a seeded order so eight fleets cover all.
Pure: the same (seed, index) gives the same mapping; the caller supplies the tier names and the
model footprint, so nothing here depends on torch or on any example.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

#: Every (data set, model) pair drawn. Synthetic data are vectors, so no CNN on them.
PAIRS: tuple[tuple[str, str], ...] = (
    ("fashion_mnist", "logreg"), ("fashion_mnist", "mlp"), ("fashion_mnist", "cnn"),
    ("digits", "logreg"), ("digits", "mlp"), ("digits", "cnn"),
    ("synthetic", "logreg"), ("synthetic", "mlp"),
)
ALPHAS: tuple[float, ...] = (0.1, 0.5, 1.0)

#: Bytes of the predicted peak of one plain training sample of ``model`` on ``dataset``.
Footprint = Callable[[str, str], int]


def _pair(seed: int, index: int, datasets: Sequence[str] | None) -> tuple[str, str]:
    order = [p for p in PAIRS if datasets is None or p[0] in datasets]
    if not order:
        raise ValueError(f"no data set × model pair for data sets {list(datasets or [])}")
    random.Random(seed).shuffle(order)
    return order[index % len(order)]


def _tiers(rng: random.Random, builtin: Sequence[str], footprint: int, index: int) -> tuple[dict[str, int],
                                                                                            dict[str, Any]]:
    """Counts per tier (2–4 catalogue tiers, 1–2 custom ones) and the custom tiers' specs."""
    names = rng.sample(sorted(builtin), rng.randint(2, min(4, len(builtin))))
    tiers = {name: rng.randint(1, 6) for name in names}
    custom: dict[str, Any] = {}
    for j in range(rng.randint(1, 2)):
        name = f"custom_{index}_{j}"
        base = rng.choice(sorted(builtin))
        budget = int(footprint * rng.uniform(1.05, 3.0))
        custom[name] = {"base": base, "training_memory_bytes": budget, "total_memory_bytes": 2 * budget,
                        "flops_per_s": float(f"{10 ** rng.uniform(8.5, 11):.3g}")}
        tiers[name] = rng.randint(2, 6)
    return tiers, custom


def random_fleet(seed: int, index: int, builtin: Sequence[str], footprint: Footprint, rounds: int = 20,
                 train_samples: int = 1500, datasets: Sequence[str] | None = None) -> dict[str, Any]:
    """Fleet ``index`` of generator ``seed`` as a raw config mapping.

    Args:
        seed: generator seed (also the experiment's seed).
        index: which fleet of this generator (the data set × model pair cycles with it).
        builtin: catalogue tier names to draw from.
        footprint: predicted peak bytes of one plain sample for a (data set, model) pair.
        rounds: rounds (server versions) of the run.
        train_samples: training samples over the whole fleet.
        datasets: draw only pairs on these data sets (``None``: every pair of :data:`PAIRS`).
    """
    rng = random.Random(f"{seed}/{index}")
    dataset, model = _pair(seed, index, datasets)
    alpha = rng.choice(ALPHAS)
    tiers, custom = _tiers(rng, builtin, footprint(dataset, model), index)
    devices = sum(tiers.values())
    partition: dict[str, Any] = {"kind": "natural"} if dataset == "synthetic" else {"kind": "dirichlet", "alpha": alpha}
    data: dict[str, Any] = {"dataset": dataset, "partition": partition, "max_train_samples": train_samples,
                            "max_test_samples": 300, "local_test_fraction": 0.2}
    if dataset == "synthetic":  # its own heterogeneity: Synthetic(α', α') with α' = 1 − α (0.9, 0.5, 0)
        data["synthetic"] = {"alpha": round(1.0 - alpha, 2), "beta": round(1.0 - alpha, 2)}
    return {
        "name": f"fleet{index}", "seed": seed, "data": data, "model": {"name": model},
        "fleet": {"tiers": tiers, "custom_tiers": custom, "catalogue": "scaled"},
        "training": {"lr": 0.1},
        "orchestration": {"rounds": rounds, "clients_per_round": max(3, devices // 3)},
        "evaluation": {"every": 1},
        "output": {"plots": False, "progress": False, "checkpoint_every": 0},
    }


def random_fleets(seed: int, count: int, builtin: Sequence[str], footprint: Footprint, rounds: int = 20,
                  train_samples: int = 1500, datasets: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """``count`` fleets of generator ``seed`` (see :func:`random_fleet`)."""
    return [random_fleet(seed, i, builtin, footprint, rounds, train_samples, datasets) for i in range(count)]
