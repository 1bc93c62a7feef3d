"""The curvature the mini-batch noise sees, against the β DYNAMITE estimates (a diagnostic).

The bound's noise term prices the sampling error of a round's summed steps (``noise_model``):
to first order in η that error is the *sum*'s, which the trainer's reshuffled epochs cancel
(:func:`fedfit.policy.dynamite.sampling.step_noise`). On a quadratic with curvature λ along the
noise the round ends with the noise of Σ_s (1 − ηλ)^{τ−1−s} ξ_s instead: the sum's
cancellation holds only while ηλτ ≪ 1, and where ηλ τ ≳ 1 the iterate forgets its early steps
and each step's σ²/b counts again, reshuffled or not. This script measures, after each round
of online DYNAMITE on examples/dynamite.yaml (30 virtual s), at the new global model:

* λ_noise = Σ_j ξ_jᵀ H_i ξ_j / Σ_j ‖ξ_j‖², the Rayleigh quotient of each device's full-data
  Hessian H_i along its per-sample gradient deviations ξ_j = ∇f_j − ∇F_i (share-weighted over
  devices; estimated from random ±1 combinations of the ξ_j, whose cross terms cancel in
  expectation), and ηλ_noise·τ;
* the planner's β̂ and η β̂ τ, and (with ``--set dynamite.noise_model=curvature``) its smoothed
  β̂_σ, the tasks' curvature probes along g_A − g_B (:mod:`fedfit.training.curvature_probe`);
* for one device of D samples (the median device's) at the τ planned, batches 3 and 8, how much
  less noise reshuffling leaves than independent draws: as the sum (``step_noise`` · b, what
  ``noise_model: reshuffled`` prices) and at the round's end on that quadratic at λ_noise
  (:func:`contracted` reshuffled over contracted independent draws, q = 1 − ηλ_noise: the
  finite-population formula with weights q^{τ−1−s}/b_s against Σ_s q^{2(τ−1−s)}/b_s).

    PYTHONPATH=src python bench/dynamite_noise_curvature.py --seeds 7 [--fashion] [--rounds 6] [--set KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
from typing import Any

import torch
import yaml
from torch.func import functional_call

from fedfit.config import load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.sampling import step_noise
from fedfit.strategies import apply_strategy

FASHION = {"data.dataset": "fashion_mnist", "data.max_train_samples": 1600, "data.max_test_samples": 500,
           "evaluation.target_accuracy": 0.65}


def noise_curvature(module: torch.nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
                    probes: int, gen: torch.Generator) -> tuple[float, float]:
    """(Σ_j ξ_jᵀ H ξ_j, Σ_j ‖ξ_j‖²) of one device, each estimated from ``probes`` ±1 combinations."""
    names = sorted(n for n, _ in module.named_parameters())
    ps = [params[n].detach().float().clone().requires_grad_(True) for n in names]

    def loss_of(weights: torch.Tensor | None) -> torch.Tensor:
        out = functional_call(module, dict(zip(names, ps)), (x,))
        losses = torch.nn.functional.cross_entropy(out, y, reduction="none")
        return losses.mean() if weights is None else (losses * weights).sum()

    full = torch.autograd.grad(loss_of(None), ps, create_graph=True)
    hess_quad, norm = 0.0, 0.0
    for _ in range(probes):
        c = torch.randint(0, 2, (len(y),), generator=gen).float() * 2 - 1
        combo = torch.autograd.grad(loss_of(c), ps)  # Σ_j c_j ∇f_j
        u = [g - c.sum() * f.detach() for g, f in zip(combo, full)]  # Σ_j c_j ξ_j
        hu = torch.autograd.grad(full, ps, grad_outputs=u, retain_graph=True)
        hess_quad += sum(float((a * b).sum()) for a, b in zip(u, hu))
        norm += sum(float((a * a).sum()) for a in u)
    return hess_quad / probes, norm / probes


def contracted(examples: int, batch: int, steps: int, contraction: float) -> tuple[float, float]:
    """(reshuffled, independent): Var(Σ_s q^{τ−1−s} mean(batch_s)) / σ² of a quadratic with step
    contraction q = 1 − ηλ, under the trainer's reshuffled epochs (per epoch the finite-population
    formula with weights) and under independent draws of the same batch sizes."""
    b = min(batch, examples)
    epoch = [min(b, examples - i) for i in range(0, examples, b)]
    sizes = (epoch * (steps // len(epoch) + 1))[:steps]
    independent = sum(contraction ** (2 * (steps - 1 - s)) / size for s, size in enumerate(sizes))
    total, start = 0.0, 0
    while start < steps:
        chunk = sizes[start:start + len(epoch)]
        weights = [q for s, size in enumerate(chunk, start) for q in [contraction ** (steps - 1 - s) / size] * size]
        weights += [0.0] * (examples - len(weights))
        mean = sum(weights) / examples
        total += sum((w - mean) ** 2 for w in weights) * examples / (examples - 1)
        start += len(epoch)
    return total, independent


def _ratio(pair: tuple[float, float]) -> float:
    return pair[0] / pair[1]


def run(seed: int, fashion: bool, rounds: int, overrides: dict[str, Any]) -> None:
    base = load_config("examples/dynamite.yaml")
    cfg = apply_strategy(with_overrides(base, {**(FASHION if fashion else {}), "seed": seed, "orchestration.rounds": rounds,
                                               "dynamite.budget_time_s": 30.0, **overrides}), "dynamite-online")
    print(f"\n{'fashion_mnist' if fashion else 'digits'} seed {seed}: t, acc | λ_noise, ηλτ | β̂, ηβ̂τ | β̂_σ | D, τ: "
          "reshuffled/iid at b = 3: sum, contracted; at b = 8: the same")
    gen = torch.Generator().manual_seed(seed)
    with built(cfg) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        module, lr = exp.workload.module(1.0), cfg.training.lr
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            quad, norm = 0.0, 0.0
            for d in exp.workload.data.train:
                x, y = torch.as_tensor(d.x).float(), torch.as_tensor(d.y).long()
                if len(y) > 1:
                    q, n = noise_curvature(module, outcome.params, x, y, 8, gen)
                    quad, norm = quad + q, norm + n
            lam = quad / norm
            est, tau = planner.estimates(), planner.current().tau
            sizes = sorted(len(d.y) for d in exp.workload.data.train)
            dmed = sizes[len(sizes) // 2]
            cells = [f"{step_noise(dmed, b, tau) * b:.3f} {_ratio(contracted(dmed, b, tau, max(0.0, 1 - lr * lam))):.3f}"
                     for b in (3, 8)]
            print(f"  t={outcome.report.virtual_time_s:5.1f} acc={outcome.report.accuracy or 0:.3f} | {lam:7.2f} "
                  f"{lr * lam * tau:6.2f} | {est.beta:6.3f} {lr * est.beta * tau:5.2f} | "
                  f"{est.noise_curvature if est.noise_curvature is not None else float('nan'):7.2f} | {dmed} {tau}: "
                  f"{cells[0]}  {cells[1]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[7])
    parser.add_argument("--fashion", action="store_true")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    overrides = {k: yaml.safe_load(v) for k, _, v in (p.partition("=") for p in args.set)}
    for seed in args.seeds:
        run(seed, args.fashion, args.rounds, overrides)


if __name__ == "__main__":
    main()
