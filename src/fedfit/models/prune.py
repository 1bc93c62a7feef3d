"""Pruning suggestion from channel statistics (seed 003: data-driven structured pruning).

For each width group, rank units by accumulated update magnitude and keep the fewest top units
whose scores sum to ``coverage`` of the group's total; the suggested width is the largest such
share over the groups (one width for the whole model keeps it a zoo architecture). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from fedfit.models.channel_stats import ChannelStats


@dataclass(frozen=True, slots=True)
class GroupSuggestion:
    """What to keep of one width group.

    Attributes:
        group: the width group.
        size: its units in the master.
        keep: units to keep.
        ranking: units from most to least important.
        dead: units no update ever moved.
    """

    group: str
    size: int
    keep: int
    ranking: tuple[int, ...]
    dead: int


def suggest_pruning(stats: ChannelStats, coverage: float = 0.9) -> tuple[list[GroupSuggestion], float]:
    """Per-group keep counts covering ``coverage`` of the update magnitude, and one model width.

    >>> import torch
    >>> rows, width = suggest_pruning(ChannelStats({"h": torch.tensor([1.0, 8.0, 0.0, 1.0])}), 0.8)
    >>> rows[0].keep, rows[0].ranking, rows[0].dead, width
    (1, (1, 0, 3, 2), 1, 0.25)
    """
    rows: list[GroupSuggestion] = []
    for name, scores in stats.scores.items():
        ranking = stats.ranking(name)
        total, running, keep = float(scores.sum()), 0.0, 0
        for unit in ranking:
            if total > 0 and running >= coverage * total:
                break
            running += float(scores[unit])
            keep += 1
        keep = max(1, keep if total > 0 else len(ranking))
        rows.append(GroupSuggestion(name, len(ranking), keep, tuple(ranking), int((scores == 0).sum())))
    width = max((r.keep / r.size for r in rows), default=1.0)
    return rows, width
