"""PNG plots of a run: accuracy against virtual time, participation and failures per tier, and
the dynamic-batching timeline (micro-batch, effective batch, free memory per tier)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedfit.report.summary import totals
from fedfit.types import Failure, FailureCause, RoundReport, TaskResult


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, imported on the first plot (it takes ~1 s, and
    runs without plots, or only importing fedfit, need not pay it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _accuracy_series(reports: Sequence[RoundReport]) -> tuple[list[float], list[float]]:
    pts = [(r.virtual_time_s / 60.0, r.accuracy) for r in reports if r.accuracy is not None]
    return [p[0] for p in pts], [float(p[1]) for p in pts if p[1] is not None]


def plot_accuracy(runs: Mapping[str, Sequence[RoundReport]], path: Path, target: float | None = None) -> None:
    """Accuracy vs virtual minutes, one line per run (overlaid for ``compare``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for name, reports in runs.items():
        xs, ys = _accuracy_series(reports)
        ax.plot(xs, ys, marker=".", label=name)
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", linewidth=0.8, label=f"target {target:.2f}")
    ax.set_xlabel("virtual time (min)")
    ax.set_ylabel("test accuracy")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_participation(reports: Sequence[RoundReport], path: Path) -> None:
    """Per tier: invitations, completed updates and failures by tier (bars)."""
    invited, joined = totals(reports, "invited_by_tier"), totals(reports, "participants_by_tier")
    failed = totals(reports, "failures_by_tier")
    tiers = sorted(invited)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.2))
    xs = range(len(tiers))
    for offset, (label, counts) in zip((-0.27, 0.0, 0.27), (("invited", invited), ("updates", joined),
                                                           ("failures", failed)), strict=True):
        ax.bar([x + offset for x in xs], [counts[t] for t in tiers], width=0.27, label=label)
    ax.set_xticks(list(xs), tiers, rotation=15)
    ax.set_ylabel("tasks")
    ax.legend()
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_failures(reports: Sequence[RoundReport], path: Path) -> None:
    """Failures by cause per round (stacked)."""
    causes = sorted({c for r in reports for c in r.failures_by_cause})
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.6))
    bottom = [0] * len(reports)
    rounds = [r.round for r in reports]
    for cause in causes:
        vals = [r.failures_by_cause.get(cause, 0) for r in reports]
        ax.bar(rounds, vals, bottom=bottom, label=cause)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_xlabel("round")
    ax.set_ylabel("failed tasks")
    if causes:
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass(frozen=True, slots=True)
class TimelinePoint:
    """One task start on the batching timeline (a task result, or its ``events.jsonl`` record)."""

    tier: str
    start_s: float
    ok: bool
    cause: FailureCause | None
    micro_batch: int
    effective_batch: int
    free_memory_bytes: int

    @classmethod
    def of(cls, result: TaskResult) -> TimelinePoint:
        """The point of a task result."""
        cause = result.outcome.cause if isinstance(result.outcome, Failure) else None
        return cls(result.tier, result.start_s, result.ok, cause, result.plan.micro_batch,
                   result.plan.effective_batch, result.free_memory_bytes)

    @classmethod
    def of_record(cls, record: dict[str, Any]) -> TimelinePoint:
        """The point of an ``events.jsonl`` record (see :func:`fedfit.report.summary.event_record`)."""
        cause = None if record["cause"] is None else FailureCause(record["cause"])
        return cls(record["tier"], float(record["start_s"]), bool(record["ok"]), cause,
                   int(record["micro_batch"]), int(record["effective_batch"]), int(record["free_memory_bytes"]))


def plot_batching_timeline(points: Sequence[TimelinePoint], path: Path) -> None:
    """Per tier over virtual time: micro-batch, effective batch and free memory at each task start.

    Declined tasks (a hot or drained device pausing) are drawn as ``x`` at micro-batch 0 and
    out-of-memory crashes as red triangles, so pauses and crashes show on the timeline.
    """
    plt = _pyplot()
    fig, axes = plt.subplots(3, 1, figsize=(7.5, 7.5), sharex=True)
    for tier in sorted({p.tier for p in points}):
        rows = sorted((p for p in points if p.tier == tier), key=lambda p: p.start_s)
        ran = [p for p in rows if p.ok]
        t_min = [p.start_s / 60.0 for p in ran]
        line = axes[0].plot(t_min, [p.micro_batch for p in ran], ".", label=tier)[0]
        axes[1].plot(t_min, [p.effective_batch for p in ran], ".", color=line.get_color())
        axes[2].plot([p.start_s / 60.0 for p in rows], [p.free_memory_bytes / 2**20 for p in rows], ".",
                     color=line.get_color())
        paused = [p.start_s / 60.0 for p in rows if p.cause is FailureCause.DECLINED]
        crashed = [p.start_s / 60.0 for p in rows if p.cause is FailureCause.OUT_OF_MEMORY]
        axes[0].plot(paused, [0] * len(paused), "x", color=line.get_color())
        axes[0].plot(crashed, [0] * len(crashed), "v", color="red")
    for ax, label in zip(axes, ("micro-batch\n(x: paused, ▼: OOM)", "effective batch", "free memory (MiB)"),
                         strict=True):
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    axes[2].set_xlabel("virtual time (min)")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
