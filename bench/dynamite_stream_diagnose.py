"""Why online DYNAMITE trails the best fixed (b, τ) on streaming data: the streaming candidates
measured one at a time (diagnostics only: no config reaches these variants).

On examples/dynamite_stream.yaml (30 virtual seconds, online DYNAMITE), each variant changes one
thing and reports the accuracy at the budget and the τ planned per round:

* ``as built``;
* ``held over drift``: β, ζ and σ² keep their pre-drift values for 5 s after ``drift_at_s``
  (the secants that straddle the label-mix change difference gradients of two different
  objectives; the planner itself cannot know the drift time — a bound on what a perfect change
  detector could gain);
* ``turnover noise``: the secants take out, besides the mini-batch noise, the variance that
  replacing samples adds when arrivals are i.i.d.: with c samples kept, a added and r removed
  between a device's two tasks, Var[∇F_S1(w) − ∇F_S0(w)] = σ² (c (1/D1 − 1/D0)² + a/D1² + r/D0²);
* ``F0 = test loss``: the bound's loss gap set to the global model's loss on the held-out set
  (what a loss on fresh arrivals, before training on them, would estimate; the training loss
  along local paths over a small buffer is far below it);
* ``drift term off``: the bound without ρ h(τ)/(ητ), so τ = τ_max;
* ``drift off, one b``: that, with the homogeneous solver (one common batch, no per-device b_i).

``--sigma`` instead prints, per round, the true σ² (the share-weighted per-sample gradient variance
over what each device's buffer holds, at the new global model) beside the planner's estimate with
the buffer turnover taken out (``dynamite.stream_turnover: true``) and without it (the default).

    PYTHONPATH=src python bench/dynamite_stream_diagnose.py [--seeds 0 1] [--datasets digits fashion_mnist] [--sigma]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.data.stream import DataStream
from fedfit.experiment import built
from fedfit.policy.dynamite.estimate import RoundObservation
from fedfit.policy.dynamite.planner import DynamitePlanner
from fedfit.strategies import apply_strategy
from fedfit.types import TaskResult, Update

BUDGET_S = 30.0
HOLD_S = 5.0
DATASETS: dict[str, dict[str, Any]] = {
    "digits": {},
    "fashion_mnist": {"data.dataset": "fashion_mnist", "data.max_train_samples": 1600, "data.max_test_samples": 500},
}
_spec = importlib.util.spec_from_file_location("dynamite_diagnose", Path(__file__).with_name("dynamite_diagnose.py"))
assert _spec is not None and _spec.loader is not None
_diagnose = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_diagnose)


def config(dataset: str, seed: int, solver: str = "heterogeneous") -> ExperimentConfig:
    base = load_config("examples/dynamite_stream.yaml")
    overrides = {**DATASETS[dataset], "seed": seed, "orchestration.rounds": 1000,
                 "dynamite.budget_time_s": BUDGET_S}
    return with_overrides(apply_strategy(with_overrides(base, overrides), "dynamite-online"),
                          {"dynamite.mode": solver})


def turnover(before: Sequence[int], after: Sequence[int]) -> float:
    """c (1/D1 − 1/D0)² + a/D1² + r/D0²: the i.i.d. variance (in units of σ²) that the change
    of held samples adds to the difference of a device's two buffer gradients."""
    s0, s1 = set(before), set(after)
    c, a, r = len(s0 & s1), len(s1 - s0), len(s0 - s1)
    return c * (1 / len(after) - 1 / len(before)) ** 2 + a / len(after) ** 2 + r / len(before) ** 2


