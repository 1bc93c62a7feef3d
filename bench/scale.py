"""Scale: checkpoints of big fleets and the Dirichlet partitioner at many devices.

``checkpoint``: a registry of N devices (three catalogue tiers, every device reported a state,
1 % with a task history, as after ten rounds of 100) plus the fleet's energy and a logistic
regression model, saved and loaded through :mod:`fedfit.simulation.checkpoint`. Reports the
file's size, save and load seconds, and the size of the same registry as per-value JSON (what
format 1 put in the safetensors header, which the library caps at 100 MB).

``partition``: :func:`fedfit.data.partition.dirichlet` of a Fashion-MNIST-sized label
vector (60,000 samples, 10 classes, alpha 0.5) over N devices, seconds.

    PYTHONPATH=src .venv/bin/python bench/scale.py checkpoint --devices 10000 100000
    PYTHONPATH=src .venv/bin/python bench/scale.py partition --devices 10000 60000
    PYTHONPATH=src .venv/bin/python bench/scale.py threads --threads 1 2
    PYTHONPATH=src .venv/bin/python bench/scale.py fleet --devices 1000 10000 --per-round 10 100 1000
    PYTHONPATH=src .venv/bin/python bench/scale.py states --per-round 10 100 1000

``threads``: a whole small run (digits, MLP, 10 of 20 devices per round, 5 rounds) with
``simulation.torch_threads`` set to each value; wall seconds per client update (training,
aggregation and evaluation of rounds 2-5 over their updates).

``fleet``: a whole experiment built from a config (lazy traces at every size unless
``--trace-model arrays``; candidates as ``auto`` picks them: every idle device up to 10,000
devices, the invited count above; synthetic data with ``data.pool: 1000``; logistic
regression; phones of three tiers) with N devices and K clients per round, 4 rounds: build
wall and CPU seconds, peak RSS, the registry's memory (RSS growth while a second one is
enrolled), and per round (rounds 2-4) the CPU milliseconds (``time.process_time``: what the
process itself spent, so a loaded shared host does not inflate it) of training (the
executor's), evaluation, and orchestration (everything else: candidates, check-in, selection, planning, cost model,
dispatch, aggregation). One process per row (``--fresh``) keeps peak RSS per row. Training is
timed once per batch of tasks (the first result asked trains every task not yet trained, in the
order submitted: training is a pure function of the task); ``--timing task`` times each task as
the bench did before (≈ 3–8 µs of clock reads and wrapper per task land in the orchestration
figure). ``reference_ms`` is the median CPU ms of a fixed reference workload
(``bench/host_reference.py``) run between rounds in the same process (its own time is left out of
the rounds'), and ``orchestration_per_reference`` the orchestration figure divided by it: the
absolute figure moves with the shared host's speed (up to 2× between runs), the ratio only when
the code does. The 50 ms target is on the absolute figure.
``states``: the lazy states of K random devices of a million at one time, CPU ms one by one
and together (``LazyTraces.states_at``), checked equal.

``--breakdown`` adds the CPU milliseconds per round of the orchestration's parts (:data:`PARTS`),
each timed where it is called, without the training or evaluation inside it. Parts nest:
check-in states are inside planning; the task cost inside dispatch; finishing the dispatched
tasks (their mid-task looks, energy and events: the fleet's ``_flush``) runs when the fleet is
next read, inside ``collect``, as do ``next_result`` (popping a result), the registry's records
and the tallies; exchange_in (validation and the sub-model way back), record_fold and the fold
(``fold``, or ``fold_columns`` where the loop folds arrivals held as columns) are inside
aggregate. ``NAME_own_ms`` is a part without the parts inside it, so the own times add up;
``untimed_ms`` is the rest of the round (the loop around the parts: round set-up, the report,
the bench's marks). ``gc_ms`` is the cyclic garbage collector's time outside training
and evaluation (inside whichever part it interrupted), ``gc_full`` its full (generation 2)
collections per round. The wrappers cost ≈ 2–3 µs a call (two reads of the process clock, a
system call each), ≈ 10 timed calls per invited device: ``timers_ms`` is that cost per round
(calls × the cost of a timed empty call), inside the parts' figures and the orchestration total;
compare totals with a run without ``--breakdown``.

``--profile FILE`` (``fleet``) writes a cProfile of rounds 2.. on the process CPU clock, with the
profiler off inside training and evaluation, for ``pstats``: what the orchestration spends, by
function (the profiler's own cost inflates Python calls, so read it for where, not how much).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import random
import resource
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import host_reference
from fedfit.devices.catalogue import tier
from fedfit.devices.registry import Registry
from fedfit.orchestration.sync import SyncState
from fedfit.simulation import checkpoint, columns
from fedfit.simulation.checkpoint import _CODEC, Checkpoint
from fedfit.simulation.fleet import FleetState
from fedfit.types import DeviceState, Link, Thermal


def fleet_registry(devices: int, seed: int = 0) -> Registry:
    """``devices`` enrolled from three tiers, all reported, 1 % with a task history."""
    rng = random.Random(seed)
    registry = Registry()
    profiles = [tier(name) for name in ("flagship_phone", "midrange_phone", "smartwatch")]
    for d in range(devices):
        registry.add(d, profiles[d % 3])
        registry.report_state(d, DeviceState(
            free_memory_bytes=rng.randrange(2**28, 2**32), battery_fraction=rng.random(), charging=rng.random() < 0.3,
            temperature_c=rng.uniform(20, 45), thermal=Thermal.NOMINAL, link=rng.choice([Link.WIFI, Link.CELLULAR]),
            bandwidth_bps=rng.uniform(1e6, 5e7), online=rng.random() < 0.9), at_s=rng.uniform(0, 3600))
    for d in rng.sample(range(devices), devices // 100):
        ok = rng.random() < 0.8
        registry.record_result(d, ok=ok, cause=None if ok else "deadline", duration_s=rng.uniform(5, 60),
                               round=rng.randrange(10))
        if ok:
            registry.record_batch(d, 16, 1)
            registry.record_fold(d, rng.randrange(10))
    return registry


def bench_checkpoint(devices: int, compare_json: bool = True) -> dict[str, float]:
    registry = fleet_registry(devices)
    params = {"linear.weight": torch.randn(10, 784), "linear.bias": torch.zeros(10)}
    saved = Checkpoint("digest", SyncState(params, round=10, now_s=600.0),
                       FleetState(tuple(random.Random(1).uniform(0, 50) for _ in range(devices)), ()),
                       None, {}, registry.entries(), (), (0, 0))
    with tempfile.TemporaryDirectory() as folder:
        t0 = time.perf_counter()
        path = checkpoint.save(Path(folder), saved)
        save_s, size = time.perf_counter() - t0, path.stat().st_size
        t0 = time.perf_counter()
        loaded = checkpoint.load(Path(folder))
        load_s = time.perf_counter() - t0
    assert loaded.registry == saved.registry and loaded.fleet == saved.fleet
    row = {"devices": devices, "file_mb": size / 1e6, "save_s": save_s, "load_s": load_s}
    if not compare_json:  # format 1's JSON of a million devices takes many GB to build
        return row
    min_rows, columns.MIN_ROWS = columns.MIN_ROWS, devices + 1  # format 1: every value as JSON
    try:
        t0 = time.perf_counter()
        as_json = len(json.dumps(_CODEC.encode(saved.registry, {})))
        json_s = time.perf_counter() - t0
    finally:
        columns.MIN_ROWS = min_rows
    return {**row, "registry_json_mb": as_json / 1e6, "registry_json_encode_s": json_s}


def bench_partition(devices: int) -> dict[str, float]:
    from fedfit.data.partition import dirichlet

    labels = np.random.default_rng(0).integers(0, 10, 60_000)
    t0 = time.perf_counter()
    parts = dirichlet(labels, devices, alpha=0.5, seed=0)
    seconds = time.perf_counter() - t0
    sizes = [len(p) for p in parts]
    return {"devices": devices, "seconds": seconds, "min_samples": min(sizes), "max_samples": max(sizes)}


def bench_threads(torch_threads: int | str, rounds: int = 5) -> dict[str, float]:
    """Wall seconds per client update of a whole run (digits, MLP, 10 of 20 devices per round)."""
    from fedfit.config import parse_config
    from fedfit.runner import run

    config = parse_config({"seed": 0, "data": {"dataset": "digits"}, "model": {"name": "mlp"},
                           "fleet": {"tiers": {"flagship_phone": 10, "midrange_phone": 10}},
                           "orchestration": {"rounds": rounds, "clients_per_round": 10},
                           "simulation": {"torch_threads": torch_threads},
                           "output": {"plots": False, "progress": False}})
    ends: list[float] = []
    result = run(config, None, lambda outcome: ends.append(time.perf_counter()))
    updates = sum(sum(r.participants_by_tier.values()) for r in result.reports[1:])  # round 1 warms up
    return {"torch_threads": torch_threads, "updates": updates, "s_per_update": (ends[-1] - ends[0]) / updates,
            "final_accuracy": result.reports[-1].accuracy}


def bench_states(candidates: int, repeats: int = 5) -> dict[str, float]:
    """CPU ms for the lazy states of ``candidates`` random devices of a 1,000,000-device fleet
    (three phone tiers) at one time: one by one (fresh traces, as a round's candidates are) vs
    together (``LazyTraces.states_at``); the better of ``repeats`` alternating tries each."""
    from fedfit.devices.lazy_trace import LazyTrace
    from fedfit.devices.lazy_traces import LazyTraces
    from fedfit.devices.trace_params import TraceParams

    profiles = [tier(name) for name in ("flagship_phone", "midrange_phone", "older_phone")]
    fleet = [profiles[d % 3] for d in range(1_000_000)]
    params, rng = TraceParams(), np.random.default_rng(0)
    scalar, batched = [], []
    for r in range(repeats):
        ids = sorted(rng.choice(len(fleet), candidates, replace=False).tolist())
        t = 3600.0 * (7 + 13 * r)
        c0 = time.process_time()
        one = [LazyTrace(fleet[d], params, 0, d).state_at(t) for d in ids]
        c1 = time.process_time()
        together = LazyTraces(fleet, params, 0).states_at(ids, t)
        c2 = time.process_time()
        assert one == together
        scalar.append(c1 - c0)
        batched.append(c2 - c1)
    return {"candidates": candidates, "one_by_one_ms": min(scalar) * 1e3, "together_ms": min(batched) * 1e3}


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


class _Parts:
    """CPU seconds of named parts of a run, timed where they are called (``time.process_time``).

    A part's *inclusive* time is what its calls took minus any training or evaluation inside
    them (a part entered again inside itself counts once); its *own* time also leaves out the
    other parts inside it, so the own times of every part (training and evaluation included)
    add up to the CPU time spent inside any part, and the rest of a round is *untimed*.
    Garbage collection is timed by ``gc.callbacks``: ``gc`` is what ran outside training and
    evaluation, whichever part it interrupted.
    """

    HIDDEN = ("training", "evaluation")

    def __init__(self) -> None:
        self.inclusive: dict[str, float] = {}
        self.own: dict[str, float] = {}
        self.gc: dict[str, float] = {"gc": 0.0, "gc_training": 0.0, "gc_full": 0.0}
        self._stack: list[list[Any]] = []  # [name, start, children's seconds, hidden seconds inside]
        self._depth: dict[str, int] = {}
        self._hidden_depth = 0
        self._gc_start = 0.0
        self.calls = 0
        self._wrapped: list[tuple[Any, str, Any, bool]] = []  # (owner, attribute, original, own attribute)
        self.profiler: cProfile.Profile | None = None  # ``--profile``: on while ``profiling``, off in hidden parts
        self.profiling = False

    def wrap(self, owner: Any, attr: str, name: str) -> None:
        """Time ``owner.attr`` (a method, or a function in a module) as part ``name`` (skipped
        when ``owner`` has no such attribute: older code)."""
        inner = getattr(owner, attr, None)
        if inner is None:
            return
        self.inclusive.setdefault(name, 0.0)
        self.own.setdefault(name, 0.0)
        self._wrapped.append((owner, attr, inner, isinstance(owner, type) or attr in getattr(owner, "__dict__", {})))

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.enter(name)
            try:
                return inner(*args, **kwargs)
            finally:
                self.exit()

        setattr(owner, attr, timed)

    def restore(self) -> None:
        """Undo every :meth:`wrap` (classes and modules are shared by later rows)."""
        for owner, attr, inner, own in reversed(self._wrapped):
            if own:
                setattr(owner, attr, inner)
            else:
                delattr(owner, attr)
        self._wrapped = []

    def enter(self, name: str) -> None:
        self._depth[name] = self._depth.get(name, 0) + 1
        self._hidden_depth += name in self.HIDDEN
        if self.profiling and name in self.HIDDEN and self._hidden_depth == 1:
            self.profiler.disable()  # type: ignore[union-attr]
        self.calls += 1
        self._stack.append([name, time.process_time(), 0.0, 0.0])

    def exit(self) -> None:
        name, start, children, hidden = self._stack.pop()
        elapsed = time.process_time() - start
        self._depth[name] -= 1
        self._hidden_depth -= name in self.HIDDEN
        if self.profiling and name in self.HIDDEN and self._hidden_depth == 0:
            self.profiler.enable()  # type: ignore[union-attr]
        self.own[name] = self.own.get(name, 0.0) + elapsed - children
        if name in self.HIDDEN:
            hidden = elapsed
        if self._depth[name] == 0:
            self.inclusive[name] = self.inclusive.get(name, 0.0) + elapsed - (0.0 if name in self.HIDDEN else hidden)
        if self._stack:
            self._stack[-1][2] += elapsed
            self._stack[-1][3] += hidden

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_start = time.process_time()
            return
        spent = time.process_time() - self._gc_start
        self.gc["gc_training" if self._hidden_depth else "gc"] += spent
        self.gc["gc_full"] += info["generation"] == 2

    def seconds(self) -> dict[str, float]:
        """Every counter so far: ``name`` inclusive, ``name_own``, the garbage collector's, and
        ``timed``, the own seconds of every part together."""
        return {**self.inclusive, **{f"{n}_own": s for n, s in self.own.items()}, **self.gc,
                "timed": sum(self.own.values()), "calls": float(self.calls)}

    def call_cost_s(self, calls: int = 20_000) -> float:
        """CPU seconds one timed call adds (its two clock reads and the wrapper), measured on an empty function."""
        probe = _Parts()
        holder = type("Holder", (), {"f": staticmethod(lambda: None)})
        probe.wrap(holder, "f", "probe")
        t = time.process_time()
        for _ in range(calls):
            holder.f()
        return (time.process_time() - t) / calls


class _TimedEach:
    """An executor (or handle) whose training is timed as part ``training``, one timer per task
    (``--timing task``: the instrument before the round timer; its two clock reads and wrapper per
    task, ≈ 3–8 µs, land in the orchestration figure)."""

    def __init__(self, inner: Any, parts: _Parts) -> None:
        self.inner, self.parts = inner, parts

    def submit(self, task: Any) -> Any:
        return _TimedEach(self.inner.submit(task), self.parts)

    def result(self) -> Any:
        self.parts.enter("training")
        try:
            return self.inner.result()
        finally:
            self.parts.exit()

    def cancel(self) -> bool:
        return bool(self.inner.cancel())

    def close(self) -> None:
        self.inner.close()


class _Timed:
    """An executor whose training is timed as part ``training``, one timer per batch: the first
    ``result()`` asked of a task trains every task submitted and not trained yet, in the order
    submitted, inside one timer (training is a pure function of the task, so the updates are
    the ones asked one by one; the fleet pops a round's results before training them)."""

    def __init__(self, inner: Any, parts: _Parts) -> None:
        self.inner, self.parts = inner, parts
        self.untrained: dict[int, _TimedHandle] = {}  # by id, in submission order

    def submit(self, task: Any) -> Any:
        handle = _TimedHandle(self.inner.submit(task), self)
        self.untrained[id(handle)] = handle
        return handle

    def train(self) -> None:
        """Train every task not trained yet, as one timed part."""
        batch, self.untrained = self.untrained, {}
        self.parts.enter("training")
        try:
            for handle in batch.values():
                handle.update = handle.inner.result()
        finally:
            self.parts.exit()

    def close(self) -> None:
        self.inner.close()


class _TimedHandle:
    __slots__ = ("inner", "owner", "update")

    def __init__(self, inner: Any, owner: _Timed) -> None:
        self.inner, self.owner, self.update = inner, owner, None

    def result(self) -> Any:
        if self.update is None:
            self.owner.train()
        return self.update

    def cancel(self) -> bool:
        self.owner.untrained.pop(id(self), None)
        return bool(self.inner.cancel())


def fleet_config(devices: int, per_round: int, rounds: int, trace_model: str = "lazy") -> dict[str, Any]:
    """The ``fleet`` experiment's config: logistic regression, three phone tiers, natural synthetic data."""
    third = devices // 3
    return {
        "seed": 0, "model": {"name": "logreg"},
        "data": {"dataset": "synthetic", "partition": {"kind": "natural"}, "pool": min(devices, 1000),
                 "max_train_samples": 50_000, "max_test_samples": 500},
        "fleet": {"tiers": {"flagship_phone": third, "midrange_phone": third, "older_phone": devices - 2 * third},
                  "trace_model": trace_model},
        "training": {"batch_size": 16, "max_steps": 4},
        "orchestration": {"rounds": rounds, "clients_per_round": per_round},
        "output": {"plots": False, "progress": False},
        "simulation": {"executor": "local"}}  # lazy, in this thread: the timers split training out


def bench_fleet(devices: int, per_round: int, rounds: int = 4, trace_model: str = "lazy",
                breakdown: bool = False, timing: str = "round", profile: str | None = None) -> dict[str, float]:
    """Build and run a whole experiment of ``devices`` devices, ``per_round`` clients per round."""
    from fedfit.config import parse_config
    from fedfit.experiment import build
    from fedfit.orchestration.cohort import enrol

    config = parse_config(fleet_config(devices, per_round, rounds, trace_model))
    rss0, t0, c0 = _rss_mb(), time.perf_counter(), time.process_time()
    exp = build(config)
    build_s, build_cpu_s, rss_built = time.perf_counter() - t0, time.process_time() - c0, _rss_mb()
    parts = _Parts()
    timed = _Timed if timing == "round" else _TimedEach
    exp.fleet._executor = timed(exp.fleet._executor, parts)  # type: ignore[assignment]
    orchestrator = exp.orchestrator
    parts.wrap(orchestrator, "evaluator", "evaluation")
    if breakdown:
        _time_parts(parts, exp.fleet, orchestrator)
        gc.callbacks.append(parts.on_gc)
    marks: list[tuple[float, dict[str, float], int]] = []
    references = [host_reference.reference_ms()]  # the host's speed, sampled between rounds (the first warms up)
    parts.profiler = cProfile.Profile(time.process_time) if profile else None
    for outcome in orchestrator.rounds(exp.initial_params):  # type: ignore[union-attr]
        if parts.profiling:
            parts.profiler.disable()  # type: ignore[union-attr]
        marks.append((time.process_time(), parts.seconds(), sum(outcome.report.participants_by_tier.values())))
        references.append(host_reference.reference_ms())
        if parts.profiler is not None:  # rounds 2.., without training and evaluation
            parts.profiling = True
            parts.profiler.enable()
    if parts.profiler is not None:
        parts.profiler.disable()
        parts.profiler.dump_stats(str(profile))
    if breakdown:
        gc.callbacks.remove(parts.on_gc)
    (w0, at0, _), (w1, at1, _) = marks[0], marks[-1]
    n = len(marks) - 1
    spent = {name: (at1[name] - at0[name]) / n for name in at1}  # rounds 2-4
    parts.restore()
    between = references[1:-1]  # run inside the measured rounds' span: not the rounds' time
    orchestration = (w1 - w0 - sum(between) / 1e3) / n - spent["training"] - spent["evaluation"]
    rss_before = _rss_mb()
    second = enrol(exp.fleet)
    registry_mb = _rss_mb() - rss_before
    del second
    row = {"devices": devices, "per_round": per_round, "build_s": build_s, "build_cpu_s": build_cpu_s,
           "built_rss_mb": rss_built - rss0,
           "registry_mb": registry_mb, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3,
           "orchestration_ms": orchestration * 1e3, "training_ms": spent["training"] * 1e3,
           "eval_ms": spent["evaluation"] * 1e3, "updates_per_round": sum(m[2] for m in marks[1:]) / n,
           "reference_ms": statistics.median(references[1:]),
           "orchestration_per_reference": host_reference.normalised(orchestration * 1e3, references[1:])}
    if breakdown:
        hidden = {"training", "evaluation", "training_own", "evaluation_own", "timed", "gc_training", "gc_full", "calls"}
        row.update({f"{name}_ms": s * 1e3 for name, s in spent.items() if name not in hidden})
        row["gc_full"] = spent["gc_full"]
        row["timers_ms"] = spent["calls"] * parts.call_cost_s() * 1e3  # the wrappers' own cost, in the figures
        row["untimed_ms"] = ((w1 - w0 - sum(between) / 1e3) / n - spent["timed"]) * 1e3
    return row


#: The parts ``--breakdown`` times: name -> (where: ``orchestrator``, ``fleet``, ``registry``,
#: ``exchange``, ``tally`` (the class) or ``sync`` (the module), attribute).
PARTS = {
    "candidates": ("orchestrator", "_candidates"), "planning": ("orchestrator", "_plans"),
    "check_in_states": ("fleet", "snapshot_many"), "exchange_out": ("exchange", "outgoing"),
    "dispatch": ("fleet", "dispatch"), "task_cost": ("fleet", "_task_cost"),
    "exchange_out_many": ("exchange", "outgoing_many"), "dispatch_many": ("fleet", "dispatch_many"),
    "collect": ("orchestrator", "_collect"), "finish_tasks": ("fleet", "_flush"),
    "mid_task_looks": ("fleet", "_online_many"), "next_result": ("fleet", "next_result"), "next_results": ("fleet", "next_results"),
    "record_task": ("registry", "record_task"), "record_tasks": ("registry", "record_tasks"),
    "record_result": ("registry", "record_result"),
    "tally_results": ("tally", "count_results"), "tally_result": ("tally", "count_result"), "tally_success": ("tally", "count_success"),
    "tally_failure": ("tally", "count_failure"), "cancel_pending": ("fleet", "cancel_pending"),
    "aggregate": ("orchestrator", "_aggregate"), "exchange_in": ("exchange", "incoming_many"),
    "record_fold": ("registry", "record_fold"), "record_folds": ("registry", "record_folds"), "fold": ("sync", "aggregate"),
    "fold_columns": ("sync", "aggregate_columns"),
    "report": ("tally", "report"),
}


def _time_parts(parts: _Parts, fleet: Any, orchestrator: Any) -> None:
    """Wrap the orchestration's parts (:data:`PARTS`) to add up their CPU seconds."""
    from fedfit.orchestration import sync, tally

    owners = {"orchestrator": orchestrator, "fleet": fleet, "registry": orchestrator.registry,
              "exchange": orchestrator.submodels, "tally": tally.RoundTally, "sync": sync}
    for name, (owner, attr) in PARTS.items():
        parts.wrap(owners[owner], attr, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("checkpoint", "partition", "threads", "fleet", "states"))
    parser.add_argument("--per-round", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--trace-model", choices=("lazy", "arrays", "auto"), default="lazy")
    parser.add_argument("--breakdown", action="store_true", help="fleet: CPU ms per round of the main parts")
    parser.add_argument("--no-json", action="store_true", help="checkpoint: skip the format-1 JSON comparison")
    parser.add_argument("--devices", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--threads", nargs="+", default=["1", "2"], help="simulation.torch_threads values")
    parser.add_argument("--rounds", type=int, default=4, help="fleet: rounds run (the first is not measured)")
    parser.add_argument("--timing", choices=("round", "task"), default="round",
                        help="fleet: time training once per batch of tasks (default) or once per task (the older instrument)")
    parser.add_argument("--profile", metavar="FILE", help="fleet: cProfile (process CPU) of rounds 2.., less training and evaluation, into FILE (pstats)")
    args = parser.parse_args()
    if args.what == "threads":
        for setting in args.threads:
            print(bench_threads(int(setting) if setting.isdigit() else setting), flush=True)
        return
    if args.what == "states":
        for k in args.per_round:
            _print(bench_states(k))
        return
    if args.what == "fleet":
        for n in args.devices:
            for k in args.per_round:
                if k <= n:
                    _print(bench_fleet(n, k, rounds=args.rounds, trace_model=args.trace_model,
                                       breakdown=args.breakdown, timing=args.timing,
                                       profile=args.profile))
        return
    for n in args.devices:
        row = bench_checkpoint(n, not args.no_json) if args.what == "checkpoint" else bench_partition(n)
        _print(row)


def _print(row: dict[str, float]) -> None:
    print(" ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items()), flush=True)


if __name__ == "__main__":
    main()
