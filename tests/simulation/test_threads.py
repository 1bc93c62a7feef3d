"""fedfit picks torch's thread counts: one intra-op thread per training task, the driver's from
``simulation.torch_threads``, pool workers from ``simulation.workers``."""

from __future__ import annotations

import pytest
import torch

from fedfit.config import parse_config
from fedfit.errors import ConfigError
from fedfit.simulation.threads import driver_threads, pinned, pool_workers


def test_auto_means_one_driver_thread_and_one_worker_per_core() -> None:
    assert driver_threads("auto") == 1 and driver_threads(3) == 3
    assert pool_workers("auto", cores=16) == 16 and pool_workers("auto", cores=0) == 1 and pool_workers(5, cores=16) == 5


def test_pinned_sets_the_count_inside_and_restores_the_callers_after() -> None:
    before = torch.get_num_threads()
    with pinned(1):
        assert torch.get_num_threads() == 1
        with pinned(2):
            assert torch.get_num_threads() == 2
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError), pinned(1):
        raise RuntimeError
    assert torch.get_num_threads() == before


def test_config_takes_auto_or_a_positive_count_and_nothing_else() -> None:
    assert parse_config({}).simulation.torch_threads == "auto"
    config = parse_config({"simulation": {"executor": "process", "workers": "auto", "torch_threads": 4}})
    assert config.simulation.workers == "auto" and config.simulation.torch_threads == 4
    for bad in ({"torch_threads": 0}, {"torch_threads": "many"}, {"workers": 0}):
        with pytest.raises(ConfigError, match="simulation"):
            parse_config({"simulation": bad})


@pytest.mark.parametrize("setting, expected", [("auto", 1), (2, 2)])
def test_a_run_uses_the_configured_driver_threads_and_gives_the_callers_back(setting: object, expected: int) -> None:
    from fedfit.runner import run

    config = parse_config({"data": {"dataset": "digits", "max_train_samples": 80, "max_test_samples": 20},
                           "model": {"name": "logreg"}, "fleet": {"tiers": {"flagship_phone": 4}},
                           "orchestration": {"rounds": 1, "clients_per_round": 2}, "simulation": {"torch_threads": setting},
                           "output": {"plots": False, "progress": False}})
    seen: list[int] = []
    with pinned(3):
        run(config, None, lambda outcome: seen.append(torch.get_num_threads()))
        assert torch.get_num_threads() == 3
    assert seen == [expected]
