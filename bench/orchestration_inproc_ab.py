"""In-process paired A/B of the orchestration per round: two source trees' experiments built in
one process and their rounds stepped alternately, so both see the same moments of a shared host.

Each tree's ``fedfit`` is imported under its own module objects (the other tree's are swapped
out of ``sys.modules`` while a tree runs, so its function-level imports find its own code). Both
build ``bench/scale.py fleet``'s experiment (same config, same seed) and their round generators
are stepped in the order A, B on even rounds and B, A on odd ones. A round's figure is its
process CPU time less the training and evaluation inside it (timed as ``scale.py`` times them:
training once per batch of tasks), in ms; rounds after the first are compared, paired by round
(both trees run the same round of the same run, so the differences cancel what the host did).
The last line compares each round's model bytes and report of the two trees (``same_results``).

    git archive main src | tar -x -C /tmp/ref
    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/orchestration_inproc_ab.py --ref /tmp/ref/src --rounds 21
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import scale

Modules = dict[str, Any]


def _ours(name: str) -> bool:
    return name == "fedfit" or name.startswith("fedfit.")


def _install(modules: Modules) -> None:
    for name in [m for m in sys.modules if _ours(m)]:
        del sys.modules[name]
    sys.modules.update(modules)


def _load(tree: Path) -> tuple[Modules, Any]:
    """``tree``'s fedfit modules (imported fresh) and its ``experiment.build``."""
    _install({})
    sys.path.insert(0, str(tree))
    try:
        importlib.import_module("fedfit.config")
        importlib.import_module("fedfit.experiment")
    finally:
        sys.path.remove(str(tree))
    return {k: v for k, v in sys.modules.items() if _ours(k)}, sys.modules["fedfit.experiment"]


class _Side:
    """One tree's experiment, its timers and its round generator."""

    def __init__(self, tree: Path, devices: int, per_round: int, rounds: int) -> None:
        self.modules, experiment = _load(tree)
        config = self.modules["fedfit.config"].parse_config(scale.fleet_config(devices, per_round, rounds))
        exp = experiment.build(config)
        self.parts = scale._Parts()
        exp.fleet._executor = scale._Timed(exp.fleet._executor, self.parts)
        self.parts.wrap(exp.orchestrator, "evaluator", "evaluation")
        self.rounds: Iterator[Any] = exp.orchestrator.rounds(exp.initial_params)
        self.ms: list[float] = []
        self.outcomes: list[tuple[bytes, str]] = []

    def step(self) -> None:
        _install(self.modules)
        before = self.parts.seconds()
        c0 = time.process_time()
        outcome = next(self.rounds)
        spent = time.process_time() - c0
        after = self.parts.seconds()
        hidden = sum(after.get(k, 0.0) - before.get(k, 0.0) for k in ("training", "evaluation"))
        self.ms.append((spent - hidden) * 1e3)
        model = b"".join(t.detach().contiguous().numpy().tobytes() for t in outcome.params.values())
        report = outcome.report
        self.outcomes.append((model, repr((report.participants_by_tier, report.failures_by_tier_cause,
                                          report.virtual_time_s, report.bytes_up, report.energy_j))))


def _summary(values: list[float]) -> str:
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return (f"median {statistics.median(values):6.2f}  quartiles {q[0]:6.2f} {q[2]:6.2f}  "
            f"min {min(values):6.2f}  max {max(values):6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, required=True, help="tree A: a src folder (e.g. git archive main src)")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1] / "src", help="tree B")
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--per-round", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=21, help="rounds per tree (the first is not compared)")
    args = parser.parse_args()
    sides = {"A": _Side(args.ref.resolve(), args.devices, args.per_round, args.rounds),
             "B": _Side(args.new.resolve(), args.devices, args.per_round, args.rounds)}
    for r in range(args.rounds):
        for name in ("A", "B") if r % 2 == 0 else ("B", "A"):
            sides[name].step()
    a, b = sides["A"].ms[1:], sides["B"].ms[1:]
    print(f"{args.devices} devices x {args.per_round} per round, rounds 2..{args.rounds}; "
          f"orchestration CPU ms per round, one process")
    print(f"A {_summary(a)}  ({args.ref})")
    print(f"B {_summary(b)}  ({args.new})")
    print(f"B - A paired by round: {_summary([y - x for x, y in zip(a, b)])}")
    print(f"B / A of the medians: {statistics.median(b) / statistics.median(a):.3f}")
    print(f"same_results={sides['A'].outcomes == sides['B'].outcomes}")


if __name__ == "__main__":
    main()
