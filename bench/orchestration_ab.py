"""Paired A/B of the orchestration per round: two source trees' ``bench/scale.py fleet`` rows,
alternating in child processes, so process-to-process noise stops deciding the figure.

Each pair runs one child per tree (``A`` = ``--ref``, ``B`` = ``--new``, default this
checkout's ``src``), in the order A, B on even pairs and B, A on odd ones; every child runs
this checkout's ``bench/scale.py fleet`` (what it measures is unchanged: the mean over rounds
2.. of everything but training and evaluation, CPU ms) with ``PYTHONPATH`` set to its tree and
``OMP_NUM_THREADS=1``. Reported per tree: median, mean, min and max of the children's
``orchestration_ms`` (and, with ``--breakdown``, the median of each ``*_own_ms`` part); and
the paired differences ``B - A`` (median, min, max), which cancel the load both children of a
pair saw.

    git archive main src | tar -x -C /tmp/ref
    PYTHONPATH=src .venv/bin/python bench/orchestration_ab.py --ref /tmp/ref/src --pairs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

SCALE = Path(__file__).with_name("scale.py")


def child(tree: Path, devices: int, per_round: int, rounds: int, breakdown: bool) -> dict[str, float]:
    """One ``scale.py fleet`` row of ``tree``'s code, as numbers by name."""
    command = [sys.executable, str(SCALE), "fleet", "--devices", str(devices), "--per-round", str(per_round),
               "--rounds", str(rounds), *(["--breakdown"] if breakdown else [])]
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    row = out.strip().splitlines()[-1]
    return {k: float(v) for k, v in (field.split("=", 1) for field in row.split())}


def summary(values: list[float]) -> str:
    return (f"median {statistics.median(values):6.2f}  mean {statistics.fmean(values):6.2f}  "
            f"min {min(values):6.2f}  max {max(values):6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", type=Path, required=True, help="tree A: a src folder (e.g. git archive main src)")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1] / "src", help="tree B")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--devices", type=int, default=1_000_000)
    parser.add_argument("--per-round", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=6, help="rounds per child (the first is not measured)")
    parser.add_argument("--breakdown", action="store_true", help="also the median own CPU ms of each part")
    args = parser.parse_args()
    trees = {"A": args.ref.resolve(), "B": args.new.resolve()}
    rows: dict[str, list[dict[str, float]]] = {"A": [], "B": []}
    for pair in range(args.pairs):
        for name in ("A", "B") if pair % 2 == 0 else ("B", "A"):
            row = child(trees[name], args.devices, args.per_round, args.rounds, args.breakdown)
            rows[name].append(row)
            print(f"pair {pair} {name}: orchestration_ms={row['orchestration_ms']:.2f} "
                  f"training_ms={row['training_ms']:.0f} reference_ms={row.get('reference_ms', 0.0):.2f} "
                  f"load={os.getloadavg()[0]:.1f}", flush=True)
    print(f"{args.devices} devices x {args.per_round} per round, {args.rounds} rounds a child, "
          f"{args.pairs} pairs; orchestration CPU ms per round")
    for name, tree in trees.items():
        print(f"{name} {summary([r['orchestration_ms'] for r in rows[name]])}  ({tree})")
    deltas = [b["orchestration_ms"] - a["orchestration_ms"] for a, b in zip(rows["A"], rows["B"])]
    print(f"B - A paired: {summary(deltas)}")
    for field in ("training_ms", "reference_ms", "orchestration_per_reference"):
        if all(field in r for r in rows["A"] + rows["B"]):  # the host's speed beside each tree's figure
            print(f"  {field:28s} A {statistics.median(r[field] for r in rows['A']):7.2f}  "
                  f"B {statistics.median(r[field] for r in rows['B']):7.2f}  (medians)")
    if args.breakdown:
        parts = [k for k in rows["B"][0] if k.endswith("_own_ms") or k in ("untimed_ms", "gc_ms", "timers_ms")]
        for part in parts:
            a = statistics.median(r.get(part, 0.0) for r in rows["A"])
            b = statistics.median(r.get(part, 0.0) for r in rows["B"])
            if a or b:
                print(f"  {part:28s} A {a:6.2f}  B {b:6.2f}")


if __name__ == "__main__":
    main()
