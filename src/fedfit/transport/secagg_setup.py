"""Switching a deployed run to SecAgg: the hub on the coordinator, the sums-only rule, restarts.

Deployed SecAgg runs synchronous rounds whose aggregate is the cohorts' sums: the weight of
an update is computed by its device (the rule's weighting of its own report), so a rule that
weights by server-side history (participation weighting) or rescales updates (FedNova) cannot
run on top, nor can FedBuff/FedAsync (a buffer of one or a few updates is no cohort).
"""

from __future__ import annotations

import dataclasses

from fedfit.config import ExperimentConfig
from fedfit.errors import ConfigError
from fedfit.security.builders import check_security, noise_multiplier
from fedfit.security.secagg.private_sum import CohortSums, SummedAggregate
from fedfit.transport.assemble import Deployed
from fedfit.transport.fleet import NetworkFleet
from fedfit.transport.secagg_hub import SecAggHub, cancel_on_restart
from fedfit.transport.secagg_vectors import template_of
from fedfit.transport.service import Coordinator


def check_deployable(config: ExperimentConfig) -> None:
    """Raise :class:`ConfigError` for settings deployed SecAgg cannot run with."""
    check_security(config)
    a = config.aggregation
    if config.orchestration.mode != "sync":
        raise ConfigError("privacy.secure_aggregation: a deployed run needs orchestration.mode: sync "
                          "(an asynchronous buffer is too small a cohort to hide an update in)")
    if a.participation.kind != "none" or a.fednova:
        raise ConfigError("privacy.secure_aggregation: a deployed run cannot use aggregation.participation or "
                          "aggregation.fednova (devices weight their own updates before masking)")


def install(config: ExperimentConfig, fleet: NetworkFleet, dep: Deployed, coord: Coordinator) -> None:
    """Make ``coord`` run SecAgg for every task (nothing when the config does not ask for it).

    Cancels the tasks a previous server process issued: their sessions died with it.
    """
    s, c = config.privacy.secure_aggregation, config.privacy.central
    if not s.enabled:
        return
    check_deployable(config)
    cancel_on_restart(coord.store)
    sums = CohortSums()
    noise = noise_multiplier(config) * c.clip_norm if c.enabled else None
    orch = dep.orchestrator
    orch.rule = dataclasses.replace(orch.rule, combine=SummedAggregate(sums, noise, config.seed))
    coord.secagg = SecAggHub(fleet=fleet, store=coord.store, exchange=dep.submodels, template=template_of(dep.spec),
                             sums=sums, threshold=s.threshold, min_cohort=s.min_cohort, timeout_s=s.phase_timeout_s,
                             result_of=coord.result_of)
