"""Participation per tier is counted against every invitation; never-invited tiers are named."""

from __future__ import annotations

from fedfit.report.summary import summarise
from fedfit.types import RoundReport


def _report(round_: int, invited: dict[str, int], joined: dict[str, int],
            failures: dict[str, dict[str, int]], t: float) -> RoundReport:
    return RoundReport(round=round_, virtual_time_s=t, wall_time_s=0.0, accuracy=0.5, loss=1.0,
                       participants_by_tier=joined, invited_by_tier=invited,
                       failures_by_cause={}, failures_by_tier={}, bytes_up=0, bytes_down=0,
                       energy_j=0.0, rejected_updates=0, failures_by_tier_cause=failures)


def test_declines_and_offline_count_as_invitations_that_did_not_participate() -> None:
    reports = [_report(0, {"phone": 4, "watch": 2}, {"phone": 3}, {"phone": {"offline": 1},
                                                                    "watch": {"declined": 2}}, 10.0),
               _report(1, {"phone": 4, "watch": 2}, {"phone": 4, "watch": 1}, {"watch": {"offline": 1}}, 20.0)]

    s = summarise(reports, 0.7, tiers=["phone"] * 5 + ["watch"] * 2 + ["sensor"])

    # watch: 1 update in 4 invitations = 25% (2 declined, 1 offline), not "100% of non-declined"
    assert s["participation_by_tier"] == {"phone": 7 / 8, "sensor": 0.0, "watch": 0.25}
    assert s["declined_by_tier"] == {"phone": 0, "sensor": 0, "watch": 2}
    assert s["offline_by_tier"] == {"phone": 1, "sensor": 0, "watch": 1}
    assert s["invited_by_tier"] == {"phone": 8, "sensor": 0, "watch": 4}
    assert s["never_invited"] == ["sensor"]


def test_an_unfinished_round_counts_in_totals_but_not_in_rounds() -> None:
    done = _report(0, {"phone": 2}, {"phone": 2}, {}, 5.0)
    stalled = _report(1, {"phone": 3}, {}, {"phone": {"out_of_memory": 3}}, 900.0)

    s = summarise([done], 0.7, tiers=["phone"], unfinished=stalled)

    assert s["rounds"] == 1 and s["virtual_time_s"] == 900.0
    assert s["invited_by_tier"] == {"phone": 5} and s["participation_by_tier"] == {"phone": 0.4}


def test_never_online_separates_tiers_offline_all_run_from_tiers_skipped_while_online() -> None:
    reports = [_report(0, {"phone": 3}, {"phone": 3}, {}, 10.0)]

    s = summarise(reports, 0.7, tiers=["phone", "watch", "sensor"], online_tiers={"phone", "watch"})
    unknown = summarise(reports, 0.7, tiers=["phone", "watch", "sensor"])

    assert s["never_invited"] == ["sensor", "watch"]
    assert s["never_online"] == ["sensor"]  # the watch was online at some round start: skipped
    assert unknown["never_online"] == []
