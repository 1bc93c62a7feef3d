"""Flower's own simulation (Ray on 127.0.0.1) running the example's two jobs on six nodes."""

import importlib.util
import sys
import time
from pathlib import Path
from types import ModuleType

import psutil
import pytest

# Ray's shutdown leaves /dev/null handles and Popen objects for the garbage collector, and tips
# about a future default: not ours (the test checks below that no Ray process is left).
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning",
                                        "ignore::FutureWarning:ray.*")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "flower_fleet.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("flower_fleet_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _ray_children() -> list[str]:
    names = []
    for child in psutil.Process().children(recursive=True):
        try:
            names.append(child.name())
        except psutil.NoSuchProcess:
            continue
    return [n for n in names if "ray" in n or "gcs" in n]


@pytest.mark.slow
def test_flower_fedavg_fails_out_of_memory_where_fedfit_in_flower_adapts_and_ray_stops_after() -> None:
    pytest.importorskip("flwr", reason="Flower interop needs the extra: pip install fedfit[flower]")
    ray = pytest.importorskip("ray")
    example = _example()

    flower, fedfit, strategy = example.run_both(rounds=1, nodes=6, samples=40, num_cpus=2, lr=0.05)

    # fixed batch 32 does not fit the mid-range phone, the older phone or the watch (3 of 6 nodes)
    assert (flower.oom, flower.updates) == (3, 3)
    assert (fedfit.oom, fedfit.updates) == (0, 6)
    assert min(fedfit.micro_batches) < 32
    assert strategy.rounds[0].invited == 6
    assert not ray.is_initialized()
    deadline = time.monotonic() + 20.0
    while _ray_children() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _ray_children() == []
