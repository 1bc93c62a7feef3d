"""Summaries of a run from its round reports (pure functions, no I/O)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Collection, Sequence
from typing import Any

from fedfit.report.tiers import tier_participation
from fedfit.types import RoundReport, TaskResult, Update, held_micro_batch


def report_record(report: RoundReport) -> dict[str, Any]:
    """A round report as one JSON-ready ``metrics.jsonl`` record."""
    return dataclasses.asdict(report)


def event_record(result: TaskResult) -> dict[str, Any]:
    """A task result as one JSON-ready ``events.jsonl`` record (no tensors, no wall time)."""
    outcome = result.outcome
    cause = None if result.ok else getattr(outcome, "cause").value
    record = {
        "round": result.plan.round, "device": result.plan.device_id, "tier": result.tier,
        "start_s": result.start_s, "finish_s": result.finish_s, "ok": result.ok, "cause": cause,
        "micro_batch": result.plan.micro_batch, "accumulation": result.plan.accumulation_steps,
        "width": result.plan.width, "free_memory_bytes": result.free_memory_bytes,
        "peak_memory_bytes": result.cost.peak_memory_bytes, "energy_j": result.cost.energy_j,
        "detail": getattr(outcome, "detail", ""),
        "effective_batch": result.plan.effective_batch,
        "epoch_batches": [list(b) for b in result.plan.epoch_batches],
        "bound_by": None if result.plan.bound_by is None else result.plan.bound_by.value,
        "techniques": list(result.plan.techniques.active), "edge_compute_s": result.cost.edge_compute_s,
    }
    if isinstance(outcome, Update) and (held := held_micro_batch(result.plan.micro_batch, outcome.num_examples)) \
            != result.plan.micro_batch:  # the device held fewer samples than its planned micro-batch
        record["micro_batch_run"] = held
    return record


def time_to_target(reports: Sequence[RoundReport], target: float) -> float | None:
    """Virtual seconds until the evaluated accuracy first reaches ``target`` (``None``: never)."""
    for r in reports:
        if r.accuracy is not None and r.accuracy >= target:
            return r.virtual_time_s
    return None


def totals(reports: Sequence[RoundReport], field: str) -> Counter[str]:
    """A per-round count field (``invited_by_tier``, ``failures_by_cause``, ...) summed over rounds."""
    total: Counter[str] = Counter()
    for r in reports:
        total.update(getattr(r, field))
    return total


def summarise(reports: Sequence[RoundReport], target: float, *, tiers: Sequence[str] = (),
              unfinished: RoundReport | None = None, online_tiers: Collection[str] | None = None) -> dict[str, Any]:
    """Headline figures of a run: accuracy, time to target, failures, participation per tier.

    Args:
        reports: every finished round.
        target: the target accuracy.
        tiers: every tier of the fleet; a tier never invited appears with 0 invitations and is
            listed in ``never_invited``.
        unfinished: the counters of a round that never finished (a run that stopped); counted
            in the totals and the virtual time, not in ``rounds``.
        online_tiers: tiers with a device reported online at some round start (``None``: not
            known); a never-invited tier outside it is listed in ``never_online`` as well, so
            ``never_invited`` minus ``never_online`` are the tiers skipped while online.
    """
    counted = [*reports, unfinished] if unfinished is not None else list(reports)
    evaluated = [r for r in reports if r.accuracy is not None]
    invited, joined = totals(counted, "invited_by_tier"), totals(counted, "participants_by_tier")
    failures = totals(counted, "failures_by_cause")
    per_tier = tier_participation(tiers, invited, joined, _tier_causes(counted))
    last = counted[-1] if counted else None
    return {
        "rounds": len(reports),
        "final_accuracy": evaluated[-1].accuracy if evaluated else None,
        "best_accuracy": max((r.accuracy or 0.0) for r in evaluated) if evaluated else None,
        "target_accuracy": target,
        "time_to_target_s": time_to_target(reports, target),
        "virtual_time_s": last.virtual_time_s if last else 0.0,
        "wall_time_s": last.wall_time_s if last else 0.0,
        "failures_by_cause": dict(sorted(failures.items())),
        "invited_by_tier": {t: int(f["invited"]) for t, f in per_tier.items()},
        "never_invited": [t for t, f in per_tier.items() if not f["invited"]],
        "never_online": [t for t, f in per_tier.items()
                         if not f["invited"] and online_tiers is not None and t not in online_tiers],
        "participants_by_tier": {t: int(f["updates"]) for t, f in per_tier.items() if f["updates"]},
        "participation_by_tier": {t: f["participation"] for t, f in per_tier.items()},
        "declined_by_tier": {t: int(f["declined"]) for t, f in per_tier.items()},
        "offline_by_tier": {t: int(f["offline"]) for t, f in per_tier.items()},
        "bytes_up": sum(r.bytes_up for r in counted),
        "bytes_down": sum(r.bytes_down for r in counted),
        "energy_j": sum(r.energy_j for r in counted),
        "rejected_updates": sum(r.rejected_updates for r in counted),
    }


def _tier_causes(reports: Sequence[RoundReport]) -> dict[str, Counter[str]]:
    """Failures per tier and cause, summed over ``reports``."""
    total: dict[str, Counter[str]] = {}
    for r in reports:
        for tier, causes in r.failures_by_tier_cause.items():
            total.setdefault(tier, Counter()).update(causes)
    return total
