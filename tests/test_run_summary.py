"""Which tiers were online when cohorts were invited (the summary's ``never_online``)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from fedfit.run_summary import _online_tiers
from fedfit.types import RoundReport


@dataclasses.dataclass
class _Fleet:
    """Device d of tier ``tiers[d]`` is online during the half-open windows ``windows[d]``."""

    tiers: list[str]
    windows: list[list[tuple[float, float]]]

    def device_ids(self) -> list[int]:
        return list(range(len(self.tiers)))

    def profile(self, device: int) -> SimpleNamespace:
        return SimpleNamespace(tier=self.tiers[device])

    def snapshot(self, device: int, at_s: float) -> SimpleNamespace:
        return SimpleNamespace(online=any(a <= at_s < b for a, b in self.windows[device]))


def _report(t: float) -> RoundReport:
    return RoundReport(round=0, virtual_time_s=t, wall_time_s=0.0, accuracy=None, loss=None,
                       participants_by_tier={}, invited_by_tier={}, failures_by_cause={}, failures_by_tier={},
                       bytes_up=0, bytes_down=0, energy_j=0.0, rejected_updates=0)


def test_a_tier_counts_as_online_only_if_a_device_was_online_at_a_round_start() -> None:
    # Rounds end at 4 s and 9 s, so cohorts are invited at 0, 4 and 9 s.
    fleet = _Fleet(tiers=["phone", "phone", "watch", "sensor"],
                   windows=[[], [(3.0, 5.0)],        # phone 1 online at 4 s
                            [(1.0, 3.9)],            # watch online only between round starts
                            [(9.0, 10.0)]])          # sensor online at the last round's end
    exp = SimpleNamespace(fleet=fleet)

    assert _online_tiers(exp, [_report(4.0), _report(9.0)]) == {"phone", "sensor"}  # type: ignore[arg-type]
    assert _online_tiers(exp, []) == set()  # type: ignore[arg-type]
