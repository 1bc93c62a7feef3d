"""Why the memory model "over-predicts" the LSTM: requested vs resident bytes of one LSTM layer.

For one ``nn.LSTM(28, 64)`` on 128 sequences of 28 steps, forward alone and forward + backward,
with PyTorch's oneDNN (mkldnn) CPU path on and off, it prints the peak growth of live tensor
bytes the allocator hands out (:func:`fedfit.cost.allocator.peak_live_bytes`, what fedfit's
memory model is fitted to) and the peak growth of resident memory (``VmHWM`` after
``clear_refs``, with glibc's mmap threshold pinned so large tensors are their own mappings),
each in a fresh process. Pages a tensor never writes are allocated but never resident.

    MALLOC_MMAP_THRESHOLD_=65536 PYTHONPATH=src python bench/lstm_footprint.py
"""

from __future__ import annotations

import os
import subprocess
import sys

import torch

from fedfit.cost.allocator import peak_live_bytes


def _status_kib(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field):
            return int(line.split()[1])
    raise RuntimeError(field)


def child(mkldnn: bool) -> None:
    """Measure both passes in this process (fresh: nothing else was resident)."""
    torch.set_num_threads(1)
    torch.backends.mkldnn.enabled = mkldnn
    lstm = torch.nn.LSTM(28, 64, batch_first=True)
    x = torch.randn(128, 28, 28, generator=torch.Generator().manual_seed(0))

    def forward() -> torch.Tensor:
        return lstm(x)[0]

    def step() -> None:
        lstm(x)[0].sum().backward()

    for name, run in (("forward", forward), ("forward+backward", step)):
        run()  # warm-up
        lstm.zero_grad(set_to_none=True)
        requested = peak_live_bytes(run)
        lstm.zero_grad(set_to_none=True)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        base = _status_kib("VmRSS:")
        out = run()
        del out
        resident = (_status_kib("VmHWM:") - base) * 1024
        lstm.zero_grad(set_to_none=True)
        print(f"{'on' if mkldnn else 'off':6} {name:17} {requested / 2**20:13.2f} {resident / 2**20:12.2f} "
              f"{resident / requested:8.2f}", flush=True)


def main() -> None:
    if len(sys.argv) > 1:
        child(sys.argv[1] == "on")
        return
    print(f"{'oneDNN':6} {'pass':17} {'requested MiB':>13} {'resident MiB':>12} {'res/req':>8}", flush=True)
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": "1"}
    for mode in ("on", "off"):
        subprocess.run([sys.executable, __file__, mode], env=env, check=True)


if __name__ == "__main__":
    main()
