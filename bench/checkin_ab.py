"""Paired A/B in one process of a round's check-in and planning at 1,000,000 devices: the
candidates' sample, their lazy states with training energy taken off, the registry's report
and the plans, before (package ``fedfit_ref``) vs now (``fedfit``), alternating order.

The code before as a renamed package (helper in15):

    mkdir -p /tmp/in15/refpkg && git archive main src | tar -x -C /tmp/in15/ref
    cp -r /tmp/in15/ref/src/fedfit /tmp/in15/refpkg/fedfit_ref   # then every `fedfit.` import -> `fedfit_ref.`
    OMP_NUM_THREADS=1 PYTHONPATH=src .venv/bin/python bench/checkin_ab.py /tmp/in15/refpkg 30
"""
import importlib, os, statistics, sys, time

import numpy as np

sys.path.insert(0, sys.argv[1])
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 30
N, K = 1_000_000, 1000


def setup(pkg: str) -> dict:
    m = {name: importlib.import_module(f"{pkg}.{name}") for name in (
        "devices.catalogue", "devices.trace_params", "devices.lazy_traces", "devices.registry", "devices.traces",
        "policy.candidates", "policy.planning", "policy.selection")}
    profiles = [m["devices.catalogue"].tier(t) for t in ("flagship_phone", "midrange_phone", "older_phone")]
    fleet = [profiles[d % 3] for d in range(N)]
    registry = m["devices.registry"].Registry()
    for d in range(N):
        registry.add(d, fleet[d])
    used = [0.0] * N
    for d in np.random.default_rng(1).choice(N, N // 3, replace=False).tolist():
        used[d] = 500.0  # trained before: its battery is lower than its trace's
    return {"m": m, "fleet": fleet, "ids": list(range(N)), "registry": registry, "used": used,
            "traces": m["devices.lazy_traces"].LazyTraces(fleet, m["devices.trace_params"].TraceParams(), 0),
            "planner": m["policy.planning"].FixedPlanner(batch_size=16, max_steps=4)}


def round_(t: dict, r: int, busy: set, now: float) -> tuple[dict, list]:
    m, fleet, used, ms = t["m"], t["fleet"], t["used"], {}
    c0 = time.process_time()
    ids = m["policy.candidates"].sample_idle(t["ids"], lambda d: d in busy, K, seed=0, draw=r)  # as fleet.busy
    c1 = time.process_time()
    states = t["traces"].states_at(ids, now)
    states = [m["devices.traces"].with_consumption(s, fleet[d], used[d]) for d, s in zip(ids, states)]
    c2 = time.process_time()
    t["registry"].report_states(ids, states, now)
    c3 = time.process_time()
    chosen = m["policy.selection"].uniform_cohort(ids, K, seed=0, round_=r)
    plans = t["planner"].plan_many(chosen, r, t["registry"].profile, t["registry"].reported_state)
    c4 = time.process_time()
    ms.update(candidates=c1 - c0, states=c2 - c1, report=c3 - c2, plans=c4 - c3, total=c4 - c0)
    return ms, [ids, [tuple(getattr(s, f) for f in s.__slots__) for s in states],
                [tuple(getattr(p, f) for f in ("device_id", "round", "micro_batch", "lr", "max_steps")) for p in plans]]


trees = {"before": setup("fedfit_ref"), "now": setup("fedfit")}
times = {k: {} for k in trees}
same = True
rng = np.random.default_rng(0)
for r in range(REPS):
    busy = set(rng.choice(N, 1000, replace=False).tolist())
    now = float(rng.uniform(0, 5 * 86400))
    out = {}
    for name in (("before", "now") if r % 2 == 0 else ("now", "before")):
        ms, out[name] = round_(trees[name], r, busy, now)
        for part, s in ms.items():
            times[name].setdefault(part, []).append(s * 1e3)
    same &= repr(out["before"]) == repr(out["now"]).replace("fedfit.", "fedfit_ref.")
for part in times["now"]:
    b, n = statistics.median(times["before"][part]), statistics.median(times["now"][part])
    print(f"{part:10s} before {b:6.2f} ms  now {n:6.2f} ms  (median CPU ms of {REPS}, paired in one process)")
print(f"identical candidates, states and plans: {same}; load {os.getloadavg()[0]:.1f}")
