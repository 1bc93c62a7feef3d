"""Security and privacy: every attack x defence, DP accuracy at ε ∈ {1, 4, 8}, SecAgg's cost.

Base config: examples/security.yaml (30 phones, 10 per round, 20 rounds, MLP, IID), with
``--dataset`` (default ``digits``: Fashion-MNIST is not installed on every host). For each attack
(scaled ×10, sign-flipped ×10, random ×10 the honest norm, label-flipped, backdoor with a
model-replacement boost of 5) at 10% and 30% malicious devices, and for the clean fleet, runs
plain FedAvg and each defence (adaptive clipping at the median norm, coordinate median,
30%-trimmed mean, Krum and multi-Krum with f = 3, FLTrust with 100 root samples, RFA geometric
median). Accuracy is the mean test accuracy of the last 3 rounds (single rounds swing by a
few points); backdoor success is the share of non-target test images the trigger sends to the
target class. Then DP-FedAvg calibrated to ε = 1, 4, 8 at δ = 1e-5 (and clipping without noise),
local DP-SGD with fixed and dynamic batching (micro-batches per tier, out-of-memory failures),
and SecAgg's bytes and time per device and dropout tolerance for the model's update size.

    PYTHONPATH=src .venv/bin/python bench/security.py [--dataset digits] [--rounds 15] [--json out.json]
        [--only clean scale sign_flip random label_flip backdoor] [--sections grid dp local secagg dp_secagg]
        [--hetero none|width|partial] [--max-train N] [--defences fedavg median ...] [--attackers fleet|delivering]

``--attackers delivering`` draws each attack's 10% / 30% among the devices that delivered an
update in the clean FedAvg run (on fleets with availability traces some devices never come
online, so a fleet-wide draw can pick attackers that never send anything); every row reports
how many of the updates delivered to the aggregator were malicious (from the event log).

``--hetero`` runs everything on heterogeneous updates (random-width sub-models, or partial
training's element masks); robust rules, DP and SecAgg then work per held coordinate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.runner import run
from fedfit.security.secagg.protocol import SecAggAborted, secure_sum

ATTACKS: dict[str, dict[str, Any]] = {
    "scale": {"attack.kind": "scale"},
    "sign_flip": {"attack.kind": "sign_flip"},
    "random": {"attack.kind": "random"},
    "label_flip": {"attack.kind": "label_flip"},
    "backdoor": {"attack.kind": "backdoor", "attack.boost": 5.0},
}
#: Heterogeneous updates (``--hetero``): random widths 1, ½, ¼ per device and round (HeteroFL
#: sub-models), or partial training (each device trains a random half of the elements: masks).
HETERO: dict[str, dict[str, Any]] = {
    "none": {},
    "width": {"width.mode": "random", "width.widths": [1.0, 0.5, 0.25]},
    "partial": {"memory.mode": "all", "memory.techniques": ["partial"], "memory.partial.keep_fraction": 0.5},
}
DEFENCES: dict[str, dict[str, Any]] = {
    "fedavg": {},
    "clip": {"aggregation.robust.clip": "adaptive"},
    "median": {"aggregation.robust.rule": "median"},
    "trimmed": {"aggregation.robust.rule": "trimmed_mean"},
    "krum": {"aggregation.robust.rule": "krum"},
    "multi-krum": {"aggregation.robust.rule": "multi_krum"},
    "fltrust": {"aggregation.robust.rule": "fltrust"},
    "geomed": {"aggregation.robust.rule": "geometric_median"},
}


def measure(base: ExperimentConfig, overrides: dict[str, Any]) -> dict[str, Any]:
    """Mean accuracy of the last 3 evaluations, backdoor success, ε (when DP), wall seconds, and
    from the event log: updates delivered, how many of them malicious, and which devices delivered."""
    t0 = time.perf_counter()
    with TemporaryDirectory() as tmp:
        result = run(with_overrides(base, overrides), Path(tmp) / "run")
        events = [json.loads(line) for line in (Path(tmp) / "run" / "events.jsonl").read_text().splitlines()]
    accs = [r.accuracy for r in result.reports if r.accuracy is not None]
    s = result.summary
    attack = s.get("attack", {})
    return {"acc": statistics.fmean(accs[-3:]), "backdoor": attack.get("backdoor_success", float("nan")),
            "eps": s.get("privacy", {}).get("epsilon", float("nan")), "wall_s": time.perf_counter() - t0,
            **delivery_counts(events, set(attack.get("malicious_devices", [])))}


def delivery_counts(events: list[dict[str, Any]], malicious: set[int]) -> dict[str, Any]:
    """Updates delivered to the aggregator (tasks that ended ``ok``), those from ``malicious``
    devices, and the sorted ids of the devices that delivered at least one.

    >>> delivery_counts([{"device": 1, "ok": True}, {"device": 2, "ok": False}, {"device": 2, "ok": True},
    ...                  {"device": 1, "ok": True}], {2, 5})
    {'delivered': 3, 'malicious_delivered': 1, 'delivering_devices': [1, 2]}
    """
    ok = [int(e["device"]) for e in events if e["ok"]]
    return {"delivered": len(ok), "malicious_delivered": sum(d in malicious for d in ok),
            "delivering_devices": sorted(set(ok))}


def draw_attackers(delivering: list[int], fraction: float, seed: int) -> list[int]:
    """A seeded ``fraction`` (rounded, at least one) of the ``delivering`` devices, sorted: the
    attackers when ``--attackers delivering`` sizes the attack by the devices that deliver.

    >>> draw_attackers(list(range(20)), 0.3, 0) == sorted(draw_attackers(list(range(20)), 0.3, 0))
    True
    >>> len(draw_attackers(list(range(19)), 0.1, 0)), len(draw_attackers(list(range(19)), 0.3, 0))
    (2, 6)
    """
    count = max(1, round(fraction * len(delivering)))
    chosen = np.random.default_rng([seed, 23]).permutation(len(delivering))[:count]
    return sorted(delivering[int(i)] for i in chosen)


def attack_grid(base: ExperimentConfig, only: list[str] | None,
                attackers: str = "fleet") -> dict[str, dict[str, dict[str, Any]]]:
    """(attack, fraction) → defence → measurement, plus the clean fleet (``only``: these attacks).

    ``attackers``: ``fleet`` draws a seeded fraction of the whole fleet (``attack.fraction``);
    ``delivering`` draws that fraction among the devices that delivered an update in the clean
    FedAvg run (devices that are never online cannot attack), passed as ``attack.devices``."""
    none = {"attack.kind": "none", "aggregation.robust.rule": "mean"}
    wanted = only is None or "clean" in only
    clean = measure(base, none) if wanted or attackers == "delivering" else {}
    grid: dict[str, dict[str, dict[str, Any]]] = {}
    cases: list[tuple[str, dict[str, Any]]] = [("clean", {})] + [(f"{a}@{f:.0%}", {**o, "attack.fraction": f}) for a, o in ATTACKS.items()
                               for f in (0.1, 0.3)]
    for name, attack in cases:
        if only is not None and name.split("@")[0] not in only:
            continue
        if attackers == "delivering" and name != "clean":
            fraction = attack.pop("attack.fraction")
            attack = {**attack, "attack.fraction": 0.0,
                      "attack.devices": draw_attackers(clean["delivering_devices"], fraction, base.seed)}
        grid[name] = {d: clean if name == "clean" and d == "fedavg" else measure(base, {**none, **attack, **o})
                      for d, o in DEFENCES.items()}
        print(name, {d: (round(m["acc"], 3), f"{m['malicious_delivered']}/{m['delivered']}")
                     for d, m in grid[name].items()}, flush=True)
    return grid


#: A fleet big enough for DP-FedAvg's noise to average out: 300 phones, 100 a round, logistic regression.
LARGE_FLEET = {"fleet.tiers": {"flagship_phone": 100, "midrange_phone": 100, "older_phone": 100},
               "orchestration.clients_per_round": 100, "model.name": "logreg"}


def dp_rows(base: ExperimentConfig, fleet: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """DP-FedAvg at each ε, clipping alone, and plain FedAvg (no attack), on ``fleet``'s overrides."""
    plain = {"attack.kind": "none", "aggregation.robust.rule": "mean", **fleet}
    dp = {**plain, "privacy.central.enabled": True, "privacy.central.clip_norm": 1.0}
    rows = {"fedavg": measure(base, plain),
            "clip S=1, σ≈0": measure(base, {**dp, "privacy.central.target_epsilon": None,
                                                      "privacy.central.noise_multiplier": 1e-9})}
    for eps in (8.0, 4.0, 1.0):
        rows[f"ε={eps:g}"] = measure(base, {**dp, "privacy.central.target_epsilon": eps})
    return rows


