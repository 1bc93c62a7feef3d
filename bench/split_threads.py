"""Whole-build seconds of Fashion-MNIST's federated data, the devices' shares taken one by one
against on ``SPLIT_THREADS`` threads (``fedfit.data.federated``; the ``SPLIT_MIN_SHARE`` guard off, so
both paths run at every size), median of ``--repeats`` builds in one process, alternating.

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/split_threads.py --devices 100 1000 60000
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from fedfit.data import federated
from fedfit.data.federated import build_federated_data


def build_s(devices: int, threads: int) -> float:
    federated.SPLIT_THREADS, federated.SPLIT_MIN_SHARE = threads, 0
    start = time.perf_counter()
    build_federated_data(dataset="fashion_mnist", num_devices=devices, partition="iid", seed=0)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    for devices in args.devices:
        one, many = [], []
        for _ in range(args.repeats):
            one.append(build_s(devices, 1))
            many.append(build_s(devices, args.threads))
        print(f"devices={devices} one_by_one_s={statistics.median(one):.3f} "
              f"threads{args.threads}_s={statistics.median(many):.3f}")


if __name__ == "__main__":
    main()
