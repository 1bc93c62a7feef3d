"""Batched executor: how far vectorised and one-by-one training drift apart with local steps (bat15b).

Max/median abs param difference from local (one by one, float32), by local epochs: the vectorised
path (train_cohort), and local itself from starting weights nudged by one ulp (a rounding-sized
perturbation). Arguments: MODEL:SEED:EPOCHS ... (100 devices, Fashion-MNIST, Dirichlet 1, 40 samples
each on average, batch 16, SGD momentum 0.9, lr 0.05).

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/batched_drift.py logreg:0:1 mlp:1:3 cnn:0:1
"""
import sys
import torch
torch.set_num_threads(1)
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.training.batched import train_cohort
from fedfit.training.trainer import train
from fedfit.training import OptimizerConfig
from fedfit.types import TrainPlan

opt = OptimizerConfig(momentum=0.9)
print("| model | seed | epochs | max steps | vectorised vs local: max / median | local from 1-ulp-nudged start vs local: max / median |")
print("|---|---|---|---|---|---|")
for spec in sys.argv[1:]:
    name, seed, E = spec.split(":"); seed, E = int(seed), int(E)
    data = build_federated_data(dataset="fashion_mnist", num_devices=100, partition="dirichlet", dirichlet_alpha=1.0,
                                seed=seed, max_train_samples=4000, max_test_samples=100)
    dev = [(d.x, d.y) for d in data.train if len(d.x) > 0]
    torch.manual_seed(seed)
    model = ModelSpec(name, (1, 28, 28), 10).build(); start = {k: v.clone() for k, v in model.state_dict().items()}
    nudged = {k: torch.nextafter(v, torch.full_like(v, float("inf"))) for k, v in start.items()}
    plans = [TrainPlan(g, 0, micro_batch=16, lr=0.05, local_epochs=E) for g in range(len(dev))]
    one = [train(model, start, x, y, p, seed=seed, optimizer=opt).params for (x, y), p in zip(dev, plans)]
    vec = train_cohort(model, [start] * len(dev), dev, plans, seed=seed, optimizer=opt)
    nud = [train(model, nudged, x, y, p, seed=seed, optimizer=opt).params for (x, y), p in zip(dev, plans)]
    d = lambda a, b: max((a[k] - b[k]).abs().max().item() for k in a)
    ex = sorted(d(a, b.params) for a, b in zip(one, vec)); nu = sorted(d(a, b) for a, b in zip(one, nud))
    print(f"| {name} | {seed} | {E} | {max(u.steps for u in vec)} | {ex[-1]:.1e} / {ex[len(ex)//2]:.1e} | "
          f"{nu[-1]:.1e} / {nu[len(nu)//2]:.1e} |", flush=True)