@contextmanager
def turnover_noise(stream: Callable[[], DataStream | None]) -> Iterator[None]:
    """Each device's samples processed n replaced by the n' with 1/n' = 1/n + u/2, so the
    estimator's noise σ² (1/n(t) + 1/n(t+1)) gains σ² u for the turnover u between its tasks."""
    original = DynamitePlanner._observation
    last: dict[int, tuple[int, ...]] = {}

    def observation(self: DynamitePlanner, results: Sequence[TaskResult]) -> RoundObservation | None:
        obs, s = original(self, results), stream()
        if obs is None or s is None:
            return obs
        samples = dict(obs.samples)
        for r in results:
            d = r.plan.device_id
            if isinstance(r.outcome, Update) and d in samples:
                held = s.buffer(d, r.start_s).indices
                u = turnover(last[d], held) if d in last else 0.0
                last[d], samples[d] = held, max(1, round(1 / (1 / samples[d] + u / 2)))
        return dataclasses.replace(obs, samples=samples)

    with mock.patch.object(DynamitePlanner, "_observation", observation):
        yield


def run(cfg: ExperimentConfig, variant: str) -> tuple[float, list[int]]:
    accuracy, taus, held = 0.0, [], None
    box: list[DataStream | None] = [None]
    drift_at = cfg.data.stream.drift_at_s if cfg.data.stream else None
    with ExitStack() as stack:
        if variant.startswith("drift"):
            stack.enter_context(_diagnose.drift_replaced(lambda tau, lr, est: 0.0))
        if variant == "turnover noise":
            stack.enter_context(turnover_noise(lambda: box[0]))
        exp = stack.enter_context(built(cfg))
        box[0], planner = exp.stream, exp.orchestrator.observer
        assert isinstance(planner, DynamitePlanner)
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            if r.virtual_time_s > BUDGET_S:
                break
            accuracy = r.accuracy if r.accuracy is not None else accuracy
            e = planner.estimator
            if variant == "held over drift" and drift_at is not None:
                if r.virtual_time_s < drift_at:
                    held = e
                elif held is not None and r.virtual_time_s < drift_at + HOLD_S:
                    planner.estimator = dataclasses.replace(e, beta=held.beta, zeta=held.zeta, sigma2=held.sigma2)
            if variant == "F0 = test loss" and r.loss is not None:
                planner.estimator = dataclasses.replace(planner.estimator, loss=r.loss)
            taus.append(planner.current().tau)
    return accuracy, taus


VARIANTS = ["as built", "held over drift", "turnover noise", "F0 = test loss", "drift term off", "drift off, one b"]


def sigma_trace(cfg: ExperimentConfig, turnover: bool) -> list[tuple[float, float, float]]:
    """(t, true σ², estimated σ²) per round; ``turnover``: the planner reads σ² net of it."""
    rows = []
    with built(cfg) as exp:
        planner, stream = exp.orchestrator.observer, exp.stream
        assert isinstance(planner, DynamitePlanner) and stream is not None
        planner.held = stream.held if turnover else None
        module, train = exp.workload.module(1.0), exp.workload.data.train
        for outcome in exp.orchestrator.rounds(exp.initial_params):
            r = outcome.report
            if r.virtual_time_s > BUDGET_S:
                break
            held = [train[d].subset(list(stream.held(d, r.virtual_time_s))) for d in range(len(train))]
            true = _diagnose.per_sample_variance(module, outcome.params, held)
            rows.append((r.virtual_time_s, true, planner.estimator.estimates(planner.settings.prior).sigma2))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--sigma", action="store_true", help="true σ² vs estimated, with and without turnover")
    args = parser.parse_args()
    for dataset in args.datasets:
        for seed in args.seeds:
            if args.sigma:
                print(f"\n{dataset} seed {seed}: t, TRUE sigma2 | estimated, turnover out | estimated, without", flush=True)
                net, raw = sigma_trace(config(dataset, seed), True), sigma_trace(config(dataset, seed), False)
                for (t, true, a), (t_raw, _, b) in zip(net, raw):
                    print(f"  t={t:5.1f} {true:7.2f} | {a:7.2f} | {b:7.2f} (t={t_raw:.1f})", flush=True)
                continue
            print(f"\n{dataset} seed {seed}: variant, accuracy at {BUDGET_S:.0f} s, τ planned per round", flush=True)
            for variant in VARIANTS:
                solver = "homogeneous" if variant == "drift off, one b" else "heterogeneous"
                accuracy, taus = run(config(dataset, seed, solver), variant)
                print(f"  {variant:17s} {accuracy:.3f}  {taus}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
