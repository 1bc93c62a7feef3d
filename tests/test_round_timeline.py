"""bench/round_timeline.py's per-round figures, against a hand-built timeline."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).parents[1] / "bench" / "round_timeline.py"
_SPEC = importlib.util.spec_from_file_location("round_timeline", _PATH)
assert _SPEC is not None and _SPEC.loader is not None
timeline = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(timeline)


def test_per_round_against_a_hand_built_timeline() -> None:
    # rounds start at 0, 1.0, 2.0 and 3.0 s; round 1 (from 1.0 to 2.0) is the one measured
    # (round 0 is skipped, the last start only closes round 2, which is measured too)
    rows = [["_run_round", "driver", t, t + 0.5, 0.0] for t in (0.0, 1.0, 2.0, 3.0)]
    rows += [["task", "a", 1.1, 1.4, 0.2], ["task", "a", 1.4, 1.7, 0.2], ["task", "b", 1.05, 1.6, 0.4],
             ["_aggregate", "driver", 1.75, 1.85, 0.0], ["_maybe_evaluate", "driver", 1.85, 1.9, 0.0],
             ["task", "a", 2.2, 2.8, 0.5], ["task", "b", 2.1, 2.5, 0.3],
             ["_aggregate", "driver", 2.85, 2.9, 0.0], ["_maybe_evaluate", "driver", 2.9, 2.95, 0.0]]
    got = timeline.per_round(rows)
    assert got["round wall"] == pytest.approx([1.0, 1.0])
    assert got["serial tail"] == pytest.approx([2.0 - 1.7, 3.0 - 2.8])
    assert got["aggregate"] == pytest.approx([0.1, 0.05])
    assert got["evaluate"] == pytest.approx([0.05, 0.05])
    assert got["dispatch -> first task"] == pytest.approx([0.05, 0.1])
    assert got["lane busy"] == pytest.approx([(0.6 + 0.55) / 2, (0.6 + 0.4) / 2])
    assert got["lane idle"] == pytest.approx([(0.4 + 0.45) / 2, (0.4 + 0.6) / 2])
    assert got["task wall"] == pytest.approx([(0.3 + 0.3 + 0.55) / 3, (0.6 + 0.4) / 2])
    assert got["task CPU"] == pytest.approx([(0.2 + 0.2 + 0.4) / 3, (0.5 + 0.3) / 2])
