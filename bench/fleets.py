"""Generalisation: ``auto`` vs ``fedavg-tuned`` vs each single technique on generated fleets.

Fleets come from :func:`fedfit.devices.random_fleets.random_fleets` (seeded: random tier mixes
with custom tiers whose memory lies near the model's footprint, data set × model pairs, label
skew); none is an example and nothing is tuned to one. Every fleet runs once per seed with:

- ``auto`` (the built-in strategy chosen from the fleet),
- ``fedavg-tuned``: every point of :mod:`fedfit.tuning`'s grid (batch {8, 16, 32} × deadline
  {none, p50, p90 of predicted task times} × over-selection {0, 0.3}), the chosen point reported,
- each single technique over plain FedAvg: ``dynamic`` batching, ``width-capability``,
  ``memory-auto`` (a memory technique where needed) and ``fedbuff`` (async, buffer = half a cohort).

The target accuracy of a fleet and seed is ``--target-share`` × the best accuracy that a single
technique reached (each runs all its rounds first; ``--target-from all``: auto's too, the rule
before), so it is reachable and the same for every strategy, and the strategy under test does not
set the bar it is measured against (nor does re-running auto alone move it); time to target is
read off each run's per-round accuracy on the virtual clock.
Grid points stop once they reach the target (what follows cannot change their time to it); one
that never does runs all its rounds and is ranked by its final accuracy. When the chosen grid
point never reaches the target, the ratio is a lower bound: its whole run over auto's time
(shown ``≥``). A run that uses more than ``--hang-s`` CPU seconds is stopped and counted as a hang.

    PYTHONPATH=src .venv/bin/python bench/fleets.py                      # 8 fleets x 3 seeds

``--no-auto`` runs everything but auto (its rows hold a placeholder for auto) and
``--strategies auto --reuse THAT.json`` adds auto afterwards; ``--no-switch`` runs auto without its mid-run switch to sync rounds.
``--strategies auto --reuse OLD.json ...`` re-runs only the named strategies (``auto`` and/or single
techniques) and takes everything else — the target, the other strategies' times, the chosen grid
point — from earlier ``--json`` files of the same generator, fleets and seeds: the strategies not
re-run are deterministic in virtual time, so their times stand while their code is unchanged.
    PYTHONPATH=src .venv/bin/python bench/fleets.py --fleets 12 --rounds 40 --train-samples 6000 \
        --datasets fashion_mnist digits synthetic
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from fedfit.config import ExperimentConfig, parse_config, with_overrides
from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.devices import TIERS
from fedfit.devices.random_fleets import random_fleets
from fedfit.errors import PlanError
from fedfit.models import ModelSpec
from fedfit.orchestration.sync import RoundOutcome
from fedfit.runner import RunResult, run
from fedfit.strategies import apply_strategy
from fedfit.tuning import GridResult, choose, grid, predicted_times

SINGLES = ("dynamic", "width-capability", "memory-auto", "fedbuff")


def footprint(dataset: str, model: str) -> int:
    """Predicted peak bytes of one plain training sample (default memory model)."""
    data = build_federated_data(dataset=dataset, num_devices=2, partition="iid" if dataset != "synthetic" else "natural",
                                seed=0, path="/usr/share/datasets/fashion-mnist", dirichlet_alpha=1.0,
                                shards_per_device=2, synthetic_alpha=1.0, synthetic_beta=1.0, synthetic_iid=False,
                                max_train_samples=200, max_test_samples=50, local_test_fraction=0.1)
    return MemoryModel().peak_bytes(measure(ModelSpec(model, data.input_shape, data.num_classes), 1.0), 1)


class Hang(Exception):
    """A run went past its wall-clock allowance."""


class Reached(Exception):
    """A grid point reached the target: the rest of its run cannot change its time to it."""


@contextmanager
def cpu_limit(seconds: int) -> Iterator[None]:
    """Raise :class:`Hang` once this process has spent ``seconds`` more CPU seconds."""
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Hang
    previous = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def _run(config: ExperimentConfig, hang_s: int, stop_at: float | None = None) -> dict[str, Any]:
    curve: list[tuple[float, float]] = []

    def on_round(outcome: RoundOutcome) -> None:
        r = outcome.report
        if r.accuracy is not None:
            curve.append((r.virtual_time_s, r.accuracy))
            if stop_at is not None and r.accuracy >= stop_at:
                raise Reached

    try:
        with cpu_limit(hang_s):
            return _record(run(config, on_round=on_round))
    except Hang:
        return {"hang": True}
    except PlanError as err:  # a technique the model does not support (e.g. width on logreg)
        return {"hang": False, "error": str(err), "curve": [], "best": 0.0, "final": 0.0, "virtual_s": 0.0}
    except Reached:
        return {"hang": False, "curve": curve, "best": max(a for _, a in curve), "final": curve[-1][1],
                "virtual_s": curve[-1][0], "stopped": True}


def _single(config: ExperimentConfig, name: str) -> ExperimentConfig:
    if name == "fedbuff":
        buffer = max(2, config.orchestration.clients_per_round // 2)
        return with_overrides(config, {"orchestration.mode": "async", "asynchronous.buffer_size": buffer})
    return apply_strategy(config, name)


def _record(result: RunResult) -> dict[str, Any]:
    s = result.summary
    return {"hang": False, "curve": [(r.virtual_time_s, r.accuracy) for r in result.reports if r.accuracy is not None],
            "best": s["best_accuracy"] or 0.0, "final": s["final_accuracy"] or 0.0, "virtual_s": s["virtual_time_s"],
            "oom": s["failures_by_cause"].get("out_of_memory", 0), "invited": s["invited_by_tier"],
            "participation": s["participation_by_tier"], "gap": s["worst_tier_gap"], "auto": s.get("auto"),
            "switch": s.get("auto_switch"), "reports": len(result.reports),
            "never_online": s["never_online"]}


def _ttt(rec: dict[str, Any], target: float) -> float | None:
    if rec["hang"]:
        return None
    return next((t for t, a in rec["curve"] if a >= target), None)


#: Stands for auto in a row of a run made with ``--no-auto`` (auto added later with ``--reuse``).
NOT_RUN: dict[str, Any] = {"hang": False, "curve": [], "best": 0.0, "final": 0.0, "virtual_s": 0.0, "not_run": True}


def _auto(config: ExperimentConfig, switch: bool = True) -> ExperimentConfig:
    """``auto`` on ``config``; ``switch=False``: without its mid-run switch to sync rounds."""
    return with_overrides(apply_strategy(config, "auto"), {"auto.switch_on_stall": switch})


def run_fleet(config: ExperimentConfig, hang_s: int, share: float, with_auto: bool = True,
              target_from: str = "singles", switch: bool = True) -> dict[str, Any]:
    """Every strategy and grid point on one fleet and seed (auto left out with ``with_auto=False``).

    The target is ``share`` × the best accuracy of the single techniques (``target_from="singles"``)
    or of auto and the single techniques (``"all"``, the rule before)."""
    runs = {"auto": _run(_auto(config, switch), hang_s) if with_auto else NOT_RUN}
    for name in SINGLES:
        runs[name] = _run(_single(config, name), hang_s)
    setters = SINGLES if target_from == "singles" else ("auto", *SINGLES)
    target = share * max(runs[n].get("best", 0.0) for n in setters)
    points = grid(predicted_times(config))
    grid_runs = [_run(with_overrides(config, p.overrides()), hang_s, target) for p in points]
    return {"runs": runs, "points": points, "grid": grid_runs, "target": target}


def score(raw: dict[str, Any]) -> dict[str, Any]:
    """Times to target, the chosen grid point and the ratios of one fleet and seed."""
    target = raw["target"]
    results = [GridResult(p, _ttt(r, target), r.get("final", 0.0), r.get("virtual_s", float("inf")))
               for p, r in zip(raw["points"], raw["grid"], strict=True)]
    chosen = choose(results)
    times = {n: _ttt(r, target) for n, r in raw["runs"].items()} | {"fedavg-tuned": chosen.time_to_target_s}
    return {"target": target, "times": times, "chosen": chosen.point, "grid_times": [r.time_to_target_s for r in results],
            "tuned_whole_s": chosen.virtual_time_s} | _ratios(times, chosen.virtual_time_s)


def _ratios(times: dict[str, float | None], tuned_whole_s: float | None) -> dict[str, Any]:
    """tuned / auto (a lower bound, ``vs_tuned_bound``, when only auto got there: the chosen point's
    whole run over auto's time) and auto / the best single technique."""
    singles = [t for n in SINGLES if (t := times.get(n)) is not None]
    best_single = min(singles) if singles else None
    auto, tuned = times["auto"], times["fedavg-tuned"]
    whole = tuned if tuned is not None else tuned_whole_s
    return {"vs_tuned": whole / auto if auto and whole is not None else None,
            "vs_tuned_bound": tuned is None and auto is not None,
            "vs_best_single": auto / best_single if auto and best_single else None}


def rerun(config: ExperimentConfig, hang_s: int, names: list[str],
          old: dict[str, Any], switch: bool = True) -> tuple[dict[str, Any], dict[str, Any]]:
    """Re-run only ``names`` on one fleet and seed against an earlier row's target and times."""
    runs = {n: _run(_single(config, n) if n in SINGLES else _auto(config, switch), hang_s) for n in names}
    sc = old["score"]
    times = dict(sc["times"]) | {n: _ttt(r, sc["target"]) for n, r in runs.items()}
    whole = sc.get("tuned_whole_s")
    if whole is None and sc["vs_tuned_bound"]:  # recorded before tuned_whole_s: the ratio × auto's time
        whole = sc["vs_tuned"] * sc["times"]["auto"]
    raw = {"runs": {**old.get("runs", {}), "auto": old["auto"], **runs}, "target": sc["target"]}
    return raw, sc | {"times": times, "tuned_whole_s": whole} | _ratios(times, whole)


def _fmt(t: float | None) -> str:
    return "   —   " if t is None else f"{t:7.1f}"


def _print_row(label: str, sc: dict[str, Any], raw: dict[str, Any]) -> None:
    t, c, a = sc["times"], sc["chosen"], raw["runs"]["auto"]
    gap = "-" if a.get("gap") is None else f"{a['gap'] * 100:.0f}"
    cells = " ".join(_fmt(t[n]) for n in ("auto", "fedavg-tuned", *SINGLES))
    vs = sc["vs_tuned"]
    vb = sc["vs_best_single"]
    ge = "≥" if sc["vs_tuned_bound"] else ""
    chosen = c if isinstance(c, str) else \
        f"b{c.batch} d{'-' if c.deadline_s is None else f'{c.deadline_s:.2g}'} o{c.over_selection:g}"
    print(f"{label:22} {sc['target']:.3f} {cells} {'—' if vs is None else f'{ge}{vs:.2f}×':>7} "
          f"{'—' if vb is None else f'{vb:5.2f}':>6}  {chosen:18} oom {a.get('oom', '-')} "
          f"gap {gap}")


def _describe(raw_cfg: dict[str, Any]) -> str:
    d = raw_cfg["data"]
    alpha = d["partition"].get("alpha", d.get("synthetic", {}).get("alpha"))
    return f"{d['dataset']}/{raw_cfg['model']['name']} α={alpha} tiers={raw_cfg['fleet']['tiers']}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--generator-seed", type=int, default=11)
    p.add_argument("--fleets", type=int, default=8)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--train-samples", type=int, default=800)
    p.add_argument("--target-share", type=float, default=0.8)
    p.add_argument("--target-from", choices=["singles", "all"], default="singles",
                   help="whose best accuracy sets the target: the single techniques (default) or auto too")
    p.add_argument("--no-auto", action="store_true",
                   help="run every strategy but auto (add it later: --strategies auto --reuse THIS.json)")
    p.add_argument("--hang-s", type=int, default=120, help="CPU seconds after which a run counts as a hang")
    p.add_argument("--datasets", nargs="+", default=["digits", "synthetic"],
                   help="data sets to draw from (fashion_mnist needs its IDX files at data.path)")
    p.add_argument("--only", type=int, nargs="+", help="run only these fleet indices (to split the work)")
    p.add_argument("--json", help="write every figure to this file")
    p.add_argument("--strategies", nargs="+", choices=["auto", *SINGLES],
                   help="re-run only these (needs --reuse for the rest)")
    p.add_argument("--reuse", nargs="+", metavar="JSON", help="earlier --json files the other figures come from")
    p.add_argument("--no-switch", action="store_true",
                   help="auto without its switch to sync rounds on a stalled loss (auto.switch_on_stall: false)")
    p.add_argument("--merge", nargs="+", metavar="JSON", help="print the summary of earlier --json files and exit")
    p.add_argument("--markdown", action="store_true", help="with --merge: also print a Markdown row per fleet and seed")
    args = p.parse_args()
    if args.merge:
        _merge(args.merge, args.markdown)
        return
    if bool(args.strategies) != bool(args.reuse):
        p.error("--strategies and --reuse go together")
    if args.no_auto and args.target_from != "singles":
        p.error("--no-auto needs --target-from singles (the target cannot wait for auto)")
    old = {(r["fleet"], r["seed"]): r for path in args.reuse or [] for r in json.load(open(path))["table"]}
    fleets = random_fleets(args.generator_seed, args.fleets, list(TIERS), footprint, args.rounds, args.train_samples,
                           args.datasets)
    setters = "a single technique" if args.target_from == "singles" else "auto or a single technique"
    print(f"times to target in virtual seconds; target = {args.target_share} × best accuracy of {setters}")
    print(f"{'fleet/seed':22} {'target':5} {'auto':>7} {'tuned':>7} {'dynamic':>7} {'width':>7} {'memory':>7} "
          f"{'fedbuff':>7} {'tuned/auto':>7} {'auto/best1':>6}  chosen grid point")
    table: list[dict[str, Any]] = []
    for i, raw_cfg in enumerate(fleets):
        if args.only is not None and i not in args.only:
            continue
        print(f"fleet{i}: {_describe(raw_cfg)}", flush=True)
        for seed in args.seeds:
            t0 = time.perf_counter()
            config = parse_config(raw_cfg | {"seed": seed})
            if args.strategies:
                raw, sc = rerun(config, args.hang_s, args.strategies, old[(i, seed)], not args.no_switch)
            else:
                raw = run_fleet(config, args.hang_s, args.target_share, not args.no_auto, args.target_from,
                                not args.no_switch)
                sc = score(raw)
            _print_row(f"fleet{i}/s{seed} ({time.perf_counter() - t0:.0f}s)", sc, raw)
            kept = old.get((i, seed), {})
            table.append({"fleet": i, "seed": seed, "score": sc, "auto": raw["runs"]["auto"],
                          "hangs": [n for n, r in raw["runs"].items() if r["hang"]] +
                          [f"grid{k}" for k, r in enumerate(raw.get("grid", [])) if r["hang"]] +
                          [h for h in kept.get("hangs", []) if h not in raw["runs"]],
                          "errors": {n: e for n, e in kept.get("errors", {}).items() if n not in raw["runs"]} |
                          {n: r["error"] for n, r in raw["runs"].items() if r.get("error")}})
            if args.json:  # after every row, so a stopped run keeps what it measured
                with open(args.json, "w") as f:
                    json.dump({"args": vars(args), "fleets": fleets, "table": table}, f, indent=1, default=str)
    _print_summary(table, fleets)


