"""``fedavg-tuned`` for the benchmark scripts: its grid on a benchmark's own config, printed.

Runs every point of :mod:`fedfit.tuning`'s grid (plain FedAvg, batch {8, 16, 32} × deadline
{none, p50, p90 of predicted task times} × over-selection {0, 0.3}) on the same fleet, seed and
rounds as the benchmark's strategies; each point stops once it reaches the config's target, which
cannot change its time to it. Imported by ``bench/stragglers.py``, ``bench/width.py`` and
``bench/memory_techniques.py`` (``--tuned``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fedfit.config import ExperimentConfig, with_overrides
from fedfit.experiment import built
from fedfit.report.summary import summarise
from fedfit.tuning import GridResult, choose, grid, predicted_times, result_of


def run_until(config: ExperimentConfig, stop_at: float | None) -> dict[str, Any]:
    """Run ``config`` (no run directory) until its last round or until accuracy ≥ ``stop_at``."""
    reports = []
    with built(config) as exp:
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            reports.append(outcome.report)
            params = outcome.params
            if stop_at is not None and (outcome.report.accuracy or 0.0) >= stop_at:
                break
        tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    return summarise(reports, config.evaluation.target_accuracy, tiers=tiers)


def _fmt(seconds: float | None) -> str:
    return "not reached" if seconds is None else f"{seconds:.1f} s"


def tuned(base: ExperimentConfig) -> tuple[GridResult, list[GridResult]]:
    """Run the grid on ``base`` and print it; returns the chosen point's result and every point's."""
    base = with_overrides(base, {"output.progress": False})
    target = base.evaluation.target_accuracy
    results: list[GridResult] = []
    print(f"\n== fedavg-tuned grid, target {target:.2f} (batch, deadline, over-selection: time to target / "
          "accuracy when it stopped)", flush=True)
    for point in grid(predicted_times(base)):
        summary = run_until(with_overrides(base, point.overrides()), stop_at=target)
        results.append(result_of(point, summary))
        deadline = "-" if point.deadline_s is None else f"{point.deadline_s:.2f}"
        print(f"  b{point.batch} d{deadline} o{point.over_selection:g}: {_fmt(summary['time_to_target_s'])} / "
              f"{summary['final_accuracy'] or 0.0:.4f}", flush=True)
    chosen = choose(results)
    p = chosen.point
    print(f"fedavg-tuned chose b{p.batch}, deadline {p.deadline_s}, over-selection {p.over_selection:g}: "
          f"{_fmt(chosen.time_to_target_s)} (accuracy {chosen.final_accuracy:.4f})", flush=True)
    return chosen, results


def ratio(chosen: GridResult, summary: Mapping[str, Any]) -> str:
    """fedavg-tuned's time to target over a strategy's: ``≥x`` when only the strategy reached it
    (the chosen point's whole run over its time), ``—`` when the strategy did not."""
    mine = summary.get("time_to_target_s")
    if mine is None:
        return "—"
    if chosen.time_to_target_s is None:
        return f"≥{chosen.virtual_time_s / mine:.2f}×"
    return f"{chosen.time_to_target_s / mine:.2f}×"


def print_ratios(chosen: GridResult, summaries: Mapping[str, Mapping[str, Any]]) -> None:
    """One line per strategy: its time-to-target speed-up over fedavg-tuned's chosen point."""
    print(f"\ntime-to-target speed-up over fedavg-tuned ({_fmt(chosen.time_to_target_s)}):")
    for name, s in summaries.items():
        print(f"  {name:24} {_fmt(s.get('time_to_target_s')):>12}  {ratio(chosen, s)}")
