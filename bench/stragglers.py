"""Straggler tolerance: sync FedAvg vs deadline/over-selection, FedBuff, FedAsync, FedNova, full stack.

All strategies run on the same mixed fleet (every tier), data and seed, in this one process, from
``examples/stragglers.yaml`` (its ``strategies:`` section holds each one's overrides, so the same
runs are ``fedfit compare examples/stragglers.yaml --strategy NAME ...``). Prints virtual time to
the target accuracy, speed-up over the synchronous baselines, final accuracy, participation per
tier (updates / invitations) and each tier's accuracy on its own devices' local test data.

With ``--seeds`` every strategy runs once per seed, and a fairness table follows: per seed and
strategy the worst tier, its local test samples, the worst-tier gap with its binomial standard
error, and a lower-noise companion (each tier's label mix applied to the global test set's
per-class accuracy), then the mean over the seeds.

    .venv/bin/python bench/stragglers.py [--config examples/stragglers.yaml] [--strategy NAME ...]
    .venv/bin/python bench/stragglers.py --seeds 0 1 2 3 --strategies sync-fixed32 full-stack --central 8

``--tuned`` also runs ``fedavg-tuned`` per seed (its 18-point grid on the same fleet, seed and the
config's rounds, see ``bench/tuned_baseline.py``) and prints every strategy's speed-up over it.

``--central EPOCHS`` adds, per seed, the worst-tier gap of a model trained centrally on the pooled
training data (after each epoch from the second): the gap the tiers' label mixes alone produce.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import numpy as np
import torch

from fedfit.config import ExperimentConfig, load_config
from fedfit.data import build_federated_data
from fedfit.experiment import build
from fedfit.inputs import data_kwargs, fleet_profiles
from fedfit.report import local_accuracy_by_tier
from fedfit.report.tiers import (
    binomial_standard_error,
    gap_standard_error,
    label_counts_by_tier,
    label_weighted_accuracy,
    label_weighted_standard_error,
    noise_worst_gap,
)
from fedfit.runner import RunResult, run
from fedfit.strategies import apply_strategy
from fedfit.training import evaluate, train
from fedfit.types import TrainPlan
from tuned_baseline import print_ratios, tuned

DEFAULT = ("sync-fixed32", "sync-all", "sync-deadline", "sync-oort", "fedbuff", "fedasync", "hetero-fedavg", "fednova",
           "async-selection", "full-stack-unweighted", "full-stack")
TIER_SHORT = {"flagship_phone": "flag", "midrange_phone": "mid", "older_phone": "old", "tablet": "tab",
              "smartwatch": "watch", "sensor_mcu": "mcu", "vehicle_computer": "car", "fleet": "fleet"}


def _minutes(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 60:6.2f}"


def _speedup(base: float | None, mine: float | None) -> str:
    return "—" if base is None or mine is None else f"{base / mine:5.2f}×"


def _tiers(values: dict[str, Any], fmt: str) -> str:
    return " ".join(f"{TIER_SHORT.get(t, t)} {format(v, fmt)}" for t, v in values.items())


def fairness(config: ExperimentConfig, result: RunResult) -> dict[str, Any]:
    """Worst-tier gap with its standard error, and the label-weighted companion gap."""
    data = build_federated_data(**data_kwargs(config))
    tiers = [p.tier for p in fleet_profiles(config)]
    local = result.summary["local_accuracy_by_tier"]
    samples = {t: sum(len(d) for d, x in zip(data.test, tiers, strict=True) if x == t) for t in local}
    samples["fleet"] = sum(len(d) for d in data.test)
    worst = min((t for t in local if t != "fleet"), key=lambda t: local[t])
    out: dict[str, Any] = {"worst": worst, "n": samples[worst], "gap": local["fleet"] - local[worst],
                           "se": gap_standard_error(local[worst], samples[worst], local["fleet"], samples["fleet"]),
                           "tier_se": binomial_standard_error(local[worst], samples[worst])}
    noise = noise_worst_gap({t: n for t, n in samples.items() if t != "fleet"}, local["fleet"],
                            np.random.default_rng(config.seed))
    out |= {"noise_gap": float(noise.mean()), "noise_over5": float((noise > 0.05).mean())}
    return out | _companion(config, result, data, tiers)


def _companion(config: ExperimentConfig, result: RunResult, data: Any, tiers: list[str]) -> dict[str, Any]:
    """Each tier's label mix (its training data) applied to the global test set's per-class accuracy."""
    assert result.spec is not None
    model, test, classes = result.spec.build(1.0), data.global_test, range(data.num_classes)
    per_class = [evaluate(model, result.params, test.x[test.y == c], test.y[test.y == c])[0] for c in classes]
    class_n = [int((test.y == c).sum()) for c in classes]
    mixes = label_counts_by_tier(tiers, data.train, data.num_classes)
    fleet_mix = [sum(m[c] for m in mixes.values()) for c in classes]
    fleet = label_weighted_accuracy(per_class, fleet_mix)
    by_tier = {t: label_weighted_accuracy(per_class, m) for t, m in mixes.items()}
    worst = min(by_tier, key=lambda t: by_tier[t])
    return {"lw_by_tier": by_tier, "lw_worst": worst, "lw_gap": max(0.0, fleet - by_tier[worst]),
            "lw_se": label_weighted_standard_error(per_class, class_n, mixes[worst])}


def central_reference(config: ExperimentConfig, epochs: int, batch: int = 32) -> dict[str, Any]:
    """The worst-tier gap of a model trained centrally: one device holding all training data.

    Plain SGD (the config's learning rate, batch ``batch``) over the pooled training sets, one
    epoch at a time from the experiment's initial parameters; after each epoch the final
    model's metric (accuracy on each tier's local test data) is taken. No participation, speed
    or staleness enters, so what gap remains comes from the tiers' label mixes alone. Reported:
    the gaps after epochs 2..``epochs`` (mean, min, max) and the fleet accuracy they span.
    """
    exp = build(config)
    tiers = [exp.fleet.profile(d).tier for d in exp.fleet.device_ids()]
    x, y = torch.cat([d.x for d in exp.data.train]), torch.cat([d.y for d in exp.data.train])
    model, params = exp.workload.module(1.0), exp.initial_params
    gaps, fleet = [], []
    for epoch in range(epochs):
        plan = TrainPlan(device_id=0, round=epoch, micro_batch=batch, lr=config.training.lr)
        params = train(model, params, x, y, plan, seed=config.seed).params
        local = local_accuracy_by_tier(tiers, exp.data.test, lambda a, b: evaluate(model, params, a, b))
        if epoch >= 1:
            gaps.append(local["fleet"] - min(v for t, v in local.items() if t != "fleet"))
            fleet.append(local["fleet"])
    return {"central_gap": statistics.mean(gaps), "central_min": min(gaps), "central_max": max(gaps),
            "central_acc": (min(fleet), max(fleet))}


def _print_single(summaries: dict[str, dict[str, Any]], target: float) -> None:
    ref32 = summaries.get("sync-fixed32", {}).get("time_to_target_s")
    ref8 = summaries.get("sync-all", {}).get("time_to_target_s")
    print(f"\ntarget accuracy {target:.2f}; times on the virtual clock in minutes")
    w = max(14, *(len(n) for n in summaries))
    print(f"{'strategy':{w}} {'to target':>9} {'vs sync32':>9} {'vs sync8':>8} {'final':>6} {'gap':>5}  virtual")
    for name, s in summaries.items():
        gap = s["worst_tier_gap"]
        print(f"{name:{w}} {_minutes(s['time_to_target_s']):>9} {_speedup(ref32, s['time_to_target_s']):>9} "
              f"{_speedup(ref8, s['time_to_target_s']):>8} {s['final_accuracy']:6.3f} "
              f"{'—' if gap is None else f'{gap * 100:4.1f}':>5}  {_minutes(s['virtual_time_s'])}")
    print("\nparticipation per tier (updates / invitations) and failures")
    for name, s in summaries.items():
        print(f"{name:{w}} {_tiers(s['participation_by_tier'], '.0%')}   failures {s['failures_by_cause']}")
    print("\naccuracy of the final model on each tier's own devices' local test data")
    for name, s in summaries.items():
        print(f"{name:{w}} {_tiers(s['local_accuracy_by_tier'], '.3f')}")


def _versus_sync32(runs: dict[str, dict[str, Any]], name: str) -> str:
    """Speed-up over sync-fixed32; ``≥x`` (its whole run over ours) when sync-fixed32 never got there."""
    ref, mine = runs.get("sync-fixed32"), runs[name]["time_to_target_s"]
    if ref is None or mine is None:
        return "—"
    if ref["time_to_target_s"] is None:
        return f"≥{ref['virtual_time_s'] / mine:.0f}×"
    return f"{ref['time_to_target_s'] / mine:.1f}×"


def _fair_row(label: str, s: dict[str, Any], f: dict[str, Any], vs32: str) -> str:
    return (f"{label:27} {_minutes(s['time_to_target_s']):>9} {vs32:>8} {s['final_accuracy']:6.3f}  "
            f"{TIER_SHORT.get(f['worst'], f['worst']):>5} {f['n']:4d} {f['gap'] * 100:5.1f} ± {f['se'] * 100:4.1f}  "
            f"{TIER_SHORT.get(f['lw_worst'], f['lw_worst']):>5} {f['lw_gap'] * 100:5.1f} ± {f['lw_se'] * 100:3.1f}  "
            f"{f['noise_gap'] * 100:5.1f} {f['noise_over5']:5.0%}")


def _print_seeds(per_seed: dict[int, dict[str, dict[str, Any]]], fair: dict[int, dict[str, dict[str, Any]]],
                 central: dict[int, dict[str, Any]]) -> None:
    print("\nworst-tier gap (points, fleet − worst tier on local test data) ± its binomial standard error;")
    print("label-weighted companion (lw): global-test per-class accuracy under each tier's label mix;")
    print("noise: mean worst-tier gap of a model equally accurate on every tier (binomial noise on these")
    print("local test sets alone), P>5: how often that noise alone exceeds 5 points")
    print(f"{'seed / strategy':27} {'to target':>9} {'vs s32':>8} {'final':>6}  {'worst':>5} {'n':>4} "
          f"{'gap ± se':>12}  {'lw':>5} {'lw gap ± se':>11}  {'noise':>5} {'P>5':>5}")
    for seed, runs in per_seed.items():
        for name, s in runs.items():
            print(_fair_row(f"{seed} {name}", s, fair[seed][name], _versus_sync32(runs, name)))
        if seed in central:
            print(_central_row(seed, central[seed]))
    for name in next(iter(per_seed.values())):
        _print_mean(name, [runs[name] for runs in per_seed.values()], [f[name] for f in fair.values()])
    if central:
        gaps = [c["central_gap"] for c in central.values()]
        print(f"mean central reference: gap {statistics.mean(gaps) * 100:.1f} (max over seeds and epochs "
              f"{max(c['central_max'] for c in central.values()) * 100:.1f})")


def _central_row(seed: int, c: dict[str, Any]) -> str:
    low, high = c["central_acc"]
    return (f"{seed} central reference: pooled SGD, after each epoch from 2 (fleet accuracy {low:.3f}–{high:.3f}): "
            f"gap {c['central_gap'] * 100:.1f} mean, {c['central_min'] * 100:.1f}–{c['central_max'] * 100:.1f}")


def _print_mean(name: str, runs: list[dict[str, Any]], fair: list[dict[str, Any]]) -> None:
    times = [s["time_to_target_s"] for s in runs]
    reached = [t for t in times if t is not None]
    gaps, lw = [f["gap"] for f in fair], [f["lw_gap"] for f in fair]
    noise = math.sqrt(sum(f["se"] ** 2 for f in fair)) / len(fair)
    spread = statistics.stdev(gaps) if len(gaps) > 1 else 0.0
    mean_time = f"{statistics.mean(reached) / 60:.2f} min ({len(reached)}/{len(times)} reached)" if reached \
        else f"never (0/{len(times)})"
    print(f"mean {name}: to target {mean_time}; final {statistics.mean(s['final_accuracy'] for s in runs):.3f}; "
          f"gap {statistics.mean(gaps) * 100:.1f} ± {noise * 100:.1f} (measurement se of the mean; "
          f"seed-to-seed sd {spread * 100:.1f}); worst gap {max(gaps) * 100:.1f}; "
          f"label-weighted gap {statistics.mean(lw) * 100:.1f} (max {max(lw) * 100:.1f}); "
          f"noise-only gap {statistics.mean(f['noise_gap'] for f in fair) * 100:.1f}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", default="examples/stragglers.yaml")
    p.add_argument("--strategy", action="append", help="strategy names (default: the eleven in DEFAULT)")
    p.add_argument("--strategies", nargs="+", help="strategy names (same as repeating --strategy)")
    p.add_argument("--seeds", nargs="+", type=int, help="run each strategy once per seed (default: the config's)")
    p.add_argument("--central", type=int, default=0, metavar="EPOCHS",
                   help="with --seeds: also train a centralised reference for EPOCHS epochs per seed (0: skip)")
    p.add_argument("--tuned", action="store_true", help="also run fedavg-tuned's grid per seed and compare")
    args = p.parse_args()
    base = load_config(args.config)
    names = (args.strategy or []) + (args.strategies or []) or list(DEFAULT)
    per_seed: dict[int, dict[str, dict[str, Any]]] = {}
    fair: dict[int, dict[str, dict[str, Any]]] = {}
    central: dict[int, dict[str, Any]] = {}
    for seed in args.seeds or [base.seed]:
        config = base.model_copy(update={"seed": seed})
        per_seed[seed], fair[seed] = {}, {}
        for name in names:
            t0, cfg = time.perf_counter(), apply_strategy(config, name)
            result = run(cfg)
            per_seed[seed][name], fair[seed][name] = result.summary, fairness(cfg, result)
            print(f"[seed {seed} {name}: {time.perf_counter() - t0:.0f} s wall]", flush=True)
        if args.seeds and args.central > 1:
            t0, central[seed] = time.perf_counter(), central_reference(config, args.central)
            print(f"[seed {seed} central reference: {time.perf_counter() - t0:.0f} s wall]", flush=True)
        if not args.seeds:
            _print_single(per_seed[seed], base.evaluation.target_accuracy)
        if args.tuned:
            t0, (chosen, _) = time.perf_counter(), tuned(config)
            print(f"[seed {seed} fedavg-tuned grid: {time.perf_counter() - t0:.0f} s wall]", flush=True)
            print_ratios(chosen, per_seed[seed])
    _print_seeds(per_seed, fair, central)


if __name__ == "__main__":
    main()
