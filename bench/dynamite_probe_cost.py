"""The σ² probe's CPU cost: median CPU time of a DYNAMITE-shaped task (τ = 50 steps, the zoo MLP)
and of one probe call on a batch of the same size (``fedfit.training.probe``), and of the σ² probe
with the curvature probe's Hessian-vector product on a second batch
(``fedfit.training.curvature_probe``, ``noise_model: curvature``).

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/dynamite_probe_cost.py
"""

from __future__ import annotations

import statistics
import time

import torch

from fedfit.models import MLP
from fedfit.training.curvature_probe import half_batch_probe
from fedfit.training.probe import half_batch_sigma2
from fedfit.training.trainer import train
from fedfit.types import TrainPlan


def main() -> None:
    torch.manual_seed(0)
    for feats, n in ((64, 180), (784, 200)):
        x, y = torch.randn(n, feats), torch.randint(0, 10, (n,))
        model = MLP(feats, 10)
        params = {k: v.clone() for k, v in model.state_dict().items()}
        for b in (8, 32):
            plan = TrainPlan(0, 0, micro_batch=b, local_epochs=50, max_steps=50, lr=0.05)
            tasks, probes, curved = [], [], []
            for r in range(40):
                start = time.process_time()
                train(model, params, x, y, plan, seed=r)
                tasks.append(time.process_time() - start)
                start = time.process_time()
                half_batch_sigma2(model, x, y, torch.randperm(n)[:b])
                probes.append(time.process_time() - start)
                order = torch.randperm(n)
                start = time.process_time()
                half_batch_probe(model, x, y, order[:b], order[b:2 * b])
                curved.append(time.process_time() - start)
            t, p, c = statistics.median(tasks), statistics.median(probes), statistics.median(curved)
            print(f"features {feats}, batch {b}, tau 50: task {t * 1e3:.2f} ms CPU, probe {p * 1e3:.3f} ms CPU "
                  f"= {p / t * 100:.1f}% of the task; with curvature {c * 1e3:.3f} ms = {c / t * 100:.1f}%")


if __name__ == "__main__":
    main()
