"""Training concurrency alone: N MLP updates (600 samples, batch 32) on one thread, or N/2 on each of
two threads, with each thread's wall, CPU, run-queue wait, blocked time and voluntary context
switches (issue 15, flw15k). Under py-spy (``py-spy record --gil -f raw``) it gives the share of
training samples that hold the interpreter lock.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/threads_micro.py 40 one      # or: threads
"""
import os, sys, time, threading
import torch
torch.set_num_threads(1)
from fedfit.models.small import MLP
from fedfit.training import train
from fedfit.types import TrainPlan

g = torch.Generator().manual_seed(0)
X = torch.rand(600, 1, 28, 28, generator=g); Y = torch.randint(0, 10, (600,), generator=g)
base = MLP(784, 10)
P = {k: v.clone() for k, v in base.state_dict().items()}

def st():
    a = open("/proc/thread-self/schedstat").read().split()
    v = [int(l.split()[1]) for l in open("/proc/thread-self/status") if l.startswith("voluntary_ctxt")][0]
    return int(a[0]) / 1e9, int(a[1]) / 1e9, v
def work(n, tid, out):
    torch.set_num_threads(1)
    m = MLP(784, 10)
    c0, q0, v0 = st(); w0 = time.perf_counter()
    for i in range(n):
        train(m, P, X, Y, TrainPlan(device_id=tid * 1000 + i, round=0, micro_batch=32), seed=0)
    c1, q1, v1 = st(); w = time.perf_counter() - w0
    out[tid] = (w, c1 - c0, q1 - q0, w - (c1 - c0) - (q1 - q0), v1 - v0)

N = int(sys.argv[1]) if len(sys.argv) > 1 else 20
mode = sys.argv[2] if len(sys.argv) > 2 else "all"
work(3, 99, {})  # warm
res = {}
if mode in ("all", "one"):
    out = {}; w = time.perf_counter(); work(N, 0, out); res["1 thread"] = (time.perf_counter() - w, out)
if mode in ("all", "threads"):
    out = {}; w = time.perf_counter()
    ts = [threading.Thread(target=work, args=(N // 2, t, out)) for t in range(2)]
    [t.start() for t in ts]; [t.join() for t in ts]
    res["2 threads"] = (time.perf_counter() - w, out)
for k, (wall, out) in res.items():
    print(f"{k:10s} wall {wall:.3f}s  per update {wall/N*1000:.2f} ms  threads(wall,cpu)=" +
          ", ".join("(wall %.2f cpu %.2f runq %.2f blocked %.2f vcs %d)" % v for v in out.values()))
