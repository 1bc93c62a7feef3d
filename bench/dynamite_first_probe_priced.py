"""A σ² probe before DYNAMITE's first plan, emulated and charged on fedfit's cost model (issue 14, dyn14o).

Not the planner's code path: ``src/`` has no probe-only exchange. This emulates one. For each run
it reads round 1 of online DYNAMITE (defaults): its devices, their plans' batches b_i, their
link and compute at the start, and σ̂² after that round's aggregation (the pooled σ² probes at
the initial model: what a probe of round 1's devices at their round-1 batches reports). The
probe phase is charged on the task cost model (:mod:`fedfit.cost.time`,
:mod:`fedfit.cost.probe_work`), per device i::

    down_i = latency + param_bytes·8 / bandwidth           (the initial model)
    comp_i = probe_units(b_i, D_i, curvature=False, h) · F / (flop/s · peak · thermal)
    up_i   = latency + 8·8 / bandwidth                     (one float64 back)
    time   = max_i (down_i + comp_i + up_i)
    energy = Σ_i compute_power · comp_i + radio_power · (down_i + up_i)

Devices offline at the start (no bandwidth) cannot probe and are left out; they fail round 1
at dispatch anyway. Then the run is re-made with ``dynamite.prior.sigma2`` = that σ̂², the
virtual clock starting at ``time`` and the planner's spent time and joules starting at ``time``
and ``energy`` (so the first plan's budget is what is left), twice:

* **round 1 re-downloads**: as fedfit charges today, every task's download (the probed device
  is sent the model again with its plan);
* **keeps the model**: round 1's tasks are charged no download (``task_costs`` patched here for
  round 0: download time, its radio joules and bytes removed): what a probe-only exchange whose
  devices keep the initial model for round 1 would cost. No device outside round 1 probed.

Round 1's tasks still take their own σ² and curvature probes (every round does). Prints per run
σ̂², the probe phase's charge, and virtual seconds and fleet joules to the target for each
variant (probe phase included; "-": not reached within the budget)::

    PYTHONPATH=src:bench python bench/dynamite_first_probe_priced.py --datasets digits --seeds 0 1 [--budget-s 30] [--jobs 2]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import fedfit.simulation.fleet as sim_fleet

from fedfit.config import ExperimentConfig
from fedfit.cost.probe_work import probe_units
from fedfit.cost.time import THERMAL_FACTOR, transfer_time_s
from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.types import TaskCost, TrainPlan

from dynamite_first_plan import online, run_jobs
from dynamite_first_plan import to_target as run_to_target


def probe_phase(config: ExperimentConfig) -> tuple[float, float, float, int]:
    """(σ̂² after round 1, the probe phase's virtual seconds, its joules, devices probed)."""
    with built(config) as exp:
        fleet = exp.fleet
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            model = planner._model
            time_s, energy_j, n = 0.0, 0.0, 0
            for r in outcome.results:
                d = r.plan.device_id
                profile, state = fleet.profile(d), fleet.snapshot(d, 0.0)
                examples = fleet.num_examples(d)
                batch = min(r.plan.effective_batch, examples)
                units = probe_units(batch, examples, curvature=False, half_batch=profile.utilisation.half_batch)
                rate = profile.flops_per_s * profile.utilisation.peak * THERMAL_FACTOR[state.thermal]
                comp = units * model.train_flops_per_sample / rate
                down = transfer_time_s(model.param_bytes, state.bandwidth_bps, profile.latency_s)
                up = transfer_time_s(8, state.bandwidth_bps, profile.latency_s)
                if not state.online or not math.isfinite(down + up):
                    continue  # unreachable at the start: it cannot probe (nor report)
                time_s = max(time_s, down + comp + up)
                energy_j += profile.compute_power_w * comp + profile.radio_power_w * (down + up)
                n += 1
            return planner.estimator.sigma2 or 1.0, time_s, energy_j, n
    raise RuntimeError("no round ran")


def _kept(plans: Sequence[TrainPlan], profiles: Sequence[Any], *args: Any) -> list[TaskCost]:
    """``task_costs`` with round 1's downloads removed (its devices kept the probed initial model)."""
    costs = _task_costs(plans, profiles, *args)
    return [dataclasses.replace(c, download_s=0.0, bytes_down=0,
                                energy_j=c.energy_j - pr.radio_power_w * c.download_s)
            if plan.round == 0 else c for plan, pr, c in zip(plans, profiles, costs, strict=True)]


_task_costs = getattr(sim_fleet, "task_costs")  # the fleet's own, restored after every run


def to_target(config: ExperimentConfig, budget_s: float, start_s: float, start_j: float, keep: bool = False) -> str:
    """Virtual seconds and fleet joules to the target from a run started after the probe phase
    (``keep``: round 1's devices are charged no download)."""
    setattr(sim_fleet, "task_costs", _kept if keep else _task_costs)
    try:
        return run_to_target(config, budget_s, start_s, start_j, precise=True)
    finally:
        setattr(sim_fleet, "task_costs", _task_costs)


def one(job: tuple[str, int, float]) -> str:
    dataset, seed, budget_s = job
    sigma2, time_s, energy_j, n = probe_phase(online(dataset, seed, budget_s))
    priced = to_target(online(dataset, seed, budget_s, sigma2), budget_s, time_s, energy_j)
    kept = to_target(online(dataset, seed, budget_s, sigma2), budget_s, time_s, energy_j, keep=True)
    return (f"{dataset:13s} {seed:3d}  first σ̂² {sigma2:7.2f}  probe phase {time_s:5.3f} s {energy_j:5.2f} J"
            f" ({n} devices)  round 1 re-downloads: {priced}  keeps the model: {kept}")


def main() -> None:
    run_jobs(one, __doc__.splitlines()[0])

if __name__ == "__main__":
    main()
