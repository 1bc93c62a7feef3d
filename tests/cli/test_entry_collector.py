"""The ``fedfit`` command imports with the cyclic garbage collector paused, then frozen."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fedfit import entry


@pytest.fixture
def collector() -> Iterator[None]:
    """The collector as this process had it, put back afterwards (frozen objects unfrozen)."""
    was_enabled = gc.isenabled()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
        else:
            gc.disable()


def test_the_block_runs_without_collections_and_what_it_built_leaves_the_scans(collector: None) -> None:
    gc.enable()
    gc.unfreeze()
    with entry.collector_paused():
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]  # containers the collector tracks

    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)


def test_a_collector_that_was_off_stays_off(collector: None) -> None:
    gc.disable()
    with entry.collector_paused():
        pass

    assert not gc.isenabled()


def test_the_collector_comes_back_when_the_block_raises(collector: None) -> None:
    gc.enable()
    with pytest.raises(ValueError), entry.collector_paused():
        raise ValueError("import failed")

    assert gc.isenabled()


def test_the_command_still_runs_and_reports_bad_input_in_one_line(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    proc = subprocess.run([sys.executable, "-m", "fedfit.entry", "run", str(tmp_path / "absent.yaml")],
                          capture_output=True, text=True, env=env, timeout=120)

    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
