"""Where the side by side's fedfit round loop goes on the threads (or local) executor, per training
thread: busy wall, CPU, run-queue wait (/proc schedstat) and the rest, blocked (waiting on the
interpreter lock), and how much of the loop has 0, 1 or 2 training tasks running (issue 15, flw15k).

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/threads_probe.py --side fedfit:threads   # or fedfit:local
"""
import sys, time, threading, json
sys.path.insert(0, "bench")
import torch
import flower_side_by_side as fsb
from fedfit.simulation import threaded
from fedfit.experiment import built

def sched():
    a = open("/proc/thread-self/schedstat").read().split()
    return int(a[0]) / 1e9, int(a[1]) / 1e9

spans = []  # (thread, t0, t1, cpu, rq)
orig = threaded.ThreadExecutor._train
def _train(self, task, x, y):
    t0 = time.perf_counter(); c0, q0 = sched()
    try:
        return orig(self, task, x, y)
    finally:
        c1, q1 = sched(); spans.append((threading.current_thread().name, t0, time.perf_counter(), c1 - c0, q1 - q0))
threaded.ThreadExecutor._train = _train
from fedfit.simulation import workload as wl
orig_run = wl.Workload.run
def _run(self, task):
    t0 = time.perf_counter(); c0, q0 = sched()
    try:
        return orig_run(self, task)
    finally:
        c1, q1 = sched(); spans.append((threading.current_thread().name, t0, time.perf_counter(), c1 - c0, q1 - q0))
wl.Workload.run = _run

args, _ = fsb.parse(sys.argv[1:])
ex = fsb.fedfit_executor(args.side or "fedfit:threads", args)
torch.set_num_threads(1)
import tempfile, pathlib
with tempfile.TemporaryDirectory() as tmp:
    trace = pathlib.Path(tmp) / "t.csv"; trace.write_text(fsb.ALWAYS_ON)
    cfg = fsb.fedfit_config(args, str(trace), ex)
    with built(cfg) as exp:
        rounds = []
        s = time.perf_counter(); dc0, dq0 = sched(); pc0 = time.process_time()
        t = s
        for out in exp.orchestrator.rounds(exp.initial_params):
            now = time.perf_counter(); rounds.append((t, now)); t = now
        e = time.perf_counter(); dc1, dq1 = sched(); pc1 = time.process_time()
loop = e - s
print(f"executor {ex}: loop {loop:.3f}s  process cpu {pc1-pc0:.3f}s  driver thread cpu {dc1-dc0:.3f}s rq {dq1-dq0:.3f}s  tasks {len(spans)}")
by = {}
for name, t0, t1, c, q in spans:
    b = by.setdefault(name, [0, 0, 0, 0]); b[0] += t1 - t0; b[1] += c; b[2] += q; b[3] += 1
for name, (w, c, q, n) in sorted(by.items()):
    print(f"  {name}: {n} tasks busy {w:.3f}s ({w/loop:.0%} of loop)  cpu {c:.3f}  runq {q:.3f}  blocked {w-c-q:.3f}s ({(w-c-q)/w:.0%})  per task cpu {c/n*1e3:.1f} ms")
# concurrency profile
ev = sorted([(t0, 1) for _, t0, _, _, _ in spans] + [(t1, -1) for _, _, t1, _, _ in spans])
level, last, acc = 0, s, {0: 0.0, 1: 0.0, 2: 0.0}
for tt, d in ev:
    acc[min(level, 2)] += tt - last; level += d; last = tt
acc[0] += e - last
print("  loop time with 0/1/2 tasks running: " + ", ".join(f"{k}: {v:.3f}s ({v/loop:.0%})" for k, v in acc.items()))
tc = sum(c for *_, c, _ in spans); print(f"  training cpu total {tc:.3f}s; driver cpu {dc1-dc0:.3f}s")
