"""Each plan online DYNAMITE makes, priced by its own bound beside fixed batches at the same estimates.

For every re-plan of one bench run: the estimates it was made with (β̂, ρ̂, δ̂, σ̂², F0, c, β̂_σ),
the bound Φ of the plan it chose split into its optimisation, noise and drift terms, K and the
slowest round, the same for every device at batch 8 and at batch 32 with τ = 50 (the grid points
``grid-b8-t50`` and ``grid-b32-t50``), each device's D_i, link seconds and the plan's batches.
It shows how far apart in Φ the bound puts batches that train very differently (issue 14, dyn14m).
Same fleets and overrides as ``bench/dynamite.py``::

    PYTHONPATH=src:bench python bench/dynamite_plan_phi.py --dataset digits --seed 7 [--set K=V ...]
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fedfit.config import load_config, with_overrides
from fedfit.experiment import built
from fedfit.policy.dynamite.bound import Budget, Estimates, drift, rounds_affordable
from fedfit.policy.dynamite.costs import DeviceCost
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.policy.dynamite.search import Assignment
from fedfit.strategies import apply_strategy

from dynamite import DATASETS, _overrides


def terms(name: str, tau: int, batches: Sequence[int], devices: Sequence[DeviceCost], shares: Sequence[float],
          est: Estimates, lr: float, budget: Budget) -> str:
    """One line: Φ of (τ, b_i) and its three terms, K and the slowest round."""
    k = rounds_affordable(tau, batches, devices, budget)
    noise = sum(d.noise(p, tau, b) for p, b, d in zip(shares, batches, devices))
    opt = est.loss / (lr * k * tau)
    noisy = est.beta * lr * est.sigma2 / 2 * noise
    drifted = est.rho * drift(tau, lr, est) / (lr * tau)
    slowest = max(d.round_s(tau, b) for d, b in zip(devices, batches))
    return (f"    {name:5s} τ={tau:2d} Φ={opt + noisy + drifted:.5f} = {opt:.5f} + noise {noisy:.5f} + drift "
            f"{drifted:.5f}  K={k:.2f}  slowest {slowest:.3f} s  b={tuple(batches)}")


_SOLVE = DynamitePlanner.solve


def traced_solve(self: DynamitePlanner) -> Assignment:
    """The planner's own solve, printed beside the fixed batches at the same estimates."""
    found = _SOLVE(self)
    ids, held = self.registry.ids(), self.data_sizes(self.spent_s)
    devices = [self._device(d, held[d]) for d in ids]
    sizes = [max(1, d.data_size) for d in devices]
    shares = [n / sum(sizes) for n in sizes]
    est, budget = self.estimates(), self._budget_left(len(ids))
    print(f"  plan at {self.spent_s:.2f} s: β̂={est.beta:.3f} ρ̂={est.rho:.3f} δ̂={est.delta:.3f} "
          f"σ̂²={est.sigma2:.2f} F0={est.loss:.3f} c={est.drift_scale:.3f} β̂_σ={'-' if est.noise_curvature is None else f'{est.noise_curvature:.3f}'}")
    print(terms("plan", found.tau, found.batches, devices, shares, est, self.lr, budget))
    for b in (8, 32):
        print(terms(f"b{b}", 50, [min(b, d.batch_cap) for d in devices], devices, shares, est, self.lr, budget))
    print(f"    D_i {[d.data_size for d in devices]}  link s {[round(d.comm_s, 3) for d in devices]}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="digits", choices=list(DATASETS))
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--budget-s", type=float, default=30.0)
    parser.add_argument("--set", nargs="+", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    config = with_overrides(load_config("examples/dynamite.yaml"),
                            {**DATASETS[args.dataset], "seed": args.seed, "orchestration.rounds": 1000,
                             "dynamite.budget_time_s": args.budget_s, **_overrides(args.set)})
    config = apply_strategy(config, "dynamite-online")
    DynamitePlanner.solve = traced_solve  # type: ignore[method-assign]
    with built(config) as exp:
        for k, outcome in enumerate(exp.orchestrator.rounds(exp.initial_params), start=1):
            r = outcome.report
            if r.virtual_time_s > args.budget_s:
                break
            print(f"round {k}: end {r.virtual_time_s:.2f} s, accuracy {r.accuracy or 0.0:.3f}", flush=True)
            if (r.accuracy or 0.0) >= config.evaluation.target_accuracy:
                break


if __name__ == "__main__":
    main()
