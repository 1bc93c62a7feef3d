"""Simulator overhead: the same training work through fedfit and through a plain PyTorch loop.

fedfit runs the scenario first (virtual clock, cost model, traces, validation, aggregation,
logging off). The plain loop then replays exactly the work fedfit's events record — for each
round, the same devices train from the same global model with the same batch, epochs and
shuffling, and are averaged by sample count — with nothing else. Both load their data, both
train on one intra-op thread and evaluate after every round. Prints the wall-time ratio.

    .venv/bin/python bench/overhead.py [--rounds 10] [--config examples/photo_app.yaml]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn

from fedfit.config import ExperimentConfig, load_config, with_overrides
from fedfit.data import build_federated_data
from fedfit.experiment import built
from fedfit.inputs import data_kwargs
from fedfit.models import build_model
from fedfit.training import evaluate, task_generator
from fedfit.types import Params, TaskResult, TrainPlan


def run_fedfit(config: ExperimentConfig) -> tuple[float, list[list[TaskResult]], float, Params]:
    t0 = time.perf_counter()
    rounds: list[list[TaskResult]] = []
    acc = None
    with built(config) as exp:
        params = exp.initial_params
        for outcome in exp.orchestrator.rounds(params):
            rounds.append([r for r in outcome.results if r.ok])
            acc = outcome.report.accuracy
        initial = exp.initial_params
    return time.perf_counter() - t0, rounds, float(acc or 0.0), initial


def plain_sgd(model: nn.Module, x: torch.Tensor, y: torch.Tensor, plan: TrainPlan, seed: int) -> int:
    opt = torch.optim.SGD(model.parameters(), lr=plan.lr)
    gen = task_generator(seed, plan.device_id, plan.round)
    for _ in range(plan.local_epochs):
        for idx in torch.randperm(len(x), generator=gen).split(plan.micro_batch):
            opt.zero_grad()
            nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            opt.step()
    return len(x) * plan.local_epochs


def run_plain(config: ExperimentConfig, rounds: list[list[TaskResult]], initial: Params) -> tuple[float, float]:
    t0 = time.perf_counter()
    data = build_federated_data(**data_kwargs(config))
    model = build_model(config.model.name, data.input_shape, data.num_classes, config.model.width)
    params = {k: v.clone() for k, v in initial.items()}
    acc = 0.0
    threads = torch.get_num_threads()
    for results in rounds:
        sums = {k: torch.zeros_like(v, dtype=torch.float64) for k, v in params.items()}
        total = 0
        torch.set_num_threads(1)
        for res in results:
            model.load_state_dict(params)
            d = data.train[res.plan.device_id]
            n = plain_sgd(model, d.x, d.y, res.plan, config.seed)
            for k, v in model.state_dict().items():
                sums[k] += n * v.double()
            total += n
        torch.set_num_threads(threads)
        if total:
            params = {k: (s / total).float() for k, s in sums.items()}
        acc, _ = evaluate(model, params, data.global_test.x, data.global_test.y)
    return time.perf_counter() - t0, acc


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="examples/photo_app.yaml")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    config = with_overrides(load_config(args.config), {
        "orchestration.rounds": args.rounds, "training.batch_size": args.batch, "batching.mode": "fixed",
        "batching.selection": "uniform",
        "output.plots": False, "output.progress": False})
    fedfit_s, rounds, fedfit_acc, initial = run_fedfit(config)
    plain_s, plain_acc = run_plain(config, rounds, initial)
    updates = sum(len(r) for r in rounds)
    print(f"rounds {args.rounds}, device updates trained {updates}, batch {args.batch}")
    print(f"fedfit simulator : {fedfit_s:7.2f} s wall  (final accuracy {fedfit_acc:.4f})")
    print(f"plain PyTorch    : {plain_s:7.2f} s wall  (final accuracy {plain_acc:.4f})")
    print(f"overhead ratio   : {fedfit_s / plain_s:.3f}  (target <= 1.10)")


if __name__ == "__main__":
    main()