def _merge(paths: list[str], markdown: bool = False) -> None:
    """The summary over several ``--json`` files of the same generator (fleets split across runs)."""
    parts = [json.load(open(path)) for path in paths]
    table = sorted((row for part in parts for row in part["table"]), key=lambda r: (r["fleet"], r["seed"]))
    if markdown:
        _print_markdown(table, parts[0]["fleets"])
    _print_summary(table, parts[0]["fleets"])


def _print_markdown(table: list[dict[str, Any]], fleets: list[dict[str, Any]]) -> None:
    """One Markdown row per fleet and seed (times in virtual seconds, — not reached)."""
    names = ("auto", "fedavg-tuned", *SINGLES)
    print("| fleet/seed | target | auto mode | auto reports | " + " | ".join(names) +
          " | tuned / auto | auto / best single | auto OOM | tiers not invited (of which online) | worst-tier gap |")
    print("|" + " --- |" * (11 + len(SINGLES)))
    for r in table:
        sc, a = r["score"], r["auto"]
        mode = (a.get("auto") or [""] * 7)[6].split(" ")[1:2] or ["?"]
        switch = a.get("switch")
        mode_s = mode[0] + (f" → sync at {switch[0].split(':')[0]}" if switch else "")
        times = " | ".join("—" if sc["times"][n] is None else f"{sc['times'][n]:.1f}" for n in names)
        vs = "—" if sc["vs_tuned"] is None else f"{'≥' if sc['vs_tuned_bound'] else ''}{sc['vs_tuned']:.2f}×"
        vb = "—" if sc["vs_best_single"] is None else f"{sc['vs_best_single']:.2f}"
        tiers = [t for t, n in fleets[r["fleet"]]["fleet"]["tiers"].items() if n > 0 and not a.get("invited", {}).get(t)]
        online = [t for t in tiers if t not in a.get("never_online", [])]
        gap = "-" if a.get("gap") is None else f"{a['gap'] * 100:.0f}"
        print(f"| {r['fleet']}/s{r['seed']} | {sc['target']:.3f} | {mode_s} | {a.get('reports', '?')} | {times} | {vs} | "
              f"{vb} | {a.get('oom', '-')} | {len(tiers)} ({len(online)}) | {gap} |")


