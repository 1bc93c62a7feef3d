"""A Flower strategy that selects by readiness and aggregates with fedfit's rule.

:class:`FedfitStrategy` is a Flower Message-API ``Strategy`` (its ``start`` runs the rounds)
whose two decisions are fedfit's:

* **select** (``configure_train``): query up to ``candidates`` nodes (a uniform draw from
  (seed, round)) for their :class:`~fedfit.policy.readiness.Readiness` — the batch they can
  afford now, predicted duration, battery, heat — and let a fedfit
  :class:`~fedfit.policy.selection.Selector` choose ``cohort_size`` of them (default: defer
  devices that would run out of memory, run hot or low on battery; prefer devices that afford
  more than batch 2; uniform among the rest). Without the query: uniform from (seed, round).
* **aggregate** (``aggregate_train``): :func:`fedfit.aggregation.aggregate` under an
  :class:`~fedfit.aggregation.AggregationRule`: weighting (samples, examples, ``batch`` =
  the effective batch each device actually used, steps), FedNova normalisation, the
  staleness discount (model versions between the model a device trained and the round it
  arrives in) and the masked average of sub-model coordinates (partial training, pruning).

Failed tasks (error replies) are counted by cause in :attr:`FedfitStrategy.rounds`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from logging import INFO

import torch
from flwr.app import ArrayRecord, ConfigRecord, Message, MessageType, MetricRecord, RecordDict
from flwr.common import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from fedfit.aggregation.rule import AggregationRule, Arrival, aggregate
from fedfit.flower.records import (
    ARRAYS, CONFIG, CURVATURE_PROBE, READINESS, SIGMA_PROBE, content_update, error_cause, number, params_record,
    record_params, record_readiness,
)
from fedfit.policy.dynamite.estimate import RoundObservation, probed_noise_curvature, probed_sigma2
from fedfit.policy.readiness import Readiness
from fedfit.policy.selection import DeferringSelector, ReadinessFirstSelector, Selector, UniformSelector, uniform_cohort
from fedfit.types import Params, Update


@dataclass(frozen=True, slots=True)
class RoundLog:
    """What one Flower round did under the strategy.

    Attributes:
        round: the server round.
        invited: nodes sent a train message.
        updates: updates aggregated.
        failures_by_cause: failed tasks by cause (``out_of_memory``, ``declined``, ...,
            ``client_error`` for an error that is not a fedfit failure).
        micro_batches: micro-batch each aggregated update used.
    """

    round: int
    invited: int
    updates: int
    failures_by_cause: dict[str, int]
    micro_batches: tuple[int, ...]


@dataclass
class _State:
    master: Params = field(default_factory=dict)
    invited: int = 0
    rounds: list[RoundLog] = field(default_factory=list)


class FedfitStrategy(Strategy):
    """fedfit's readiness-based selection and aggregation rule as a Flower strategy.

    Args:
        cohort_size: nodes trained per round.
        rule: fedfit's aggregation rule (weighting, FedNova, staleness, server learning rate).
        selector: chooses the cohort from the candidates' readiness.
        candidates: nodes queried for readiness per round (``None``: every node); 0 skips the
            query and draws the cohort uniformly.
        seed: seed of the candidate and cohort draws.
        fraction_evaluate: share of nodes asked to evaluate each round (0: none).
        min_available_nodes: nodes to wait for before the first round.
        timeout_s: how long a round waits for replies.
        sigma_probe: ask every trained node for the σ² probe (``sigma-probe`` in the train
            config, :mod:`fedfit.training.probe`); the round's metrics then carry ``sigma2``, the
            probes' mean weighted by the nodes' examples.
        curvature_probe: ask every trained node for the curvature probe too (``curvature-probe``,
            :mod:`fedfit.training.curvature_probe`; implies ``sigma_probe``, whose direction it
            takes); the round's metrics then carry ``noise-curvature``, β_σ pooled as DYNAMITE's
            estimator pools it (:func:`~fedfit.policy.dynamite.estimate.probed_noise_curvature`).
    """

    def __init__(self, *, cohort_size: int, rule: AggregationRule = AggregationRule(),
                 selector: Selector = DeferringSelector(ReadinessFirstSelector(UniformSelector())),
                 candidates: int | None = None, seed: int = 0, fraction_evaluate: float = 0.0,
                 min_available_nodes: int = 1, timeout_s: float = 3600.0, sigma_probe: bool = False,
                 curvature_probe: bool = False) -> None:
        if cohort_size < 1:
            raise ValueError(f"cohort_size must be >= 1, got {cohort_size}")
        self.cohort_size, self.rule, self.selector = cohort_size, rule, selector
        self.candidates, self.seed, self.fraction_evaluate = candidates, seed, fraction_evaluate
        self.min_available_nodes, self.timeout_s = min_available_nodes, timeout_s
        self.sigma_probe, self.curvature_probe = sigma_probe or curvature_probe, curvature_probe
        self._state = _State()

    @property
    def rounds(self) -> list[RoundLog]:
        """One :class:`RoundLog` per finished round."""
        return list(self._state.rounds)

    def summary(self) -> None:
        """Log the strategy's settings (Flower calls it when ``start`` begins)."""
        asked = "all" if self.candidates is None else self.candidates
        log(INFO, "\t├──> fedfit: cohort %d, readiness asked of %s nodes, FedNova %s, server lr %s",
            self.cohort_size, asked, self.rule.fednova, self.rule.server_lr)

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        """Select the cohort by readiness and send it the model."""
        self._state.master = record_params(arrays)
        chosen = self._select(server_round, grid)
        self._state.invited = len(chosen)
        config["server-round"] = server_round
        if self.sigma_probe:
            config[SIGMA_PROBE] = True
        if self.curvature_probe:
            config[CURVATURE_PROBE] = True
        content = RecordDict({ARRAYS: arrays, CONFIG: config})
        return [Message(content=content, dst_node_id=node, message_type=MessageType.TRAIN) for node in chosen]

    def _select(self, server_round: int, grid: Grid) -> list[int]:
        nodes = self._wait_for_nodes(grid)
        if self.candidates == 0:
            return uniform_cohort(nodes, self.cohort_size, seed=self.seed, round_=server_round)
        asked = uniform_cohort(nodes, self.candidates or len(nodes), seed=self.seed, round_=server_round)
        ready = self._query(asked, grid)
        return self.selector.select(ready, self.cohort_size, seed=self.seed, draw=server_round,
                                    version=server_round)

    def _wait_for_nodes(self, grid: Grid) -> list[int]:
        while len(nodes := sorted(grid.get_node_ids())) < self.min_available_nodes:
            time.sleep(0.5)
        return nodes

    def _query(self, nodes: list[int], grid: Grid) -> list[Readiness]:
        """The readiness of ``nodes`` (node ids in place of partition ids); silent nodes are left out."""
        queries = [Message(content=RecordDict(), dst_node_id=n, message_type=MessageType.QUERY) for n in nodes]
        ready = []
        for reply in grid.send_and_receive(queries, timeout=self.timeout_s):
            if not reply.has_error() and READINESS in reply.content.config_records:
                r = record_readiness(reply.content.config_records[READINESS])
                ready.append(_with_id(r, reply.metadata.src_node_id))
        return sorted(ready, key=lambda r: r.device_id)

    def aggregate_train(self, server_round: int,
                        replies: Iterable[Message]) -> tuple[ArrayRecord | None, MetricRecord | None]:
        """Fold the updates into the master with fedfit's rule; count failures by cause."""
        updates, failures = _split(replies)
        arrivals = [Arrival(u, staleness=max(0, server_round - u.round)) for u in updates]
        self._state.rounds.append(RoundLog(server_round, self._state.invited, len(updates), dict(failures),
                                           tuple(u.micro_batch for u in updates)))
        metrics = MetricRecord({"updates": len(updates), "failures": sum(failures.values())})
        if not arrivals:
            return None, metrics
        new = aggregate(self._state.master, arrivals, self.rule)
        metrics["train-loss"] = sum(u.train_loss for u in updates) / len(updates)
        sigma2, curvature = _pooled_probes(updates)
        if sigma2 is not None:
            metrics["sigma2"] = sigma2
        if curvature is not None:
            metrics["noise-curvature"] = curvature
        return params_record(new), metrics

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                           grid: Grid) -> Iterable[Message]:
        """Send the model to ``fraction_evaluate`` of the nodes (none by default)."""
        if self.fraction_evaluate <= 0.0:
            return []
        nodes = sorted(grid.get_node_ids())
        size = max(1, int(len(nodes) * self.fraction_evaluate))
        config["server-round"] = server_round
        content = RecordDict({ARRAYS: arrays, CONFIG: config})
        return [Message(content=content, dst_node_id=n, message_type=MessageType.EVALUATE)
                for n in uniform_cohort(nodes, size, seed=self.seed + 1, round_=server_round)]

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> MetricRecord | None:
        """Accuracy and loss averaged over the nodes' examples."""
        rows = [r.content.metric_records["metrics"] for r in replies if not r.has_error()]
        total = sum(number(m, "num-examples") for m in rows)
        if total <= 0:
            return None
        return MetricRecord({k: sum(number(m, k) * number(m, "num-examples") for m in rows) / total
                             for k in ("accuracy", "loss")})


def _split(replies: Iterable[Message]) -> tuple[list[Update], Counter[str]]:
    """The updates of the successful replies and the failures' causes."""
    updates: list[Update] = []
    failures: Counter[str] = Counter()
    for reply in replies:
        if reply.has_error():
            failures[error_cause(reply.error)] += 1
        else:
            updates.append(content_update(reply.content))
    return updates, failures


def _pooled_probes(updates: list[Update]) -> tuple[float | None, float | None]:
    """The probes' σ̂² and β̂_σ pooled as DYNAMITE's estimator pools them: means weighted by the
    nodes' examples (at least 1), over the finite values (``None``: no probe)."""
    shares = {i: float(max(1, u.num_examples)) for i, u in enumerate(updates)}
    obs = RoundObservation(start=torch.zeros(0), grads={}, samples={}, shares=shares, loss=0.0,
                           sigma2s={i: u.sigma2 for i, u in enumerate(updates) if u.sigma2 is not None},
                           curvatures={i: u.noise_curvature for i, u in enumerate(updates)
                                       if u.noise_curvature is not None})
    return probed_sigma2(obs), probed_noise_curvature(obs)


def _with_id(r: Readiness, node_id: int) -> Readiness:
    return replace(r, device_id=node_id)