def local_dp_rows(base: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Local DP-SGD: accuracy, sample-level ε, micro-batches per tier and OOM failures, fixed
    batch 32 vs dynamic batching (which sees the per-sample gradients in the memory model)."""
    plain = {"attack.kind": "none", "aggregation.robust.rule": "mean", "training.batch_size": 32}
    dp = {"privacy.local.enabled": True, "privacy.local.clip_norm": 1.0}
    cases = {"plain, fixed 32": {**plain, "batching.mode": "fixed"},
             "DP-SGD σ=1, fixed 32": {**plain, **dp, "batching.mode": "fixed", "privacy.local.noise_multiplier": 1.0},
             "DP-SGD σ=1, dynamic": {**plain, **dp, "batching.mode": "dynamic", "privacy.local.noise_multiplier": 1.0},
             "DP-SGD σ=0.5, dynamic": {**plain, **dp, "batching.mode": "dynamic",
                                       "privacy.local.noise_multiplier": 0.5}}
    rows: dict[str, dict[str, Any]] = {}
    for name, overrides in cases.items():
        with TemporaryDirectory() as tmp:
            result = run(with_overrides(base, overrides), Path(tmp) / "run")
            events = [json.loads(line) for line in (Path(tmp) / "run" / "events.jsonl").read_text().splitlines()]
        accs = [r.accuracy for r in result.reports if r.accuracy is not None]
        batches: dict[str, list[int]] = {}
        for e in events:
            batches.setdefault(e["tier"], []).append(e["micro_batch"])
        rows[name] = {"acc": statistics.fmean(accs[-3:]),
                      "eps": result.summary.get("privacy", {}).get("local", {}).get("epsilon", float("nan")),
                      "oom": sum(e["cause"] == "out_of_memory" for e in events),
                      "micro_batch": {t: statistics.fmean(b) for t, b in sorted(batches.items())}}
        print(name, rows[name], flush=True)
    return rows


def secagg_rows(size: int, cohort: int) -> list[dict[str, Any]]:
    """SecAgg over ``cohort`` devices with ``size``-float updates at several dropout rates."""
    rng = np.random.default_rng(0)
    vectors = [rng.normal(size=size) for _ in range(cohort)]
    rows = []
    for dropout in (0.0, 0.1, 0.3, 0.5, 0.6):
        dropped = set(range(round(dropout * cohort)))
        t0 = time.perf_counter()
        try:
            result = secure_sum(vectors, threshold=cohort // 2 + 1, dropped=dropped, seed=1)
        except SecAggAborted:
            rows.append({"dropout": dropout, "exact": False, "aborted": True})
            continue
        wall = time.perf_counter() - t0
        reference = sum(np.round(v * 2.0**24) for i, v in enumerate(vectors) if i not in dropped) / 2.0**24
        survivors = result.survivors
        sent = statistics.fmean(result.traffic.sent[i] for i in survivors)
        received = statistics.fmean(result.traffic.received[i] for i in survivors)
        rows.append({"dropout": dropout, "exact": bool(np.array_equal(result.total, reference)), "aborted": False,
                     "sent_bytes": sent, "received_bytes": received, "plain_bytes": 4 * size, "wall_s": wall})
    return rows


def secagg_run(base: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """Whole runs: plain FedAvg vs SecAgg (no dropout, 30% dropped after masking)."""
    plain = {"attack.kind": "none", "aggregation.robust.rule": "mean"}
    sec = {**plain, "privacy.secure_aggregation.enabled": True}
    return {"fedavg": measure(base, plain), "secagg": measure(base, sec),
            "secagg 30% dropped": measure(base, {**sec, "privacy.secure_aggregation.dropout": 0.3})}


def dp_secagg_rows(base: ExperimentConfig) -> dict[str, dict[str, Any]]:
    """DP-FedAvg at ε = 8 with and without SecAgg (devices clip before masking, the server noises the sum)."""
    dp = {"attack.kind": "none", "privacy.central.enabled": True, "privacy.central.target_epsilon": 8.0}
    return {"central DP ε=8": measure(base, dp),
            "central DP ε=8 + SecAgg": measure(base, {**dp, "privacy.secure_aggregation.enabled": True})}


def print_grid(grid: dict[str, dict[str, dict[str, Any]]]) -> None:
    print(f"\n{'accuracy':16}" + "".join(f"{d:>11}" for d in DEFENCES))
    for case, row in grid.items():
        print(f"{case:16}" + "".join(f"{m['acc']:11.3f}" for m in row.values()))
    print(f"\n{'backdoor success':16}" + "".join(f"{d:>11}" for d in DEFENCES))
    for case, row in grid.items():
        if case.startswith("backdoor"):
            print(f"{case:16}" + "".join(f"{m['backdoor']:11.3f}" for m in row.values()))
    print(f"\n{'malicious/deliv.':16}" + "".join(f"{d:>11}" for d in DEFENCES))
    for case, row in grid.items():
        print(f"{case:16}" + "".join(f"{m['malicious_delivered']:>5}/{m['delivered']:<5}" for m in row.values()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="examples/security.yaml")
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", nargs="*", default=None, help="attack grid rows to run (clean, scale, ...)")
    ap.add_argument("--sections", nargs="*", default=["grid", "dp", "local", "secagg"])
    ap.add_argument("--hetero", choices=sorted(HETERO), default="none", help="heterogeneous updates for every run")
    ap.add_argument("--max-train", type=int, default=None, help="cap the training set (small runs)")
    ap.add_argument("--defences", nargs="*", default=None, help="defences of the grid (default: all)")
    ap.add_argument("--attackers", choices=["fleet", "delivering"], default="fleet",
                    help="draw the malicious fraction of the whole fleet, or of the devices that deliver")
    args = ap.parse_args()
    size = {"data.max_train_samples": args.max_train} if args.max_train else {}
    base = with_overrides(load_config(args.config), {
        "data.dataset": args.dataset, "orchestration.rounds": args.rounds, "output.plots": False,
        "output.progress": False, **size, **HETERO[args.hetero]})
    if args.defences is not None:
        for name in set(DEFENCES) - set(args.defences):
            del DEFENCES[name]
    t0, out = time.perf_counter(), dict[str, Any]()
    if "grid" in args.sections:
        out["grid"] = attack_grid(base, args.only, args.attackers)
        print_grid(out["grid"])
    if "dp" in args.sections:
        out["dp"] = {"30 phones, 10 a round, MLP": dp_rows(base, {}),
                     "300 phones, 100 a round, logreg": dp_rows(base, LARGE_FLEET)}
        for fleet, rows in out["dp"].items():
            print(f"\nDP-FedAvg, {fleet}:", {k: (round(v["acc"], 3), round(v["eps"], 2)) for k, v in rows.items()})
    if "local" in args.sections:
        out["local"] = local_dp_rows(base)
    if "secagg" in args.sections:
        probe = run(with_overrides(base, {"orchestration.rounds": 1, "attack.kind": "none"}))
        out["size"] = sum(v.numel() for v in probe.params.values() if v.is_floating_point())
        out["secagg"] = secagg_rows(out["size"], base.orchestration.clients_per_round)
        out["secagg_runs"] = secagg_run(base)
        print(f"\nSecAgg, {out['size']} parameters, cohort {base.orchestration.clients_per_round}:")
        for row in out["secagg"]:
            print(row)
        print({k: round(v["acc"], 3) for k, v in out["secagg_runs"].items()})
    if "dp_secagg" in args.sections:
        out["dp_secagg"] = dp_secagg_rows(base)
        print({k: (round(v["acc"], 4), round(v["eps"], 2)) for k, v in out["dp_secagg"].items()})
    print(f"total wall {time.perf_counter() - t0:.0f} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
