"""The ``fedavg-tuned`` entry of ``fedfit compare``: run its grid on the fleet and seed, print it,
and return the chosen configuration (:func:`fedfit.tuning.tune`)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from fedfit.config import ExperimentConfig, with_overrides
from fedfit.runner import run
from fedfit.strategies import TUNED
from fedfit.tuning import GridResult, tune


def _grid_row(r: GridResult) -> dict[str, Any]:
    p = r.point
    return {"batch": p.batch, "deadline_quantile": p.quantile, "deadline_s": p.deadline_s,
            "over_selection": p.over_selection, "time_to_target_s": r.time_to_target_s,
            "final_accuracy": r.final_accuracy, "virtual_time_s": r.virtual_time_s}


def tuned_config(base: ExperimentConfig, console: Console, quiet: bool) -> tuple[ExperimentConfig, dict[str, Any]]:
    """fedavg-tuned: run its grid (no run directories), return the chosen config and the grid."""
    silent = base.model_copy(update={"output": base.output.model_copy(update={"progress": False, "plots": False})})
    chosen, results = tune(silent, lambda c: run(c).summary)
    grid = {"chosen": _grid_row(chosen), "grid": [_grid_row(r) for r in results]}
    if not quiet:
        t = Table(title=f"{TUNED}: grid on this fleet and seed (chosen: batch {chosen.point.batch}, "
                        f"deadline {chosen.point.deadline_s}, over-selection {chosen.point.over_selection})")
        for col in ("batch", "deadline", "over-selection", "time to target", "final acc"):
            t.add_column(col)
        for r in results:
            q = "none" if r.point.quantile is None else f"p{r.point.quantile * 100:.0f} = {r.point.deadline_s:.1f} s"
            reached = "not reached" if r.time_to_target_s is None else f"{r.time_to_target_s:.1f} s"
            t.add_row(str(r.point.batch), q, f"{r.point.over_selection:g}", reached,
                      f"{r.final_accuracy:.4f}")
        console.print(t)
    config = with_overrides(base, chosen.point.overrides()).model_copy(update={"name": f"{base.name}:{TUNED}"})
    return config, grid
