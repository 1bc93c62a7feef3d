"""``simulation.executor: auto`` (the default): threads with one worker per usable core for the
zoo's models, ``local`` on one core or for a user's module; a run is ``local``'s bit for bit."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fedfit.config import parse_config
from fedfit.experiment import built
from fedfit.runner import run
from fedfit.simulation.executors import LocalExecutor
from fedfit.simulation.threaded import ThreadExecutor
from fedfit.simulation.threads import auto_executor

from tests.helpers import executor_run_config


def _cores(monkeypatch: pytest.MonkeyPatch, cores: set[int]) -> None:
    """Make this process see ``cores`` as its CPU affinity."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: cores, raising=False)


def _small(**sections: object) -> object:
    return parse_config({"data": {"dataset": "digits", "max_train_samples": 80, "max_test_samples": 20},
                         "model": {"name": "logreg"}, "fleet": {"tiers": {"flagship_phone": 4}},
                         "orchestration": {"rounds": 1, "clients_per_round": 2},
                         "output": {"plots": False, "progress": False}, **sections})


def test_auto_is_the_default() -> None:
    assert parse_config({}).simulation.executor == "auto"


@pytest.mark.parametrize(("cores", "expected"), [({0, 1, 2}, ("threads", 3)), ({5}, ("local", 1)),
                                                 ({0, 3, 6, 7, 9}, ("threads", 5))])
def test_auto_takes_one_thread_per_core_of_this_processs_affinity(
        monkeypatch: pytest.MonkeyPatch, cores: set[int], expected: tuple[str, int]) -> None:
    _cores(monkeypatch, cores)
    assert auto_executor(True) == expected
    assert auto_executor(False) == ("local", 1)  # a user's module may draw torch's global generator


@pytest.mark.parametrize("cores", [{0, 1, 2}, {4}])
def test_a_built_experiment_gets_the_executor_auto_resolves_to(monkeypatch: pytest.MonkeyPatch,
                                                               cores: set[int]) -> None:
    _cores(monkeypatch, cores)
    with built(_small()) as exp:  # type: ignore[arg-type]
        if len(cores) > 1:
            assert isinstance(exp.executor, ThreadExecutor) and exp.executor.workers == len(cores)
        else:
            assert isinstance(exp.executor, LocalExecutor)


def test_a_users_module_trains_in_process_under_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    _cores(monkeypatch, {0, 1, 2, 3})
    from tests.custom_modules import blobs, tiny_mlp
    from fedfit.sources import UserSources

    config = parse_config({"fleet": {"tiers": {"flagship_phone": 2}}, "training": {"batch_size": 8},
                           "orchestration": {"rounds": 1, "clients_per_round": 2},
                           "output": {"plots": False, "progress": False}})
    with built(config, UserSources(model=tiny_mlp, data=blobs)) as exp:
        assert isinstance(exp.executor, LocalExecutor)


def _run_config(executor: str, mode: str) -> object:
    """A 12-device digits/MLP run with momentum, sync or async (FedBuff), through ``executor``."""
    extra = {"orchestration.mode": mode, "asynchronous.buffer_size": 3, "asynchronous.concurrency": 6} \
        if mode == "async" else {}
    config = executor_run_config(f"auto_{mode}", executor, training={"momentum": 0.9})
    raw = config.model_dump(mode="json")
    for key, value in extra.items():
        section, name = key.split(".")
        raw[section][name] = value
    return parse_config(raw)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_an_auto_run_on_several_cores_is_the_local_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                       mode: str) -> None:
    _cores(monkeypatch, {0, 1, 2})  # auto trains on three threads, whatever this machine has
    outputs = {}
    for executor in ("local", "auto"):
        run(_run_config(executor, mode), tmp_path / executor)  # type: ignore[arg-type]
        folder = tmp_path / executor
        metrics = [{k: v for k, v in json.loads(line).items() if k != "wall_time_s"}
                   for line in (folder / "metrics.jsonl").read_text().splitlines()]
        outputs[executor] = ((folder / "events.jsonl").read_bytes(), (folder / "model.safetensors").read_bytes(),
                             metrics)
    assert len(outputs["local"][2]) >= 3
    assert outputs["local"] == outputs["auto"]
