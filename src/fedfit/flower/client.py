"""fedfit's device side inside a Flower ``ClientApp``.

:func:`fedfit_client_app` builds a ``ClientApp`` whose handlers do, for every message, what a
fedfit device does for a task (as ``fedfit device`` does over HTTP)::

    train     snapshot the monitor (psutil, capped by the memory budget)
              → decide_batch (memory, compute, battery, heat, link; accumulation up to the
                minimum effective batch) → fedfit's trainer with the plan's memory techniques
              → reply arrays + metrics, or an error reply naming the failure cause
    evaluate  accuracy and loss of the received model on the node's data
    query     the node's readiness (affordable batch, predicted duration, battery, heat),
              for :class:`~fedfit.flower.strategy.FedfitStrategy`'s readiness-based selection

The server's train config may carry ``lr`` and ``local-epochs`` (defaults: the side's) and
``sigma-probe`` (``True``: the task measures σ², :mod:`fedfit.training.probe`, as a DYNAMITE task
of a simulated or deployed device does, and replies it as the ``sigma2`` metric) and
``curvature-probe`` (``True``: the σ² probe plus the curvature β_σ along its direction,
:mod:`fedfit.training.curvature_probe`, replied as the ``noise-curvature`` metric).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from flwr.app import ConfigRecord, Context, Message, MetricRecord, RecordDict
from flwr.clientapp import ClientApp

from fedfit.cost.memory import MemoryModel
from fedfit.cost.predictor import TaskPredictor
from fedfit.cost.profile import ModelCost, measure
from fedfit.flower.fleet import SimulatedTiers, check_fits, psutil_budget
from fedfit.flower.records import (
    ARRAYS, CONFIG, CURVATURE_PROBE, READINESS, SIGMA_PROBE, failure_error, flag, number, readiness_record,
    record_params, update_content,
)
from fedfit.devices.monitor import Monitor
from fedfit.models.zoo import ModelSpec
from fedfit.policy.batching import BatchDecision, BatchingRules, decide_batch
from fedfit.policy.readiness import readiness
from fedfit.training.optimizers import OptimizerConfig
from fedfit.training.trainer import evaluate, train
from fedfit.types import DeviceProfile, DeviceState, FailureCause, Link, Techniques, TrainPlan

#: A node's local data: partition id → (inputs, labels).
#: Bandwidth assumed for a Flower node whose monitor measured none (1 Tbit/s: transfers cost latency only).
UNMEASURED_LINK_BPS = 1e12
NodeData = Callable[[int], tuple[torch.Tensor, torch.Tensor]]


@dataclass(frozen=True)
class DeviceSide:
    """What a fedfit device brings to a Flower client.

    Attributes:
        spec: the model (a zoo name or the user's factory, :class:`~fedfit.models.ModelSpec`).
        data: the node's training data by partition id (evaluation uses it too unless
            ``test_data`` is given).
        tiers: the tier each node stands in for (its profile: FLOP/s, memory, utilisation curve).
        monitor: a node's monitor from its profile; default: psutil capped at the tier's budget.
        rules: the dynamic-batching rules (standard batch 32, minimum effective batch, ...).
        techniques: memory techniques every task trains with.
        memory: the memory model.
        optimizer: the local optimiser.
        lr: local learning rate unless the train config sends ``lr``.
        local_epochs: local epochs unless the train config sends ``local-epochs``.
        seed: seed of the local shuffling (with node and round).
        simulate_memory: treat the monitor's free memory as a hard limit: a task predicted to
            peak above it fails out of memory (Flower's simulation cannot run out for real).
        test_data: the node's evaluation data; ``None``: ``data``.
    """

    spec: ModelSpec
    data: NodeData
    tiers: SimulatedTiers
    monitor: Callable[[DeviceProfile], Monitor] = psutil_budget
    rules: BatchingRules = BatchingRules()
    techniques: Techniques = Techniques()
    memory: MemoryModel = field(default_factory=MemoryModel)
    optimizer: OptimizerConfig = OptimizerConfig()
    lr: float = 0.05
    local_epochs: int = 1
    seed: int = 0
    simulate_memory: bool = True
    test_data: NodeData | None = None

    def cost(self) -> ModelCost:
        """The measured model (cached per process by :func:`~fedfit.cost.measure`)."""
        return measure(self.spec)

    def snapshot(self, profile: DeviceProfile) -> DeviceState:
        """The node's state now, as a Flower node: it is reachable (it got the message), and a
        link its monitor cannot see or measure counts as fast (Flower moves the model)."""
        state = self.monitor(profile).snapshot(0.0)
        if state.bandwidth_bps > 0 and state.online:
            return state
        link = Link.WIFI if state.link is Link.OFFLINE else state.link
        return dataclasses.replace(state, online=True, link=link, bandwidth_bps=UNMEASURED_LINK_BPS)

    def plan(self, node: int, round_: int, config: ConfigRecord) -> tuple[TrainPlan, BatchDecision]:
        """The node's plan for this round: its batch decided now from its monitor's snapshot, the
        σ² probe taken when the config asks (``sigma-probe``), the curvature probe with it
        (``curvature-probe``, which implies ``sigma-probe``)."""
        profile = self.tiers.profile(node)
        state = self.snapshot(profile)
        d = decide_batch(profile, state, self.cost(), self.memory, self.rules, self.techniques)
        epochs = int(number(config, "local-epochs", self.local_epochs)) * d.epochs_scale
        curvature = flag(config, CURVATURE_PROBE)
        plan = TrainPlan(device_id=node, round=round_, micro_batch=max(d.micro_batch, 1),
                         accumulation_steps=d.accumulation_steps, local_epochs=epochs,
                         lr=number(config, "lr", self.lr), bound_by=d.bound_by,
                         techniques=self.techniques, sigma_probe=curvature or flag(config, SIGMA_PROBE),
                         curvature_probe=curvature)
        if self.simulate_memory and not d.declined:
            check_fits(plan, profile, self.cost(), self.memory, state.free_memory_bytes)
        return plan, d


def _node(context: Context) -> int:
    return int(context.node_config["partition-id"])


def _round(message: Message) -> int:
    return int(number(message.content.config_records[CONFIG], "server-round", 0))


def train_reply(side: DeviceSide, message: Message, context: Context) -> Message:
    """Train the received model on the node as a fedfit device would (see the module docstring)."""
    node, round_ = _node(context), _round(message)
    try:
        plan, decision = side.plan(node, round_, message.content.config_records[CONFIG])
        if decision.declined:
            return Message(failure_error(FailureCause.DECLINED, decision.reason), reply_to=message)
        x, y = side.data(node)
        plan = dataclasses.replace(plan, max_steps=_step_cap(plan, decision, len(y)))
        params = record_params(message.content.array_records[ARRAYS])
        update = train(side.spec.build(), params, x, y, plan, seed=side.seed, optimizer=side.optimizer)
    except MemoryError as err:  # SimulatedOutOfMemory, or the host's own
        return Message(failure_error(FailureCause.OUT_OF_MEMORY, str(err) or "allocation failed"), reply_to=message)
    return Message(update_content(update), reply_to=message)


def _step_cap(plan: TrainPlan, decision: BatchDecision, num_examples: int) -> int | None:
    """Optimiser steps left after the battery / poor-link rules cut the local work (``None``: all)."""
    if decision.work_fraction >= 1.0:
        return None
    steps_per_epoch = math.ceil(num_examples / plan.effective_batch)
    return max(1, int(decision.work_fraction * plan.local_epochs * steps_per_epoch))


def evaluate_reply(side: DeviceSide, message: Message, context: Context) -> Message:
    """Accuracy and loss of the received model on the node's evaluation data."""
    node = _node(context)
    x, y = (side.test_data or side.data)(node)
    accuracy, loss = evaluate(side.spec.build(), record_params(message.content.array_records[ARRAYS]), x, y)
    metrics = MetricRecord({"accuracy": accuracy, "loss": loss, "num-examples": len(y)})
    return Message(RecordDict({"metrics": metrics}), reply_to=message)


def query_reply(side: DeviceSide, message: Message, context: Context) -> Message:
    """The node's readiness now (from its monitor), for readiness-based selection."""
    node = _node(context)
    profile = side.tiers.profile(node)
    state = side.snapshot(profile)
    decision = decide_batch(profile, state, side.cost(), side.memory, side.rules, side.techniques)
    plan = TrainPlan(device_id=0, round=0, micro_batch=max(decision.micro_batch, 1), lr=side.lr,
                     local_epochs=side.local_epochs, techniques=side.techniques)
    cost = side.cost()
    predictor = TaskPredictor(costs=lambda _w: cost, memory=side.memory, num_examples=[len(side.data(node)[1])])
    ready = dataclasses.replace(readiness(plan, profile, state, predictor), device_id=node)
    return Message(RecordDict({READINESS: readiness_record(ready)}), reply_to=message)


def fedfit_client_app(side: DeviceSide) -> ClientApp:
    """A Flower ``ClientApp`` running fedfit's device side (train, evaluate and query handlers).

    Example (in a Flower project's ``client_app.py``)::

        side = DeviceSide(spec=ModelSpec("cnn", (1, 28, 28), 10), data=my_partition,
                          tiers=SimulatedTiers(("flagship_phone", "older_phone")))
        app = fedfit_client_app(side)
    """
    app = ClientApp()

    @app.train()
    def _train(message: Message, context: Context) -> Message:
        return train_reply(side, message, context)

    @app.evaluate()
    def _evaluate(message: Message, context: Context) -> Message:
        return evaluate_reply(side, message, context)

    @app.query()
    def _query(message: Message, context: Context) -> Message:
        return query_reply(side, message, context)

    return app
