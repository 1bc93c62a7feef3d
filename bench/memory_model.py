"""Predicted vs measured peak training memory for the MLP and the CNN, batch 1-256 (CPU).

For every (model, batch) a *fresh* Python process imports torch, warms the kernels up on a
throw-away model (one SGD step: the optimiser's first step imports modules), then records its resident set (VmRSS), resets the kernel's peak-RSS mark
(``/proc/self/clear_refs`` ← 5, Linux) and builds the model, the batch and the optimiser and
runs one real training step (forward, backward, SGD step). Measured = peak RSS (VmHWM) − RSS
before, the median of three fresh processes (default allocator; ``--tight-allocator`` fixes
glibc's mmap threshold at 64 KiB so the peak follows live tensors more closely); predicted = ``MemoryModel().peak_bytes(measure(spec), batch)`` (weights + gradients +
saved activations + backward gradient buffers + 256 KiB workspace). Error = (predicted −
measured) / measured. Small batches are dominated by the fixed part, where the workspace guess
and the allocator re-using the warm-up's freed pages decide the error; where the
batch-dependent share (activations + backward buffers) dominates, the activation model does.

    PYTHONPATH=src python bench/memory_model.py [--tight-allocator]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from fedfit.cost import MemoryModel, measure
from fedfit.models import ModelSpec

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
MODELS = ("mlp", "cnn")

_CHILD = r"""
import json, re, sys
import torch
from torch import nn
from fedfit.models import build_model

def status(key):
    return int(re.search(key + r":\s+(\d+)", open("/proc/self/status").read()).group(1)) * 1024

name, batch = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(1)
torch.manual_seed(0)
warm = build_model(name, (1, 8, 8), 10)  # kernels, thread pool, lazy imports of the optimiser
warm_opt = torch.optim.SGD(warm.parameters(), lr=0.01)
nn.functional.cross_entropy(warm(torch.randn(2, 1, 8, 8)), torch.tensor([0, 1])).backward()
warm_opt.step()
del warm, warm_opt
before = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
model = build_model(name, (1, 28, 28), 10)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(batch, 1, 28, 28), torch.randint(0, 10, (batch,))
opt.zero_grad()
nn.functional.cross_entropy(model(x), y).backward()
opt.step()
print(json.dumps({"measured": status("VmHWM") - before}))
"""


#: ``--tight-allocator``: fix glibc's mmap threshold at 64 KiB, so peak RSS follows live tensors
#: (glibc's default dynamic threshold keeps freed buffers resident, as a real process would).
TIGHT_ALLOCATOR = "--tight-allocator" in sys.argv


def measured_bytes(name: str, batch: int, repeats: int = 3) -> int:
    """Median peak-RSS growth of one training step, each in a fresh process."""
    return sorted(_measure_once(name, batch) for _ in range(repeats))[repeats // 2]


def _measure_once(name: str, batch: int) -> int:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if TIGHT_ALLOCATOR:  # large buffers mapped and unmapped as tensors live and die
        env["MALLOC_MMAP_THRESHOLD_"] = "65536"
    out = subprocess.run([sys.executable, "-c", _CHILD, name, str(batch)], capture_output=True, text=True,
                         check=True, env=env)
    return int(json.loads(out.stdout.strip().splitlines()[-1])["measured"])


def main() -> None:
    memory = MemoryModel()
    print(f"allocator: {'glibc, mmap threshold 64 KiB' if TIGHT_ALLOCATOR else 'glibc default'}")
    print(f"{'model':5} {'batch':>5} {'predicted KiB':>14} {'measured KiB':>13} {'error':>7} "
          f"{'batch-dependent share':>22}")
    for name in MODELS:
        cost = measure(ModelSpec(name, (1, 28, 28), 10))
        for batch in BATCHES:
            predicted = memory.peak_bytes(cost, batch)
            measured = measured_bytes(name, batch)
            per_sample = cost.activation_bytes_per_sample + cost.backward_transient_bytes_per_sample
            share = per_sample * batch / predicted
            print(f"{name:5} {batch:5d} {predicted / 1024:14.0f} {measured / 1024:13.0f} "
                  f"{(predicted - measured) / measured:7.1%} {share:22.0%}")


if __name__ == "__main__":
    main()
