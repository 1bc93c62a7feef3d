"""Dynamic width on a mixed fleet: full width vs common width vs capability-matched vs dropout.

Four strategies, same config and seed (examples/width.yaml: Fashion-MNIST CNN with static
batch-norm and the scaler; flagship, mid-range and older phones, smartwatches and sensors):

  (a) width-full        every device trains the full model (weak devices run out of memory or
                        miss the deadline)
  (b) width-common      every device trains the largest width all devices fit at rest
  (c) width-capability  each device its own width, from free memory and the deadline, per round
  (d) width-dropout     (c)'s widths with random units per device and round (federated dropout)

Prints full-width accuracy, accuracy of the final master per width (static-BN calibrated),
virtual time to the target accuracy, bytes moved, and the mean width per tier.

    PYTHONPATH=src .venv/bin/python bench/width.py [--rounds 30] [--config examples/width.yaml] [--tuned]

``--tuned`` also runs ``fedavg-tuned`` (its 18-point grid on the same fleet, seed and rounds, see
``bench/tuned_baseline.py``) and prints every strategy's speed-up over it.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from fedfit.config import load_config, with_overrides
from fedfit.data import build_federated_data
from fedfit.orchestrator_wiring import calibration_inputs
from fedfit.inputs import data_kwargs
from fedfit.runner import run
from fedfit.strategies import apply_strategy
from fedfit.training.static_bn import EVAL_WIDTHS, evaluate_widths
from tuned_baseline import print_ratios, tuned

STRATEGIES = ("width-full", "width-common", "width-capability", "width-dropout")


def _widths_by_tier(run_dir: Path) -> dict[str, float]:
    widths: dict[str, list[float]] = defaultdict(list)
    for line in (run_dir / "events.jsonl").read_text().splitlines():
        e = json.loads(line)
        if e["ok"]:
            widths[e["tier"]].append(e["width"])
    return {t: sum(v) / len(v) for t, v in sorted(widths.items())}


def run_strategy(base: Any, name: str, out: Path) -> dict[str, Any]:
    config = apply_strategy(base, name)
    t0 = time.perf_counter()
    result = run(config, out / name, force=True)  # a re-run replaces the previous one
    data = build_federated_data(**data_kwargs(config))
    calib = calibration_inputs(data, config.width.calibration_samples, config.seed)
    assert result.spec is not None
    rows = evaluate_widths(result.spec, result.params, calib, data.global_test.x, data.global_test.y)
    s = result.summary
    return {"strategy": name, "final": s["final_accuracy"], "best": s["best_accuracy"],
            "per_width": {r.width: r.accuracy for r in rows}, "ttt_s": s["time_to_target_s"],
            "time_s": s["virtual_time_s"], "mb": (s["bytes_up"] + s["bytes_down"]) / 2**20,
            "failures": s["failures_by_cause"], "widths": _widths_by_tier(out / name),
            "participation": s["participation_by_tier"], "wall_s": time.perf_counter() - t0}


def _fmt(seconds: float | None) -> str:
    return "never" if seconds is None else f"{seconds / 60:6.1f} min"


def print_table(rows: list[dict[str, Any]], target: float) -> None:
    head = " ".join(f"w{w:<6g}" for w in EVAL_WIDTHS)
    print(f"\n{'strategy':18} {'final':>6} {head}  {'to ' + format(target, '.2f'):>10} {'total':>10} {'MB moved':>9}")
    for r in rows:
        per = " ".join(f"{r['per_width'][w]:.4f} " for w in EVAL_WIDTHS)
        print(f"{r['strategy']:18} {r['final']:.4f} {per} {_fmt(r['ttt_s']):>10} {_fmt(r['time_s']):>10} "
              f"{r['mb']:9.1f}")
    print()
    for r in rows:
        widths = ", ".join(f"{t} {w:.3g}" for t, w in r["widths"].items())
        part = ", ".join(f"{t} {p:.0%}" for t, p in r["participation"].items())
        print(f"{r['strategy']:18} wall {r['wall_s']:5.1f} s | mean width: {widths}\n{'':18} participation: {part}"
              f" | failures: {r['failures'] or 'none'}")
    full, cap = rows[0], rows[2]
    diff = (cap["final"] - full["final"]) * 100
    speed = (full["ttt_s"] / cap["ttt_s"]) if full["ttt_s"] and cap["ttt_s"] else None
    print(f"\n(c) capability vs (a) full width: final accuracy {diff:+.2f} points (target: no worse than -1), "
          f"time-to-target speed-up {'n/a' if speed is None else format(speed, '.2f') + 'x'} (target >= 2x)")
    print(f"total wall time {sum(r['wall_s'] for r in rows):.0f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="examples/width.yaml")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--tuned", action="store_true", help="also run fedavg-tuned's grid and compare")
    args = ap.parse_args()
    base = with_overrides(load_config(args.config), {
        "orchestration.rounds": args.rounds, "output.plots": False, "output.progress": False})
    with TemporaryDirectory() as tmp:
        rows = [run_strategy(base, name, Path(tmp)) for name in STRATEGIES]
    print_table(rows, base.evaluation.target_accuracy)
    if args.tuned:
        chosen, _ = tuned(base)
        print_ratios(chosen, {r["strategy"]: {"time_to_target_s": r["ttt_s"]} for r in rows})


if __name__ == "__main__":
    main()
