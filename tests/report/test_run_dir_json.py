"""metrics.jsonl and summary.json are strict JSON: non-finite numbers become null and are flagged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from fedfit.report.run_dir import RunDirectory, finite, strict_json
from fedfit.types import RoundReport


def _report(loss: float) -> RoundReport:
    return RoundReport(round=0, virtual_time_s=1.0, wall_time_s=0.1, accuracy=0.5, loss=loss,
                       participants_by_tier={}, invited_by_tier={}, failures_by_cause={}, failures_by_tier={},
                       bytes_up=0, bytes_down=0, energy_j=0.0, rejected_updates=0)


def _strict(text: str) -> object:
    def refuse(name: str) -> None:
        raise ValueError(name)
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_diverged_loss_is_written_as_null_and_flagged(tmp_path: Path, value: float) -> None:
    with RunDirectory(tmp_path, {"name": "x"}) as out:
        out.log_round(_report(value), [])
        out.log_round(_report(0.25), [])
    lines = [_strict(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert lines[0]["loss"] is None and lines[0]["non_finite"] == ["loss"]  # type: ignore[index]
    assert lines[1]["loss"] == 0.25 and "non_finite" not in lines[1]  # type: ignore[index, operator]


def test_the_summary_is_strict_json(tmp_path: Path) -> None:
    out = RunDirectory(tmp_path, {"name": "x"})
    out.write_summary({"final_accuracy": 0.5, "by_tier": {"a": math.nan}, "curve": [1.0, math.inf]})
    assert _strict((tmp_path / "summary.json").read_text()) == {
        "final_accuracy": 0.5, "by_tier": {"a": None}, "curve": [1.0, None]}


def test_finite_names_every_replaced_key() -> None:
    assert finite({"a": {"b": math.nan}, "c": [0.0, math.inf], "d": "nan"}) == (
        {"a": {"b": None}, "c": [0.0, None], "d": "nan"}, ["a.b", "c[1]"])
    assert strict_json({"x": 1}) == '{"x": 1}'


def test_an_unchanged_config_is_not_rewritten(tmp_path: Path) -> None:
    RunDirectory(tmp_path, {"name": "x"}).close()
    stamp = (tmp_path / "config.yaml").stat().st_mtime_ns
    (tmp_path / "metrics.jsonl").write_text('{"round": 0}\n')
    RunDirectory(tmp_path, {"name": "x"}, (13, 0)).close()
    assert (tmp_path / "config.yaml").stat().st_mtime_ns == stamp


def test_strict_json_of_finite_records_is_the_cleaned_records_json() -> None:
    record = {"round": 3, "ok": True, "cause": None, "energy_j": 1.5, "epoch_batches": [[8, 2], (4, 1)],
              "nested": {"a": -0.0, "b": [1e308, "x"]}, "detail": "peak 5 B > free 4 B"}
    clean, bad = finite(record)

    assert bad == []
    assert strict_json(record) == json.dumps(clean, allow_nan=False)
    assert json.loads(strict_json({**record, "loss": float("inf")}))["non_finite"] == ["loss"]
