"""Vectorised vs one by one, each against a float64 one-by-one reference (which path is off).

Arguments: NAME:SEED:EPOCHS, NAME one of logreg, mlp_relu, mlp_tanh (the zoo MLP's shape with
ReLU or tanh, to tell kink crossings from smooth drift).

    OMP_NUM_THREADS=1 PYTHONPATH=src python bench/batched_drift_f64.py mlp_relu:1:3 logreg:0:10
"""
import sys
import torch
from torch import nn
torch.set_num_threads(1)
from fedfit.data import build_federated_data
from fedfit.models import ModelSpec
from fedfit.training.batched import train_cohort
from fedfit.training.trainer import train
from fedfit.training import OptimizerConfig
from fedfit.types import TrainPlan

def build(name):
    torch.manual_seed(0)
    if name == "mlp_tanh":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 200), nn.Tanh(), nn.Linear(200, 200), nn.Tanh(), nn.Linear(200, 10))
    if name == "mlp_relu":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 200), nn.ReLU(), nn.Linear(200, 200), nn.ReLU(), nn.Linear(200, 10))
    return ModelSpec(name, (1, 28, 28), 10).build()

opt = OptimizerConfig(momentum=0.9)
for spec in sys.argv[1:]:
    name, seed, E = spec.split(":"); seed, E = int(seed), int(E)
    data = build_federated_data(dataset="fashion_mnist", num_devices=100, partition="dirichlet", dirichlet_alpha=1.0,
                                seed=seed, max_train_samples=4000, max_test_samples=100)
    dev = [(d.x, d.y) for d in data.train if len(d.x) > 0]
    model = build(name); start = {k: v.clone() for k, v in model.state_dict().items()}
    plans = [TrainPlan(g, 0, micro_batch=16, lr=0.05, local_epochs=E) for g in range(len(dev))]
    one = [train(model, start, x, y, p, seed=seed, optimizer=opt).params for (x, y), p in zip(dev, plans)]
    vec = [u.params for u in train_cohort(model, [start] * len(dev), dev, plans, seed=seed, optimizer=opt)]
    m64 = build(name).double(); s64 = {k: v.double() for k, v in start.items()}
    ref = [train(m64, s64, x.double(), y, p, seed=seed, optimizer=opt).params for (x, y), p in zip(dev, plans)]
    d = lambda a, b: max((a[k].double() - b[k].double()).abs().max().item() for k in a)
    ex = [d(a, b) for a, b in zip(one, vec)]; lo = [d(a, r) for a, r in zip(one, ref)]; ve = [d(b, r) for b, r in zip(vec, ref)]
    med = lambda v: sorted(v)[len(v) // 2]
    worst = max(range(len(ex)), key=ex.__getitem__)
    print(f"{name} seed={seed} epochs={E}: |vec-local| max {max(ex):.1e} med {med(ex):.1e}; |local-f64| max {max(lo):.1e} "
          f"med {med(lo):.1e}; |vec-f64| max {max(ve):.1e} med {med(ve):.1e}; worst device {worst} (n={len(dev[worst][0])}): "
          f"|vec-local| {ex[worst]:.1e}, |local-f64| {lo[worst]:.1e}, |vec-f64| {ve[worst]:.1e}", flush=True)
