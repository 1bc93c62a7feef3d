"""Why online DYNAMITE trails the best fixed (b, τ): its estimates against the true values, and
the bound's drift term switched off.

Two measurements on examples/dynamite.yaml (30 virtual seconds, online DYNAMITE):

* ``--truth``: after every round, the full-data gradient of every device at the new global
  model gives the true ρ = ‖∇F(w)‖, δ = Σ p_i ‖∇F_i(w) − ∇F(w)‖, the loss F(w) and the
  gradient secant β between consecutive global models; printed beside the planner's
  smoothed estimates and the τ it planned.
* ``--ablation``: online DYNAMITE as built (drift term calibrated on the run), then
  uncalibrated (c = 1, ``dynamite.drift_calibration.enabled: false``), then with the bound's
  drift term ρ·h(τ)/(ητ) set to zero (a diagnostic only: no config reaches it), then with h(τ)
  replaced by its first-order form δη²βτ(τ−1)/2 (the one the closed form uses), uncalibrated;
  time to the target and the τ planned.
* ``--sigma``: per round, the true per-sample gradient variance σ² at the new global model
  (per-sample gradients of every device's data about its own mean, share-weighted) beside the
  planner's smoothed estimate, β, and the τ and b_i it planned (``--fashion``: Fashion-MNIST
  with bench/dynamite.py's settings; ``--probe true|false``: with ``dynamite.sigma_probe`` so).
* ``--calibration``: per round, the τ planned, the global loss the devices' received-model
  losses sample, the progress and drift the bound planned for the round, and the drift factor c.

    PYTHONPATH=src python bench/dynamite_diagnose.py --seeds 0 1 2 [--truth] [--ablation] [--calibration] [--sigma [--fashion]]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

import torch
from torch.func import functional_call, grad, vmap

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.bound import Estimates
from fedfit.policy.dynamite.planner import DynamitePlanner, flatten
from fedfit.strategies import apply_strategy
from fedfit.types import Params

BUDGET_S = 30.0


FASHION = {"data.dataset": "fashion_mnist", "data.max_train_samples": 1600, "data.max_test_samples": 500,
           "evaluation.target_accuracy": 0.65}


def config(seed: int, calibrated: bool = True, fashion: bool = False, probe: bool | None = None) -> ExperimentConfig:
    base = load_config("examples/dynamite.yaml")
    overrides = {**(FASHION if fashion else {}), "seed": seed, "orchestration.rounds": 1000, "dynamite.budget_time_s": BUDGET_S,
                 "dynamite.drift_calibration.enabled": calibrated,
                 **({} if probe is None else {"dynamite.sigma_probe": probe})}
    return apply_strategy(with_overrides(base, overrides), "dynamite-online")


def full_gradients(module: torch.nn.Module, params: Params, data: list) -> list[tuple[torch.Tensor, int, float]]:
    """Per device: the gradient of its mean cross-entropy on all it holds, its size, its loss."""
    names = sorted(n for n, _ in module.named_parameters())
    out = []
    for d in data:
        ps = {n: params[n].detach().clone().float().requires_grad_(True) for n in names}
        x, y = torch.as_tensor(d.x).float(), torch.as_tensor(d.y).long()
        loss = torch.nn.functional.cross_entropy(functional_call(module, ps, (x,)), y)
        grads = torch.autograd.grad(loss, [ps[n] for n in names])
        out.append((torch.cat([g.reshape(-1) for g in grads]).double(), len(d.y), float(loss.detach())))
    return out


def truth(seed: int) -> None:
    print(f"\ndigits seed {seed}: TRUE beta rho delta F | estimated beta rho delta loss | tau planned")
    with built(config(seed)) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        module, prev = exp.workload.module(1.0), None
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            if r.virtual_time_s > BUDGET_S:
                break
            per_device = full_gradients(module, outcome.params, exp.workload.data.train)
            total = sum(n for _, n, _ in per_device)
            g = sum((gi * n / total for gi, n, _ in per_device), torch.zeros_like(per_device[0][0]))
            w = flatten(outcome.params)
            delta = sum(n / total * float(torch.linalg.vector_norm(gi - g)) for gi, n, _ in per_device)
            loss = sum(n / total * f for _, n, f in per_device)
            beta = float(torch.linalg.vector_norm(g - prev[0]) / torch.linalg.vector_norm(w - prev[1])) \
                if prev is not None else float("nan")
            prev = (g, w)
            e = planner.estimator.estimates(planner.settings.prior)
            print(f"  t={r.virtual_time_s:5.1f} acc={r.accuracy or 0:.3f}  {beta:6.3f} {float(g.norm()):6.3f} "
                  f"{delta:6.3f} {loss:6.3f} | {e.beta:6.3f} {e.rho:6.3f} {e.delta:6.3f} {e.loss:6.3f} | "
                  f"{planner.history[-1][1]}", flush=True)


def _first_order(tau: int, lr: float, est: Estimates) -> float:
    return est.delta * lr * lr * est.beta * tau * (tau - 1) / 2


@contextmanager
def drift_replaced(drift: Callable[[int, float, Estimates], float] | None) -> Iterator[None]:
    """The bound's h(τ) replaced in both modules that evaluate it (``None``: as built)."""
    if drift is None:
        yield
        return
    bound_module, search_module = (sys.modules[f"fedfit.policy.dynamite.{m}"] for m in ("bound", "search"))
    with mock.patch.object(bound_module, "drift", drift), mock.patch.object(search_module, "drift", drift):
        yield


