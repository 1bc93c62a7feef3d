"""Kill a small run at every phase it names, resume, and get the unbroken run bit for bit.

The hook raises where the process would die: after config.yaml, after each round's log lines,
after each checkpoint, after the model, after the plots, after the summary. A kill before the
first checkpoint leaves nothing to resume (``resume`` says so in one line, ``run --force``
starts over); every later kill — also after the last checkpoint, where the run used to be
unfinishable — is finished by ``resume``, as is a resume killed during its own start.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fedfit.cli import main
from fedfit.errors import CheckpointError, ConfigError
from fedfit.runner import resume, run
from tests.faults.conftest import assert_same_run, small_config


class Killed(BaseException):
    """Stands for the process dying (a BaseException: nothing may catch it on the way out)."""


def _kill_at(n: int):  # type: ignore[no-untyped-def]
    seen: list[str] = []

    def hook(phase: str) -> None:
        seen.append(phase)
        if len(seen) == n:
            raise Killed(phase)
    return hook


@pytest.fixture(scope="module")
def unbroken(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("unbroken") / "run"
    phases: list[str] = []
    run(small_config(), out, on_phase=phases.append)
    return out, phases


@pytest.fixture(scope="module")
def unbroken_plots(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = tmp_path_factory.mktemp("plots") / "run"
    phases: list[str] = []
    run(small_config(output={"plots": True}), out, on_phase=phases.append)
    return out, phases


def test_the_run_names_its_phases_in_order(unbroken: tuple[Path, list[str]],
                                           unbroken_plots: tuple[Path, list[str]]) -> None:
    assert unbroken[1] == ["config"] + ["round", "checkpoint"] * 3 + ["model", "summary"]
    assert unbroken_plots[1] == unbroken[1][:-1] + ["plots", "summary"]


@pytest.mark.parametrize("n", range(1, 10))  # every phase of the run, as named above
def test_a_kill_at_any_phase_is_resumed_to_the_unbroken_run(tmp_path: Path, unbroken: tuple[Path, list[str]],
                                                            n: int) -> None:
    reference, phases = unbroken
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run(small_config(), out, on_phase=_kill_at(n))
    _resume_or_restart(out, phases[:n])
    assert_same_run(out, reference)


@pytest.mark.parametrize("phase", ["model", "plots"])
def test_a_kill_while_writing_plots_is_resumed(tmp_path: Path, unbroken_plots: tuple[Path, list[str]],
                                               phase: str) -> None:
    reference, phases = unbroken_plots
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run(small_config(output={"plots": True}), out, on_phase=_kill_at(phases.index(phase) + 1))
    assert not (out / "summary.json").exists()
    resume(out)
    assert_same_run(out, reference)


def _resume_or_restart(out: Path, phases: list[str]) -> None:
    """What a user does after a kill that ``phases`` saw complete; the run ends finished."""
    if phases[-1] == "summary":  # killed after the last write: the run is finished
        with pytest.raises(ConfigError, match="already has 3 rounds"):
            resume(out)
    elif "checkpoint" not in phases:  # nothing to resume from: start over
        with pytest.raises(CheckpointError, match="no checkpoint"):
            resume(out)
        with pytest.raises(ConfigError, match="already holds an unfinished run"):
            run(small_config(), out)
        run(small_config(), out, force=True)
    else:
        resume(out)


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_a_resume_killed_during_its_start_or_finish_is_resumed_again(
        tmp_path: Path, unbroken: tuple[Path, list[str]], n: int) -> None:
    reference, _ = unbroken
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run(small_config(), out, on_phase=_kill_at(4))  # after round 2's log, before its checkpoint
    with pytest.raises(Killed):
        resume(out, on_phase=_kill_at(n))  # config, round, checkpoint, round
    resume(out)
    assert_same_run(out, reference)


def test_killed_after_the_last_checkpoint_evaluate_works_after_resume(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run(small_config(model={"name": "mlp"}), out, on_phase=_kill_at(7))  # the last checkpoint is written
    assert main(["evaluate", str(out), "--json"]) == 2
    assert "fedfit resume" in capsys.readouterr().err
    assert main(["resume", str(out)]) == 0
    assert "finishing" in capsys.readouterr().out
    assert main(["evaluate", str(out), "--json"]) == 0


def test_a_failed_resume_leaves_the_directory_as_it_was(tmp_path: Path, unbroken: tuple[Path, list[str]]) -> None:
    out = tmp_path / "run"
    with pytest.raises(Killed):
        run(small_config(), out, on_phase=_kill_at(4))
    (out / "events.jsonl").write_text("")  # shorter than the checkpoint says: the resume must fail
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(CheckpointError, match="events.jsonl"):
        resume(out, rounds=5)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_force_replaces_a_finished_run(tmp_path: Path, unbroken: tuple[Path, list[str]]) -> None:
    reference, _ = unbroken
    out = tmp_path / "run"
    shutil.copytree(reference, out)
    with pytest.raises(ConfigError, match="already holds a finished run"):
        run(small_config(), out)
    (out / "model_int.safetensors").write_bytes(b"left over from another run")
    run(small_config(), out, force=True)
    assert not (out / "model_int.safetensors").exists()
    assert_same_run(out, reference)


def test_an_extension_killed_after_its_last_checkpoint_is_finished(
        tmp_path: Path, unbroken: tuple[Path, list[str]]) -> None:
    reference, broken = tmp_path / "reference", tmp_path / "broken"
    shutil.copytree(unbroken[0], reference)
    shutil.copytree(unbroken[0], broken)
    resume(reference, rounds=4)
    with pytest.raises(Killed):
        resume(broken, rounds=4, on_phase=_kill_at(3))  # config, round 4, its checkpoint
    assert not (broken / "summary.json").exists()  # the old summary no longer claims a finished run
    resume(broken)
    assert_same_run(broken, reference)
