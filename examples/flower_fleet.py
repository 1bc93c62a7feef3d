"""fedfit's dynamic batching inside a Flower simulation, next to Flower's plain FedAvg.

Six simulated Flower nodes stand in for six fedfit tiers (flagship, mid-range and older
phones, a tablet, a smartwatch, a vehicle computer), each with its tier's training-memory
budget. Both runs train the same CNN on the same Fashion-MNIST partition for the same rounds:

* **Flower FedAvg**: a plain ClientApp training at a fixed batch 32. On the nodes whose budget
  cannot hold batch 32 (fedfit's memory model says so) the task fails out of memory — the
  OOM-equivalent failure a real device of that tier would hit — and Flower aggregates without it.
* **fedfit in Flower**: :func:`fedfit.flower.fedfit_client_app` decides each node's batch from
  its psutil monitor (capped at the budget) and accumulates gradients up to effective batch 32;
  :class:`fedfit.flower.FedfitStrategy` selects by readiness and aggregates with fedfit's rule.

Run:  PYTHONPATH=src python examples/flower_fleet.py [--rounds 10] [--target 0.65]
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from dataclasses import dataclass, field

os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
from flwr.app import ArrayRecord, Context, Message, MetricRecord, RecordDict  # noqa: E402
from flwr.clientapp import ClientApp  # noqa: E402
from flwr.serverapp import Grid, ServerApp  # noqa: E402
from flwr.serverapp.strategy import FedAvg, Strategy  # noqa: E402

from fedfit.cost import MemoryModel, measure  # noqa: E402
from fedfit.flower import (DeviceSide, FedfitStrategy, PartitionData, SimulatedOutOfMemory,  # noqa: E402
                           SimulatedTiers, check_fits, fedfit_client_app, run_local_simulation)
from fedfit.flower.records import params_record, record_params  # noqa: E402
from fedfit.models import ModelSpec  # noqa: E402
from fedfit.policy.batching import BatchingRules  # noqa: E402
from fedfit.training import evaluate, train  # noqa: E402
from fedfit.types import TrainPlan  # noqa: E402

TIERS = SimulatedTiers(("flagship_phone", "midrange_phone", "older_phone", "tablet", "smartwatch",
                        "vehicle_computer"))
SPEC = ModelSpec("cnn", (1, 28, 28), 10)
BATCH = 32


@dataclass
class Trace:
    """What one run saw: accuracy and wall time after each round, failures, micro-batches."""

    accuracy: list[float] = field(default_factory=list)
    elapsed_s: list[float] = field(default_factory=list)
    oom: int = 0
    updates: int = 0
    micro_batches: set[int] = field(default_factory=set)

    def to_target(self, target: float) -> tuple[int | None, float | None]:
        for i, acc in enumerate(self.accuracy):
            if acc >= target:
                return i + 1, self.elapsed_s[i]
        return None, None


class CountingFedAvg(FedAvg):
    """Flower's FedAvg, counting the error replies (the OOM-equivalent failures) it drops."""

    def __init__(self, trace: Trace, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.trace = trace

    def aggregate_train(self, server_round, replies):  # type: ignore[no-untyped-def]
        replies = list(replies)
        self.trace.oom += sum(1 for r in replies if r.has_error())
        self.trace.updates += sum(1 for r in replies if not r.has_error())
        return super().aggregate_train(server_round, replies)


def plain_client(data: PartitionData, lr: float) -> ClientApp:
    """A plain Flower client: fixed batch 32, failing where the node's budget cannot hold it."""
    app = ClientApp()

    @app.train()
    def _train(message: Message, context: Context) -> Message:
        node = int(context.node_config["partition-id"])
        profile = TIERS.profile(node)
        plan = TrainPlan(device_id=node, round=int(message.content["config"]["server-round"]), micro_batch=BATCH, lr=lr)
        check_fits(plan, profile, measure(SPEC), MemoryModel(), profile.training_memory_bytes)  # raises: OOM
        x, y = data.train(node)
        update = train(SPEC.build(), record_params(message.content["arrays"]), x, y, plan, seed=0)
        metrics = MetricRecord({"num-examples": len(y)})
        return Message(RecordDict({"arrays": params_record(update.params), "metrics": metrics}), reply_to=message)

    return app


def server(strategy: Strategy, data: PartitionData, rounds: int, trace: Trace) -> ServerApp:
    """A ServerApp running ``strategy`` for ``rounds`` rounds, evaluating centrally each round."""
    app = ServerApp()
    x_test, y_test = data.test()

    @app.main()
    def _main(grid: Grid, context: Context) -> None:
        start = time.perf_counter()

        def central(server_round: int, arrays: ArrayRecord) -> MetricRecord:
            accuracy, loss = evaluate(SPEC.build(), record_params(arrays), x_test, y_test)
            if server_round > 0:
                trace.accuracy.append(accuracy)
                trace.elapsed_s.append(time.perf_counter() - start)
            return MetricRecord({"accuracy": accuracy, "loss": loss})

        torch.manual_seed(0)
        strategy.start(grid=grid, initial_arrays=params_record(SPEC.build().state_dict()), num_rounds=rounds,
                       evaluate_fn=central)

    return app


def run_both(rounds: int, nodes: int, samples: int, num_cpus: int, lr: float) -> tuple[Trace, Trace, FedfitStrategy]:
    """Flower's FedAvg at fixed batch 32, then fedfit in Flower, on the same nodes and data."""
    data = PartitionData("fashion_mnist", nodes, "iid", seed=0, max_train_samples=nodes * samples,
                         max_test_samples=1000)
    flower, fedfit = Trace(), Trace()
    fedavg = CountingFedAvg(flower, fraction_train=1.0, fraction_evaluate=0.0, min_train_nodes=nodes,
                            min_available_nodes=nodes)
    run_local_simulation(server(fedavg, data, rounds, flower), plain_client(data, lr), num_nodes=nodes,
                         num_cpus=num_cpus)
    side = DeviceSide(spec=SPEC, data=data.train, tiers=TIERS, lr=lr,
                      rules=BatchingRules(standard_batch=BATCH, min_effective_batch=BATCH))
    strategy = FedfitStrategy(cohort_size=nodes, min_available_nodes=nodes)
    run_local_simulation(server(strategy, data, rounds, fedfit), fedfit_client_app(side), num_nodes=nodes,
                         num_cpus=num_cpus)
    for log in strategy.rounds:
        fedfit.oom += log.failures_by_cause.get("out_of_memory", 0)
        fedfit.updates += log.updates
        fedfit.micro_batches.update(log.micro_batches)
    return flower, fedfit, strategy


def report(flower: Trace, fedfit: Trace, target: float) -> str:
    """The comparison table."""
    lines = [f"{'run':<22} {'OOM failures':>12} {'updates':>8} {'final acc':>9} {'rounds to':>9} {'s to':>7}",
             f"{'':<22} {'':>12} {'':>8} {'':>9} {target:>9.2f} {target:>7.2f}"]
    for name, t in (("Flower FedAvg, b=32", flower), ("fedfit in Flower", fedfit)):
        r, s = t.to_target(target)
        lines.append(f"{name:<22} {t.oom:>12} {t.updates:>8} {t.accuracy[-1]:>9.3f} "
                     f"{r if r else 'missed':>9} {f'{s:.1f}' if s else 'missed':>7}")
    lines.append(f"OOM-equivalent failures avoided: {flower.oom - fedfit.oom}; fedfit micro-batches used: "
                 f"{sorted(fedfit.micro_batches)} (accumulated to effective batch {BATCH})")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--samples-per-node", type=int, default=300)
    parser.add_argument("--target", type=float, default=0.65)
    parser.add_argument("--num-cpus", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--verbose", action="store_true", help="show Flower's log (each OOM's traceback)")
    args = parser.parse_args()
    if not args.verbose:
        logging.getLogger("flwr").setLevel(logging.CRITICAL)
    torch.set_num_threads(1)
    flower, fedfit, _ = run_both(args.rounds, len(TIERS.names), args.samples_per_node, args.num_cpus, args.lr)
    print(report(flower, fedfit, args.target))


if __name__ == "__main__":
    main()
