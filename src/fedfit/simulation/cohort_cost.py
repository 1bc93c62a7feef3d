"""Whether to train a cohort as one vectorised op or one device after another: a CPU cost model.

One by one, every device pays Python and kernel-launch overhead per task and per step, plus its
arithmetic; vectorised, the cohort pays that overhead once per step but every device's
parameters are streamed through memory by the stacked gradient and update (and by the probes),
where one device's parameters alone would stay in cache. For a cohort of G devices taking S_g
steps of an effective batch of B samples, with a model of P parameters and M multiply-adds per
sample, and n of them asking DYNAMITE's probes (CPU milliseconds; M, P in millions):

    local   = Σ_g (task + S_g·(step + mac·B·M)) + n·(probe + probe_mac·B·M)
    batched = cohort + S_max·(cohort_step + G·(device_step + stacked_mac·B·M + stacked_param·P))
              + [n > 0]·cohort_probe + n·(device_probe + stacked_probe_mac·B·M + stacked_probe_param·P)

The constants (:data:`MEASURED`) are a non-negative least-squares fit to the per-cohort CPU times
of logistic regression, the zoo MLP and the CNN at 2 to 64 devices, 2 and 10 steps, with and
without probes (``bench/batched_training.py --fit``; bench/RESULTS.md, "Batched executor, bat15b"),
on the machine fedfit is developed on; ``simulation.batched_costs`` takes another machine's. Only
ratios matter: a slower host scales both sides. The cohort is vectorised when
one by one is predicted at least :attr:`CohortCosts.margin` dearer, so that a near tie, where the
fit's error is larger than the gain, trains one by one (never slower than ``local``).

>>> logreg, mlp = ModelWork(7850, 7840), ModelWork(199_210, 198_800)
>>> [vectorise(logreg, [2] * g, batch=16, probing=0) for g in (2, 5, 20, 100)]
[False, False, True, True]
>>> [vectorise(mlp, [10] * g, batch=16, probing=g) for g in (2, 20, 100)]
[False, False, False]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True, slots=True)
class ModelWork:
    """A model's size: trained parameters and multiply-adds of one sample's forward pass."""

    params: int
    macs: int


@dataclass(frozen=True, slots=True)
class CohortCosts:
    """The cost model's constants: milliseconds, per million multiply-adds (``*_mac``, times the
    batch) or per million parameters (``*_param``); see the module docstring's formula."""

    task: float
    step: float
    mac: float
    probe: float
    probe_mac: float
    cohort: float
    cohort_step: float
    device_step: float
    stacked_mac: float
    stacked_param: float
    cohort_probe: float
    device_probe: float
    stacked_probe_mac: float
    stacked_probe_param: float
    margin: float = 0.15


#: Fitted by ``bench/batched_training.py --fit`` (one intra-op thread, plain SGD, batch 16).
#: ``simulation.batched_costs`` overrides any of them (another machine's fit).
MEASURED = CohortCosts(task=0.412, step=0.256, mac=0.214, probe=1.549, probe_mac=0.96,
                       cohort=2.14, cohort_step=1.649, device_step=0.084, stacked_mac=0.183, stacked_param=4.704,
                       cohort_probe=1.575, device_probe=0.254, stacked_probe_mac=0.802, stacked_probe_param=17.812)


def local_ms(work: ModelWork, steps: Sequence[int], *, batch: int, probing: int,
             costs: CohortCosts = MEASURED) -> float:
    """Predicted CPU ms of training the cohort (``steps[g]``: device g's steps) one by one."""
    macs = batch * work.macs / 1e6
    return sum(costs.task + s * (costs.step + costs.mac * macs) for s in steps) + \
        probing * (costs.probe + costs.probe_mac * macs)


def batched_ms(work: ModelWork, steps: Sequence[int], *, batch: int, probing: int,
               costs: CohortCosts = MEASURED) -> float:
    """Predicted CPU ms of training the cohort as one vectorised op (``probing`` devices probe)."""
    macs, params, g = batch * work.macs / 1e6, work.params / 1e6, len(steps)
    per_step = costs.cohort_step + g * (costs.device_step + costs.stacked_mac * macs + costs.stacked_param * params)
    probes = (costs.cohort_probe if probing else 0.0) + probing * (
        costs.device_probe + costs.stacked_probe_mac * macs + costs.stacked_probe_param * params)
    return costs.cohort + max(steps, default=0) * per_step + probes


def vectorise(work: ModelWork, steps: Sequence[int], *, batch: int, probing: int,
              costs: CohortCosts = MEASURED) -> bool:
    """Whether one by one is predicted at least ``costs.margin`` dearer than vectorised."""
    local = local_ms(work, steps, batch=batch, probing=probing, costs=costs)
    return len(steps) > 1 and local >= (1 + costs.margin) * batched_ms(work, steps, batch=batch, probing=probing,
                                                                        costs=costs)


def model_work(model: nn.Module, sample: torch.Tensor) -> ModelWork:
    """``model``'s parameters and the multiply-adds of its linear and convolution layers on one
    ``sample`` (an input without the batch axis), counted from one forward pass.

    >>> model_work(nn.Sequential(nn.Conv1d(2, 3, 3), nn.Flatten(), nn.Linear(12, 5)), torch.zeros(2, 6))
    ModelWork(params=86, macs=132)
    """
    macs = [0]

    def count(module: nn.Module, _: object, out: torch.Tensor) -> None:
        if isinstance(module, nn.Linear):
            macs[0] += module.in_features * module.out_features
        elif isinstance(module, nn.Conv1d | nn.Conv2d):
            macs[0] += out[0].numel() * module.in_channels // module.groups * math.prod(module.kernel_size)

    hooks = [m.register_forward_hook(count) for m in model.modules() if isinstance(m, nn.Linear | nn.Conv1d | nn.Conv2d)]
    try:
        with torch.no_grad():
            model(sample.unsqueeze(0))
    finally:
        for hook in hooks:
            hook.remove()
    return ModelWork(sum(p.numel() for p in model.parameters() if p.requires_grad), macs[0])
