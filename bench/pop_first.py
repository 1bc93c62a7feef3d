"""Pop a round's results first, or one at a time between training steps: CPU ms per round, one process.

The fleet of ``bench/scale.py fleet`` (lazy traces, three phone tiers, logistic regression on
synthetic data) with N devices and K per round runs R rounds; the sync orchestrator's collect
alternates round by round between ``SimulatedFleet.next_results`` (every due result popped,
then trained in the same order) and the one-at-a-time contract (``next_result`` after each
training, what the orchestrator did before). Both give the same results; rounds in one process,
alternating, see the same host load, which separate processes a minute apart do not. Reports per
mode the mean CPU ms per round (``time.process_time``, rounds 2..R) of everything, of training
(the executor's), and of the rest (orchestration and evaluation).

    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python bench/pop_first.py --devices 1000000 --per-round 1000 --rounds 21
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import scale  # noqa: E402  (bench/scale.py: its executor timers)

from fedfit.config import parse_config  # noqa: E402
from fedfit.experiment import build  # noqa: E402
from fedfit.orchestration import contract, sync  # noqa: E402


class _OneByOne:
    """The fleet without ``next_results``: read through ``next_result`` one at a time."""

    def __init__(self, fleet: Any) -> None:
        self._fleet = fleet

    def __getattr__(self, name: str) -> Any:
        if name == "next_results":
            raise AttributeError(name)
        return getattr(self._fleet, name)


def run(devices: int, per_round: int, rounds: int) -> dict[str, list[tuple[float, float]]]:
    third = devices // 3
    exp = build(parse_config({
        "seed": 0, "model": {"name": "logreg"},
        "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "pool": min(devices, 1000),
                 "max_train_samples": 50_000, "max_test_samples": 500},
        "fleet": {"tiers": {"flagship_phone": third, "midrange_phone": third, "older_phone": devices - 2 * third},
                  "trace_model": "lazy"},
        "training": {"batch_size": 16, "max_steps": 4},
        "orchestration": {"rounds": rounds, "clients_per_round": per_round},
        "output": {"plots": False, "progress": False},
        "simulation": {"executor": "local"}}))
    parts = scale._Parts()
    exp.fleet._executor = scale._TimedEach(exp.fleet._executor, parts)  # type: ignore[assignment]
    mode = ["batch"]

    def due(fleet: Any, until_s: float, wanted: int, round_: int) -> Any:
        return contract.due_results(fleet if mode[0] == "batch" else _OneByOne(fleet), until_s, wanted, round_)

    sync.due_results = due  # type: ignore[assignment]
    rows: dict[str, list[tuple[float, float]]] = {"batch": [], "one_by_one": []}
    c0, t0 = time.process_time(), 0.0
    for i, _ in enumerate(exp.orchestrator.rounds(exp.initial_params)):  # type: ignore[union-attr]
        c1, t1 = time.process_time(), parts.seconds().get("training", 0.0)
        if i > 0:  # round 1 warms up
            rows[mode[0]].append(((c1 - c0) * 1e3, (t1 - t0) * 1e3))
        mode[0] = "one_by_one" if i % 2 == 0 else "batch"
        c0, t0 = time.process_time(), t1
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--per-round", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    for mode, rs in run(args.devices, args.per_round, args.rounds).items():
        n = len(rs)
        print(f"{mode}: rounds={n} total_ms={sum(r[0] for r in rs) / n:.0f} training_ms={sum(r[1] for r in rs) / n:.0f} "
              f"rest_ms={sum(r[0] - r[1] for r in rs) / n:.1f} rest_each={[round(r[0] - r[1]) for r in rs]}", flush=True)


if __name__ == "__main__":
    main()
