"""The fit behind :data:`fedfit.simulation.cohort_cost.MEASURED` (``batched_training.py --fit``).

Synthetic cohorts of G devices with equal data (2 or 10 steps of batch 16, 28×28 inputs, plain
SGD, lr 0.05), with and without the σ² and curvature probes: the process CPU of ``train`` one by
one (one module, weights overwritten per task, as ``Workload.run``) and of one ``train_cohort``,
the least of 3 (alternating), then a non-negative least-squares fit of the cost model's constants
to both, each row weighted by 1 / its measured time (relative errors).
"""

from __future__ import annotations

import time
from dataclasses import fields

import numpy as np
import torch
from scipy.optimize import nnls

from fedfit.models import ModelSpec
from fedfit.simulation.cohort_cost import CohortCosts, ModelWork, batched_ms, local_ms, model_work, vectorise
from fedfit.training.batched import train_cohort
from fedfit.training.trainer import train
from fedfit.types import TrainPlan

Row = tuple[str, ModelWork, int, int, bool, float, float]  # model, work, G, steps, probes, local ms, batched ms
LOCAL = ["task", "step", "mac", "probe", "probe_mac"]
BATCHED = ["cohort", "cohort_step", "device_step", "stacked_mac", "stacked_param", "cohort_probe", "device_probe",
           "stacked_probe_mac", "stacked_probe_param"]


def _cpu_ms(model: str, g: int, steps: int, probes: bool, repeats: int = 3) -> tuple[ModelWork, float, float]:
    spec = ModelSpec(model, (1, 28, 28), 10)
    module, gen = spec.build(), torch.Generator().manual_seed(g)
    start = module.state_dict()
    data = [(torch.randn(16 * steps, 1, 28, 28, generator=gen), torch.randint(0, 10, (16 * steps,), generator=gen))
            for _ in range(g)]
    plans = [TrainPlan(d, 0, micro_batch=16, lr=0.05, sigma_probe=probes, curvature_probe=probes) for d in range(g)]
    local, batched = [], []
    for _ in range(repeats):
        cpu = time.process_time()
        for (x, y), plan in zip(data, plans, strict=True):
            train(module, start, x, y, plan, seed=0)
        local.append(time.process_time() - cpu)
        cpu = time.process_time()
        train_cohort(spec.build(), [start] * g, data, plans, seed=0)
        batched.append(time.process_time() - cpu)
    return model_work(module, data[0][0][0]), 1000 * min(local), 1000 * min(batched)


def config_block(costs: CohortCosts) -> str:
    """The YAML that makes a run use ``costs`` (``simulation.batched_costs``; the margin stays)."""
    values = ", ".join(f"{f.name}: {getattr(costs, f.name)}" for f in fields(CohortCosts) if f.name != "margin")
    return f"simulation:\n  batched_costs: {{{values}}}"


def _unit(names: list[str], **values: float) -> CohortCosts:
    """Costs with every constant 0 but ``values`` (margin 0)."""
    return CohortCosts(**{f.name: values.get(f.name, 0.0) for f in fields(CohortCosts)})


def _solve(rows: list[Row], names: list[str], predict: str) -> dict[str, float]:
    """Non-negative constants ``names`` minimising the relative error of ``predict`` (local or batched)."""
    columns = []
    for name in names:
        unit = _unit(names, **{name: 1.0})
        columns.append([(local_ms if predict == "local" else batched_ms)(w, [s] * g, batch=16, probing=g if p else 0,
                                                                           costs=unit) for _, w, g, s, p, _, _ in rows])
    measured = np.array([r[5] if predict == "local" else r[6] for r in rows])
    solution, _ = nnls(np.array(columns).T / measured[:, None], np.ones(len(rows)))
    return dict(zip(names, solution.round(3).tolist(), strict=True))


def fit(models: list[str], devices: list[int]) -> CohortCosts:
    """Measure, fit, print each row against the fit, and return the fitted costs."""
    _cpu_ms(models[0], 2, 2, False, 1)  # warm-up
    rows: list[Row] = []
    for model in models:
        for probes in (False, True):
            for steps in (2, 10):
                for g in devices:
                    work, local, batched = _cpu_ms(model, g, steps, probes)
                    rows.append((model, work, g, steps, probes, local, batched))
                    print(f"measured {model} G={g} steps={steps} probes={probes}: local {local:.1f} ms, "
                          f"batched {batched:.1f} ms", flush=True)
    costs = CohortCosts(**_solve(rows, LOCAL, "local"), **_solve(rows, BATCHED, "batched"))
    print(f"\n{costs}\n\nFor this machine's config (simulation.batched_costs):\n\n{config_block(costs)}\n\n| model | G | steps | probes | local ms | batched ms | ratio | predicted ratio | "
          "vectorised |\n|---|---|---|---|---|---|---|---|---|")
    for model, work, g, steps, probes, local, batched in rows:
        kwargs = {"batch": 16, "probing": g if probes else 0, "costs": costs}
        predicted = local_ms(work, [steps] * g, **kwargs) / batched_ms(work, [steps] * g, **kwargs)  # type: ignore[arg-type]
        chosen = vectorise(work, [steps] * g, **kwargs)  # type: ignore[arg-type]
        print(f"| {model} | {g} | {steps} | {probes} | {local:.1f} | {batched:.1f} | {local / batched:.2f} | "
              f"{predicted:.2f} | {chosen}{'' if chosen <= (local >= batched) else ' (slower)'} |")
    return costs
