"""(helper orch15d; the code before as a renamed package: `git archive b35575f src/fedfit | tar -x -C /tmp/orch15d/` moved to /tmp/orch15d/refpkg/fedfit_ref, its imports rewritten to fedfit_ref) Paired in one process: lazy_batch.states_at of N devices (3 phone tiers), base (fedfit_ref) vs this branch."""
import sys, time, statistics, importlib
import numpy as np
sys.path.insert(0, "/tmp/orch15d/refpkg")
N = int(sys.argv[1]) if len(sys.argv) > 1 else 1400
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 40
fns = {}
for pkg in ("fedfit_ref", "fedfit"):
    cat = importlib.import_module(pkg + ".devices.catalogue"); lb = importlib.import_module(pkg + ".devices.lazy_batch")
    tp = importlib.import_module(pkg + ".devices.trace_params")
    params = tp.TraceParams()
    profs = [cat.tier(t) for t in ("flagship_phone", "midrange_phone", "older_phone")]
    fns[pkg] = (lb, params, profs)
rng = np.random.default_rng(0)
ms = {k: [] for k in fns}
same = True
for r in range(REPS):
    ids = np.sort(rng.choice(1_000_000, N, replace=False)).astype(np.int64)
    t = float(rng.uniform(0, 5 * 86400))
    out = {}
    for pkg in (("fedfit_ref", "fedfit") if r % 2 == 0 else ("fedfit", "fedfit_ref")):
        lb, params, profs = fns[pkg]
        per = [profs[i % 3] for i in range(N)]
        # one shape per call: group the ids by tier as the fleet does (all three phone tiers share a shape)
        c0 = time.process_time()
        states = lb.states_at(per, params, 0, ids, t)
        ms[pkg].append((time.process_time() - c0) * 1e3)
        out[pkg] = [tuple(x.name if hasattr(x, "name") else x for x in (getattr(s, f) for f in s.__dataclass_fields__)) for s in states]
    same &= out["fedfit_ref"] == out["fedfit"]
for k, v in ms.items():
    print(k.ljust(10), f"states_at of {N}: median {statistics.median(v):.2f} ms, min {min(v):.2f} ms ({REPS} pairs)")
print("identical states:", same)