def _median_or_none(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _print_summary(table: list[dict[str, Any]], fleets: list[dict[str, Any]]) -> None:
    per_fleet = []
    for i in sorted({r["fleet"] for r in table}):
        rows = [r for r in table if r["fleet"] == i]
        ratios = [r["score"]["vs_tuned"] for r in rows if r["score"]["vs_tuned"] is not None]
        per_fleet.append(_median_or_none(ratios))
        slow = [r["score"]["vs_best_single"] for r in rows if r["score"]["vs_best_single"] is not None]
        missed = sum(1 for r in rows if r["score"]["times"]["auto"] is None)
        print(f"fleet{i}: median tuned/auto {per_fleet[-1] if per_fleet[-1] is None else f'{per_fleet[-1]:.2f}×'}; "
              f"auto/best single {', '.join(f'{v:.2f}' for v in slow) or '—'}; auto missed the target {missed}×")
    known = [v for v in per_fleet if v is not None]
    print(f"median fleet: fedavg-tuned / auto = {_median_or_none(known)} (target ≥ 3×; ratios where the chosen "
          "grid point never reached the target are lower bounds)")
    every, both = _honest_ratios(table)
    print(f"median over all {len(table)} runs, auto's misses counted as 0×: {_median_or_none(every)} "
          f"(runs where neither auto nor the tuned point reached the target, left out: {both})")
    over = sum(1 for r in table if (r["score"]["vs_best_single"] or 0) > 1.10)
    print(f"runs where auto is > 10% slower than the best single technique: {over} of {len(table)}")
    print(f"auto out-of-memory failures: {sum(r['auto'].get('oom', 0) for r in table)}; "
          f"hangs: {sum(len(r['hangs']) for r in table)} ({[h for r in table for h in r['hangs']]})")
    errors = [(r["fleet"], r["seed"], n, e) for r in table for n, e in r.get("errors", {}).items()]
    print(f"runs that stopped with a plan error (counted as not reaching the target): {errors or 'none'}")
    never = [(r["fleet"], r["seed"], t) for r in table for t, n in fleets[r["fleet"]]["fleet"]["tiers"].items()
             if n > 0 and not r["auto"].get("invited", {}).get(t)]
    offline = [(f, s, t) for f, s, t in never if t in _row(table, f, s)["auto"].get("never_online", [])]
    print(f"tiers never invited by auto: {never or 'none'}; of which offline at every round start: "
          f"{offline or 'none'}; skipped while online: {[n for n in never if n not in offline] or 'none'}")
    modes = [r["auto"].get("auto", [""])[6].split(" ")[1] for r in table if r["auto"].get("auto")]
    switched = [(r["fleet"], r["seed"], r["auto"]["switch"][0].split(":")[0]) for r in table if r["auto"].get("switch")]
    print(f"auto's mode: sync {modes.count('sync')}, async {modes.count('async')}; async runs switched to sync "
          f"when the loss stalled: {len(switched)} {switched}")


def _honest_ratios(table: list[dict[str, Any]]) -> tuple[list[float], int]:
    """tuned / auto of every run, 0 where auto missed a target the tuned point reached; and how
    many runs neither reached (no ratio)."""
    ratios, neither = [], 0
    for r in table:
        sc = r["score"]
        if sc["vs_tuned"] is not None:
            ratios.append(sc["vs_tuned"])
        elif sc["times"]["fedavg-tuned"] is not None:
            ratios.append(0.0)
        else:
            neither += 1
    return ratios, neither


def _row(table: list[dict[str, Any]], fleet: int, seed: int) -> dict[str, Any]:
    return next(r for r in table if r["fleet"] == fleet and r["seed"] == seed)


if __name__ == "__main__":
    main()
