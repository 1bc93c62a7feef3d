"""The command line: run, resume, compare, devices, and one-line errors with exit status 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import fedfit.runner as runner
from fedfit.cli import main

SMALL = {
    "name": "cli", "seed": 1,
    "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 600, "max_test_samples": 100},
    "model": {"name": "logreg"},
    "fleet": {"tiers": {"flagship_phone": 3, "older_phone": 3}},
    "training": {"batch_size": 8},
    "orchestration": {"rounds": 2, "clients_per_round": 4},
    "output": {"plots": True, "progress": False},
    "strategies": {"tiny-batch": {"training.batch_size": 2}},
}


def _write(tmp_path: Path, raw: dict) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def test_run_writes_the_run_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", str(_write(tmp_path, SMALL)), "--out", str(tmp_path / "run")])
    assert code == 0
    assert (tmp_path / "run" / "summary.json").is_file()
    assert (tmp_path / "run" / "accuracy.png").is_file()
    assert "final accuracy" in capsys.readouterr().out


def test_set_overrides_a_key(tmp_path: Path) -> None:
    main(["run", str(_write(tmp_path, SMALL)), "--out", str(tmp_path / "r"), "--set", "orchestration.rounds=1"])
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["rounds"] == 1


def test_compare_prints_json_for_each_strategy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["compare", str(_write(tmp_path, SMALL)), "--strategy", "fedavg", "--strategy", "tiny-batch",
                 "--json", "--out", str(tmp_path / "cmp")])
    assert code == 0
    table = json.loads(capsys.readouterr().out)
    assert set(table) == {"fedavg", "tiny-batch"}
    for summary in table.values():
        assert {"time_to_target_s", "final_accuracy", "failures_by_cause", "participation_by_tier"} <= set(summary)
    assert (tmp_path / "cmp" / "compare_accuracy.png").is_file()


def test_compare_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["compare", str(_write(tmp_path, SMALL)), "--strategy", "fedavg", "--out", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert "time to target" in out and "fedavg" in out


def test_devices_lists_the_catalogue(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices", "--json"]) == 0
    tiers = json.loads(capsys.readouterr().out)
    assert {"flagship_phone", "midrange_phone", "older_phone", "tablet", "smartwatch", "sensor_mcu",
            "vehicle_computer"} <= set(tiers)


@pytest.mark.parametrize("change, fragment", [
    ({"training": {"batch_size": 0}}, "training.batch_size"),
    ({"bogus": 1}, "bogus: unknown key"),
    ({"fleet": {"tiers": {"android_toaster": 2}}}, "unknown device tier 'android_toaster'"),
    ({"data": {"dataset": "fashion_mnist", "path": "/nonexistent/fmnist"}}, "/nonexistent/fmnist"),
    ({"fleet": {"tiers": {"flagship_phone": 2}, "traces": {7: "x.csv"}}}, "fleet.traces.7"),
    ({"fleet": {"tiers": {"tiny": 2}, "custom_tiers": {"tiny": {"flops_per_s": -1}}}}, "tiny"),
])
def test_bad_config_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          change: dict, fragment: str) -> None:
    code = main(["run", str(_write(tmp_path, {**SMALL, **change})), "--out", str(tmp_path / "x")])
    err = capsys.readouterr().err
    assert code == 2
    assert fragment in err
    assert err.count("\n") == 1


def test_unknown_strategy_and_bad_set_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_write(tmp_path, SMALL))
    assert main(["compare", path, "--strategy", "nope"]) == 2
    assert "unknown strategy 'nope'" in capsys.readouterr().err
    assert main(["run", path, "--set", "training.batch_size"]) == 2
    assert "KEY=VALUE" in capsys.readouterr().err
    assert main(["run", str(tmp_path / "missing.yaml")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_ctrl_c_after_a_checkpoint_says_how_to_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = {**SMALL, "orchestration": {"rounds": 4, "clients_per_round": 4},
           "output": {"plots": False, "progress": False, "checkpoint_every": 1}}
    config, out = _write(tmp_path, raw), tmp_path / "run"

    def interrupt(outcome: object) -> None:
        if getattr(outcome, "report").round == 1:
            raise KeyboardInterrupt

    real_run = runner.run
    with pytest.MonkeyPatch.context() as mp:  # Ctrl-C arrives while round 1's callback runs
        mp.setattr("fedfit.cli.run", lambda c, d, on_round=None, **kw: real_run(c, d, interrupt, **kw))
        code = main(["run", str(config), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 130 and f"fedfit resume {out}" in err

    assert main(["resume", str(out)]) == 0
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 4
    assert main(["resume", str(tmp_path / "nowhere")]) == 2
    assert "nowhere" in capsys.readouterr().err


def test_compare_set_wins_over_a_strategys_own_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = {**SMALL, "strategies": {"long": {"orchestration.rounds": 5, "training.batch_size": 2}}}
    code = main(["compare", str(_write(tmp_path, raw)), "--strategy", "long", "--strategy", "fedavg",
                 "--set", "orchestration.rounds=1", "--json", "--out", str(tmp_path / "c")])

    assert code == 0
    table = json.loads(capsys.readouterr().out)
    assert table["long"]["rounds"] == 1 and table["fedavg"]["rounds"] == 1
    saved = yaml.safe_load((tmp_path / "c" / "long" / "config.yaml").read_text())
    assert saved["training"]["batch_size"] == 2  # the strategy's other keys still apply


def test_a_run_that_cannot_progress_stops_with_one_line_and_a_complete_run_directory(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a CNN at batch 256 never fits a 384 KiB sensor: every task runs out of memory
    raw = {**SMALL, "model": {"name": "cnn"}, "fleet": {"tiers": {"sensor_mcu": 2}}, "training": {"batch_size": 256},
           "orchestration": {"mode": "async", "rounds": 3, "stall_timeout_s": 900}}

    code = main(["run", str(_write(tmp_path, raw)), "--out", str(tmp_path / "run")])

    assert code == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fedfit: stopped: no progress for")
    assert "out_of_memory" in err[0] and "orchestration.stall_timeout_s" in err[0]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["rounds"] == 0 and summary["stopped"] in err[0]
    assert summary["failures_by_cause"]["out_of_memory"] >= 2 and summary["virtual_time_s"] >= 900
    assert (tmp_path / "run" / "model.safetensors").is_file()
    assert (tmp_path / "run" / "events.jsonl").read_text().count("\n") == sum(summary["invited_by_tier"].values())