def ablation(seed: int) -> None:
    variants: dict[str, tuple[Callable[[int, float, Estimates], float] | None, bool]] = {
        "as built": (None, True), "uncalibrated": (None, False), "drift term off": (lambda tau, lr, est: 0.0, False),
        "first-order h": (_first_order, False)}
    print(f"\ndigits seed {seed}: variant, s to 0.80, accuracy at {BUDGET_S:.0f} s, tau planned per round")
    for name, (drift, calibrated) in variants.items():
        cfg, hit, accuracy, taus = config(seed, calibrated), None, 0.0, []
        with drift_replaced(drift), built(cfg) as exp:
            planner = exp.orchestrator.observer
            assert isinstance(planner, DynamitePlanner)
            for outcome in exp.orchestrator.rounds(exp.initial_params):
                r = outcome.report
                if r.virtual_time_s > BUDGET_S:
                    break
                accuracy = r.accuracy if r.accuracy is not None else accuracy
                taus.append(planner.history[-1][1])
                if hit is None and accuracy >= cfg.evaluation.target_accuracy:
                    hit = r.virtual_time_s
        shown = "-" if hit is None else f"{hit:.1f}"
        print(f"  {name:15s} {shown:>5s} {accuracy:.3f}  {taus}", flush=True)


def calibration(seed: int) -> None:
    print(f"\ndigits seed {seed}: t, accuracy, tau planned | sampled F(w_k), progress, drift (c = 1) of round k | c")
    with built(config(seed)) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r, c = outcome.report, planner.calibration
            if r.virtual_time_s > BUDGET_S or c is None or c.last is None:
                break
            last = c.last
            loss = sum(last.losses[i] * last.shares[i] for i in last.losses) / sum(last.shares[i] for i in last.losses)
            print(f"  t={r.virtual_time_s:5.1f} acc={r.accuracy or 0:.3f} tau={planner.history[-1][1]:3d} | "
                  f"{loss:6.3f} {last.progress:7.4f} {last.drift:9.4g} | {c.factor:.3f}", flush=True)


def per_sample_variance(module: torch.nn.Module, params: Params, data: list) -> float:
    """σ²: the share-weighted mean over devices of E_j ‖∇f_j(w) − ∇F_i(w)‖² on all they hold."""
    names = sorted(n for n, _ in module.named_parameters())
    ps = {n: params[n].detach().float() for n in names}

    def f(p: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(functional_call(module, p, (x.unsqueeze(0),)), y.unsqueeze(0))

    total, weighted = 0, 0.0
    for d in data:
        x, y = torch.as_tensor(d.x).float(), torch.as_tensor(d.y).long()
        g = vmap(grad(f), in_dims=(None, 0, 0))(ps, x, y)
        flat = torch.cat([g[n].reshape(len(y), -1) for n in names], 1).double()
        weighted += float(((flat - flat.mean(0)) ** 2).sum(1).mean()) * len(y)
        total += len(y)
    return weighted / total


def sigma(seed: int, fashion: bool, probe: bool | None = None) -> None:
    print(f"\n{'fashion_mnist' if fashion else 'digits'} seed {seed} (sigma_probe {probe}): t, accuracy | TRUE sigma2 | "
          "estimated sigma2, beta | tau, b_i planned")
    with built(config(seed, fashion=fashion, probe=probe)) as exp:
        planner = exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        module = exp.workload.module(1.0)
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            if r.virtual_time_s > BUDGET_S:
                break
            true = per_sample_variance(module, outcome.params, exp.workload.data.train)
            e, (_, tau, batches) = planner.estimator.estimates(planner.settings.prior), planner.history[-1]
            print(f"  t={r.virtual_time_s:5.1f} acc={r.accuracy or 0:.3f} | {true:7.2f} | {e.sigma2:7.2f} {e.beta:6.3f} | "
                  f"{tau} {batches}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--truth", action="store_true")
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--calibration", action="store_true")
    parser.add_argument("--sigma", action="store_true")
    parser.add_argument("--fashion", action="store_true", help="--sigma on Fashion-MNIST")
    parser.add_argument("--probe", choices=["true", "false"], help="--sigma with dynamite.sigma_probe set so")
    args = parser.parse_args()
    for seed in args.seeds:
        if args.truth:
            truth(seed)
        if args.ablation:
            ablation(seed)
        if args.calibration:
            calibration(seed)
        if args.sigma:
            sigma(seed, args.fashion, None if args.probe is None else args.probe == "true")


if __name__ == "__main__":
    main()
