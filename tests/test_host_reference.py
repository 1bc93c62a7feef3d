"""bench/host_reference.py: the reference workload is fixed work, and the normalised figure is
the figure over the median of the reference's timings (no wall-clock assertions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "host_reference.py"


def _module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_host_reference", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_reference_does_the_same_work_every_time() -> None:
    ref = _module()
    # pinned: changing the loop sizes or the work changes the checksum (and the figures' scale)
    assert ref.REFERENCE_CHECKSUM == 3974331
    assert ref.reference_work() == ref.REFERENCE_CHECKSUM
    assert ref.reference_work() == ref.REFERENCE_CHECKSUM  # no state kept between runs


def test_normalised_is_the_figure_over_the_median_reference() -> None:
    ref = _module()
    assert ref.normalised(45.0, [10.0]) == 4.5
    assert ref.normalised(45.0, [9.0, 30.0, 10.0, 11.0]) == 45.0 / 10.5  # median of an even count
    assert ref.normalised(0.0, [5.0, 7.0, 6.0]) == 0.0


@pytest.mark.parametrize("samples", [[], [0.0, 3.0], [-1.0]])
def test_normalised_refuses_no_or_non_positive_timings(samples: list[float]) -> None:
    with pytest.raises(ValueError, match="positive reference"):
        _module().normalised(10.0, samples)
