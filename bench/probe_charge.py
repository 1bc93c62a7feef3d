"""What DYNAMITE's two probes cost on this host's CPU, against what the cost model charges them.

For the zoo's logistic regression, MLP and CNN at a few batch sizes, on one thread (process CPU
time; each repeat times every quantity once, ``--calls`` calls each, interleaved so the host's
load moves them together; the medians of the per-repeat ratios):

* ``step``: one plain training step of the trainer (``train()`` over τ = 50 steps, divided by 50;
  the zoo's logreg and MLP take the fused step, :mod:`fedfit.training.fused`);
* ``fb(b)``: one autograd forward and backward of b samples (``torch.autograd.grad``, what the
  probes call);
* ``hvp(b)``: the curvature probe's Hessian-vector product over b samples (gradient with the graph
  kept, then the backward of ⟨∇L, u⟩); ``k = hvp(b) / fb(b)``, and the same ratio in FLOPs
  (``FlopCounterMode``);
* ``σ²`` and ``σ² + curvature``: the probes as the trainer calls them
  (:func:`~fedfit.training.probe.half_batch_sigma2`, :func:`~fedfit.training.curvature_probe.half_batch_probe`).

Each probe's CPU is printed in plain steps, beside the charge :mod:`fedfit.cost.probe_work` makes in
steps of ``b + h`` at the phone tiers' half-saturation batches ``h`` = 2, 6 and 8.

    OMP_NUM_THREADS=1 PYTHONPATH=src nice python bench/probe_charge.py [--repeats 7] [--calls 20]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch
from torch.nn import functional as F

from fedfit.cost.flops import flop_counter
from fedfit.cost.probe_work import HVP_PASSES, probe_units
from fedfit.models.zoo import ModelSpec
from fedfit.training.curvature_probe import half_batch_probe
from fedfit.training.probe import half_batch_sigma2, mean_gradient
from fedfit.training.trainer import train
from fedfit.types import TrainPlan

MODELS = {"logreg 64": ModelSpec("logreg", (1, 8, 8), 10), "mlp 64": ModelSpec("mlp", (1, 8, 8), 10),
          "mlp 784": ModelSpec("mlp", (1, 28, 28), 10), "cnn 28x28": ModelSpec("cnn", (1, 28, 28), 10)}
TAU = 50
#: The phone tiers' half-saturation batches (fedfit.devices.catalogue) the charge is shown at.
HALF_BATCHES = (2.0, 6.0, 8.0)


def cpu(fn: Callable[[], object], calls: int) -> float:
    """Process CPU seconds of one call (``calls`` calls timed together)."""
    start = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - start) / calls


def hvp(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, u: list[torch.Tensor]) -> None:
    """The curvature probe's Hessian-vector product over (x, y) along u."""
    params = [p for p in model.parameters() if p.requires_grad]
    grads = mean_gradient(model, params, x, y, graph=True)
    along = sum((torch.sum(g * v) for g, v in zip(grads, u)), torch.zeros(()))
    torch.autograd.grad(along, params)


def flop_ratio(model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor, u: list[torch.Tensor]) -> float:
    """FLOPs of the Hessian-vector product over those of one forward and backward, same samples."""
    params = [p for p in model.parameters() if p.requires_grad]
    with flop_counter() as h:
        hvp(model, x, y, u)
    with flop_counter() as fb:
        mean_gradient(model, params, x, y)
    return h.get_total_flops() / fb.get_total_flops()


def one(name: str, spec: ModelSpec, batch: int, calls: int, repeats: int) -> None:
    """One row: every timing taken once per repeat, interleaved, so the host's load moves them
    together; the medians of the per-repeat ratios."""
    torch.manual_seed(0)
    n = 256
    model = spec.build()
    x, y = torch.randn(n, *spec.input_shape), torch.randint(0, 10, (n,))
    params = {k: v.clone() for k, v in model.state_dict().items()}
    plan = TrainPlan(0, 0, micro_batch=batch, local_epochs=TAU, max_steps=TAU, lr=0.05)
    trainable = [p for p in model.parameters() if p.requires_grad]
    u = [torch.randn_like(p) for p in trainable]
    idx, other = torch.arange(batch), torch.arange(batch, 2 * batch)
    rows: list[tuple[float, float, float, float, float]] = []
    for _ in range(repeats):
        step = cpu(lambda: train(model, params, x, y, plan, seed=0), max(1, calls // 10)) / TAU
        model.load_state_dict(params)
        fb = cpu(lambda: mean_gradient(model, trainable, x[:batch], y[:batch]), calls)
        product = cpu(lambda: hvp(model, x[batch:2 * batch], y[batch:2 * batch], u), calls)
        sigma = cpu(lambda: half_batch_sigma2(model, x, y, idx), calls)
        both = cpu(lambda: half_batch_probe(model, x, y, idx, other, F.cross_entropy), calls)
        rows.append((step, fb / step, product / fb, sigma / step, (both - sigma) / step))
    step, fb_step, k, sigma_steps, curvature_steps = (statistics.median(c) for c in zip(*rows))

    def charged(half: float) -> str:
        s = probe_units(batch, n, curvature=False, half_batch=half)
        both = probe_units(batch, n, curvature=True, half_batch=half)
        return f"{s / (batch + half):.2f} · {(both - s) / (batch + half):.2f}"

    print(f"| {name} | {batch} | {step * 1e3:.3f} | {fb_step:.2f} | {k:.2f} | "
          f"{flop_ratio(model, x[:batch], y[:batch], u):.2f} | **{sigma_steps:.2f} · {curvature_steps:.2f}** | "
          + " | ".join(charged(h) for h in HALF_BATCHES) + " |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--batches", type=int, nargs="+", default=[4, 8, 32])
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"charged HVP passes k = {HVP_PASSES}")
    print("| model | b | step ms CPU | fb(b) / step | k = hvp / fb, CPU | k, FLOPs | measured σ² · curvature (steps) | "
          + " | ".join(f"charged, h = {h:g}" for h in HALF_BATCHES) + " |")
    print("| --- " * (7 + len(HALF_BATCHES)) + "|")
    for name in args.models:
        for b in args.batches:
            one(name, MODELS[name], b, args.calls, args.repeats)


if __name__ == "__main__":
    main()
