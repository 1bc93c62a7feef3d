"""The bad-input catalogue: every hostile config, flag, file and damaged run directory a user
may hand fedfit ends in one line on stderr, exit status 2, and nothing written or changed.

Each case names what it breaks and a fragment the error must name; a control case shows the
same command succeeds on the undamaged input, so each case fails for the reason it names.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml
from safetensors import safe_open
from safetensors.torch import save_file

from fedfit.cli import main
from fedfit.report.lock import RunLock
from fedfit.simulation import checkpoint
from tests.faults.conftest import SMALL

BASE: dict[str, Any] = {**SMALL, "model": {"name": "mlp"}, "orchestration": {"rounds": 2, "clients_per_round": 3}}
BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi", strict=True))


def _merge(change: dict[str, Any]) -> dict[str, Any]:
    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in BASE.items()}
    for key, value in change.items():
        raw[key] = {**raw[key], **value} if isinstance(value, dict) and isinstance(raw.get(key), dict) else value
    return raw


def _one_line_exit_2(code: int, err: str, fragment: str) -> None:
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("fedfit: error: "), err
    assert fragment in err, err


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file() and p.name != ".lock"}


# --- configs -------------------------------------------------------------------------------------

CONFIGS: dict[str, tuple[dict[str, Any], str]] = {
    "lr infinite": ({"training": {"lr": float("inf")}}, "training.lr"),
    "lr NaN": ({"training": {"lr": float("nan")}}, "training.lr"),
    "lr negative": ({"training": {"lr": -0.1}}, "training.lr"),
    "lr zero": ({"training": {"lr": 0}}, "training.lr"),
    "lr a boolean": ({"training": {"lr": True}}, "training.lr"),
    "batch_size a boolean": ({"training": {"batch_size": True}}, "training.batch_size"),
    "batch_size zero": ({"training": {"batch_size": 0}}, "training.batch_size"),
    "batch_size a fraction": ({"training": {"batch_size": 2.5}}, "training.batch_size"),
    "batch_size a word": ({"training": {"batch_size": "eight"}}, "training.batch_size"),
    "local_epochs false": ({"training": {"local_epochs": False}}, "training.local_epochs"),
    "momentum 1": ({"training": {"momentum": 1.0}}, "training.momentum"),
    "plots a number": ({"output": {"plots": 1}}, "output.plots"),
    "progress a word": ({"output": {"progress": "no"}}, "output.progress"),
    "fednova zero": ({"aggregation": {"fednova": 0}}, "aggregation.fednova"),
    "deadline infinite": ({"orchestration": {"deadline_s": float("inf")}}, "orchestration.deadline_s"),
    "rounds zero": ({"orchestration": {"rounds": 0}}, "orchestration.rounds"),
    "clients_per_round above the fleet": ({"orchestration": {"clients_per_round": 50}},
                                          "clients_per_round: 50 exceeds the fleet's 4 devices"),
    "seed 2**64": ({"seed": 2**64}, "seed"),
    "seed negative": ({"seed": -1}, "seed"),
    "seed a boolean": ({"seed": True}, "seed"),
    "unknown section": ({"bogus": {"x": 1}}, "bogus: unknown key"),
    "unknown key": ({"training": {"lrr": 0.1}}, "training.lrr: unknown key"),
    "section a number": ({"training": 5}, "training"),
    "tier count a boolean": ({"fleet": {"tiers": {"flagship_phone": True}}}, "fleet.tiers"),
    "no devices": ({"fleet": {"tiers": {"flagship_phone": 0}}}, "no devices"),
    "unknown tier": ({"fleet": {"tiers": {"android_toaster": 4}}}, "android_toaster"),
    "width list with a boolean": ({"width": {"widths": [1.0, True]}}, "width.widths"),
    "missing trace file": ({"fleet": {"traces": {0: "/nonexistent/trace.csv"}}}, "/nonexistent/trace.csv"),
    "trace for no device": ({"fleet": {"traces": {9: "x.csv"}}}, "fleet.traces.9"),
    "trace size cap zero": ({"fleet": {"max_trace_bytes": 0}}, "fleet.max_trace_bytes"),
    "missing dataset": ({"data": {"dataset": "fashion_mnist", "path": "/nonexistent/fmnist"}}, "/nonexistent/fmnist"),
}

TEXTS: dict[str, tuple[bytes, str]] = {
    "alias bomb (billion laughs)": (BOMB.encode(), "YAML nodes"),
    "recursive alias": (b"strategies: &a {x: *a}\n", "YAML nodes"),
    "invalid YAML": (b"training: [\n", "not valid YAML"),
    "two documents": (b"seed: 1\n---\nseed: 2\n", "not valid YAML"),
    "top level a list": (b"- 1\n- 2\n", "top level must be a mapping"),
    "top level a number": (b"42\n", "top level must be a mapping"),
    "not UTF-8": (b"name: caf\xe9\n", "not UTF-8"),
    "larger than the cap": (b"# padding line\n" * 80_000, "limit"),
    "nested too deeply": (b"strategies: " + b"[" * 1_500 + b"]" * 1_500 + b"\n", "config"),
    "section null": (b"training: null\n", "training"),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_a_bad_config_value(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    change, fragment = CONFIGS[name]
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_merge(change)))
    code = main(["run", str(config), "--out", str(tmp_path / "out")])
    _one_line_exit_2(code, capsys.readouterr().err, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", list(TEXTS))
def test_a_bad_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    text, fragment = TEXTS[name]
    config = tmp_path / "c.yaml"
    config.write_bytes(text)
    code = main(["run", str(config), "--out", str(tmp_path / "out")])
    _one_line_exit_2(code, capsys.readouterr().err, fragment)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name, path, fragment", [
    ("missing", "nope.yaml", "file not found"),
    ("a directory", ".", "file not found"),
])
def test_a_config_path_that_is_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       name: str, path: str, fragment: str) -> None:
    code = main(["run", str(tmp_path / path), "--out", str(tmp_path / "out")])
    _one_line_exit_2(code, capsys.readouterr().err, fragment)


def test_a_trace_over_its_size_cap(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = tmp_path / "t.csv"
    trace.write_text("t_s,battery_fraction\n" + "".join(f"{i},0.5\n" for i in range(200)))
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_merge({"fleet": {"traces": {0: str(trace)}, "max_trace_bytes": 100}})))
    code = main(["run", str(config), "--out", str(tmp_path / "out")])
    _one_line_exit_2(code, capsys.readouterr().err, "larger than the 100-byte limit")


@pytest.mark.parametrize("value, fragment", [("12", "larger than the 12-byte limit"), ("lots", "FEDFIT_MAX_CONFIG_BYTES")])
def test_the_config_size_cap_is_configurable(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, value: str, fragment: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(BASE))
    monkeypatch.setenv("FEDFIT_MAX_CONFIG_BYTES", value)
    _one_line_exit_2(main(["run", str(config), "--out", str(tmp_path / "out")]), capsys.readouterr().err, fragment)


# --- flags ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("item, fragment", [
    ("training.lr=[0.1", "--set training.lr"),
    ("training.lr", "expected KEY=VALUE"),
    ("=3", "expected KEY=VALUE"),
    ("nosuch.key=1", "nosuch.key: unknown key"),
    ("training.nosuch=1", "training.nosuch: unknown key"),
    ("training.lr=.inf", "training.lr"),
    ("seed=18446744073709551616", "seed"),
    ("training.batch_size=true", "training.batch_size"),
    ("orchestration.clients_per_round=9", "exceeds the fleet's 4 devices"),
    ("strategies=" + BOMB.replace("\n", "; "), "--set strategies"),
])
def test_a_bad_set(tmp_path: Path, capsys: pytest.CaptureFixture[str], item: str, fragment: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(BASE))
    code = main(["run", str(config), "--set", item, "--out", str(tmp_path / "out")])
    _one_line_exit_2(code, capsys.readouterr().err, fragment)
    assert not (tmp_path / "out").exists()


# --- run directories -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finished")
    config = root / "c.yaml"
    config.write_text(yaml.safe_dump({**BASE, "output": {**BASE["output"], "checkpoint_every": 1}}))
    assert main(["run", str(config), "--out", str(root / "run")]) == 0
    return root / "run"


@pytest.fixture
def copy(tmp_path: Path, finished: Path) -> Path:
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


def test_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, out = tmp_path / "c.yaml", tmp_path / "file"
    config.write_text(yaml.safe_dump(BASE))
    out.write_text("mine")
    _one_line_exit_2(main(["run", str(config), "--out", str(out)]), capsys.readouterr().err, "not a directory")
    _one_line_exit_2(main(["run", str(config), "--out", str(out / "sub")]), capsys.readouterr().err, "under a file")
    assert out.read_text() == "mine"


def test_out_holds_a_finished_run(copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_merge({"seed": 9})))
    before = _snapshot(copy)
    _one_line_exit_2(main(["run", str(config), "--out", str(copy)]), capsys.readouterr().err, "--force")
    assert _snapshot(copy) == before


def test_out_is_in_use(copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(BASE))
    before = _snapshot(copy)
    with RunLock(copy):
        code = main(["run", str(config), "--out", str(copy), "--force"])
        _one_line_exit_2(code, capsys.readouterr().err, "PID")
        _one_line_exit_2(main(["resume", str(copy), "--rounds", "3"]), capsys.readouterr().err, "PID")
    assert _snapshot(copy) == before


def _rewrite(run_dir: Path, edit: Callable[[Any, dict[str, torch.Tensor]], Any],
             meta: Callable[[dict[str, str]], None] | None = None) -> None:
    """Rewrite the checkpoint with ``edit(json, tensors)`` applied to its state JSON."""
    path = run_dir / checkpoint.FILENAME
    with safe_open(str(path), framework="pt") as f:
        metadata = dict(f.metadata())
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    data = edit(json.loads(bytes(tensors[checkpoint.STATE_KEY].numpy()).decode()), tensors)
    text = data if isinstance(data, str) else json.dumps(data)
    tensors[checkpoint.STATE_KEY] = torch.frombuffer(bytearray(text.encode()), dtype=torch.uint8)
    if meta:
        meta(metadata)
    save_file(tensors, str(path), metadata=metadata)


def _fields(data: Any, name: str | None = None) -> dict[str, Any]:
    """The field mapping of the checkpoint (or of its field ``name``, a dataclass)."""
    fields: dict[str, Any] = data["$d"][1]
    return fields if name is None else fields[name]["$d"][1]


def _first(data: Any, marker: str) -> dict[str, Any]:
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if marker in node:
                return node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    raise LookupError(marker)


def _set(edit: Callable[[Any], None]) -> Callable[[Any, dict[str, torch.Tensor]], Any]:
    def apply(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
        edit(data)
        return data
    return apply


def _first_param(data: Any) -> str:
    return str(_fields(data, "server")["params"]["$m"][0][1]["$x"])


def _nan(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
    key = _first_param(data)
    tensors[key] = torch.full_like(tensors[key], float("nan"))
    return data


def _reshape(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
    key = _first_param(data)
    tensors[key] = torch.zeros(3, 3)
    return data


def _drop_tensor(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
    del tensors[_first_param(data)]
    return data


def _nest(depth: int) -> Callable[[Any, dict[str, torch.Tensor]], Any]:
    def apply(data: Any, tensors: dict[str, torch.Tensor]) -> Any:
        _fields(data)["width_pools"] = {"$m": [[0, json.loads("[" * depth + "]" * depth)]]}
        return data
    return apply


def _short_enum(data: Any) -> None:
    _first(data, "$e")["$e"] = ["Link"]


CHECKPOINTS: dict[str, tuple[Callable[[Any, dict[str, torch.Tensor]], Any], str]] = {
    "metadata not JSON": (lambda d, t: "{not json", "not valid JSON"),
    "metadata nested 100000 deep": (lambda d, t: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "values nested past the cap": (_nest(200), "nested deeper than 64"),
    "short enum marker": (_set(_short_enum), "malformed checkpoint value $e"),
    "list as a dataclass body": (_set(lambda d: d.update({"$d": ["Checkpoint", [1, 2]]})), "fields must be an object"),
    "unknown type": (_set(lambda d: d.update({"$d": ["Popen", {}]})), "'Popen'"),
    "unknown marker": (_set(lambda d: _fields(d).update({"log_bytes": {"$q": 1}})), "unknown checkpoint marker"),
    "two-key marker": (_set(lambda d: _fields(d).update({"log_bytes": {"$t": [], "$m": []}})), "malformed"),
    "digest a number": (_set(lambda d: _fields(d).update({"config_digest": 5})), "Checkpoint.config_digest"),
    "reports a list": (_set(lambda d: _fields(d).update({"reports": []})), "Checkpoint.reports"),
    "round a string": (_set(lambda d: _fields(d, "server").update({"round": "2"})), "SyncState.round"),
    "negative clock": (_set(lambda d: _fields(d, "server").update({"now_s": -5.0})), "negative"),
    "negative log size": (_set(lambda d: _fields(d).update({"log_bytes": {"$t": [-1, 10]}})), "negative log sizes"),
    "emptied reports": (_set(lambda d: _fields(d).update({"reports": {"$t": []}})), "0 reports are saved"),
    "missing field": (_set(lambda d: _fields(d).pop("fleet")), "malformed checkpoint value $d"),
    "extra field": (_set(lambda d: _fields(d).update({"evil": 1})), "malformed checkpoint value $d"),
    "NaN weights": (_nan, "NaN or infinite"),
    "wrong tensor shape": (_reshape, "the config's is"),
    "missing tensor": (_drop_tensor, "missing from the tensor file"),
}


@pytest.mark.parametrize("name", list(CHECKPOINTS))
def test_a_damaged_checkpoint(copy: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    edit, fragment = CHECKPOINTS[name]
    _rewrite(copy, edit)
    before = _snapshot(copy)
    _one_line_exit_2(main(["resume", str(copy), "--rounds", "3"]), capsys.readouterr().err, fragment)
    assert _snapshot(copy) == before


def _damage_file(name: str, content: bytes | None) -> Callable[[Path], None]:
    def apply(run_dir: Path) -> None:
        if content is None:
            (run_dir / name).unlink()
        else:
            (run_dir / name).write_bytes(content)
    return apply


def _halve(name: str) -> Callable[[Path], None]:
    def apply(run_dir: Path) -> None:
        data = (run_dir / name).read_bytes()
        (run_dir / name).write_bytes(data[: len(data) // 2])
    return apply


RUN_DIRS: dict[str, tuple[Callable[[Path], None], list[str], str]] = {
    "checkpoint truncated": (_halve("checkpoint.safetensors"), ["--rounds", "3"], "unreadable checkpoint"),
    "checkpoint garbage": (_damage_file("checkpoint.safetensors", b"\x00" * 64), ["--rounds", "3"], "checkpoint"),
    "checkpoint of another format": (lambda d: _rewrite(d, lambda j, t: j, lambda m: m.update({"format": "9"})),
                                     ["--rounds", "3"], "not a fedfit checkpoint"),
    "checkpoint missing": (_damage_file("checkpoint.safetensors", None), ["--rounds", "3"], "no checkpoint"),
    "config edited": (lambda d: (d / "config.yaml").write_text((d / "config.yaml").read_text().replace(
        "seed: 3", "seed: 4")), ["--rounds", "3"], "config.yaml: seed differs from the config the checkpoint"),
    "config emptied": (_damage_file("config.yaml", b""), ["--rounds", "3"], "or the checkpoint is another run's"),
    "config an alias bomb": (_damage_file("config.yaml", BOMB.encode()), ["--rounds", "3"], "YAML nodes"),
    "config not UTF-8": (_damage_file("config.yaml", b"\xff\xfe\x00"), ["--rounds", "3"], "not UTF-8"),
    "config missing": (_damage_file("config.yaml", None), ["--rounds", "3"], "file not found"),
    "events shorter than the checkpoint": (_halve("events.jsonl"), ["--rounds", "3"], "events.jsonl"),
    "metrics missing": (_damage_file("metrics.jsonl", None), ["--rounds", "3"], "metrics.jsonl"),
    "already finished": (lambda d: None, [], "already has 2 rounds"),
    "fewer rounds than done": (lambda d: None, ["--rounds", "1"], "already has 2 rounds"),
    "rounds zero": (lambda d: None, ["--rounds", "0"], "orchestration.rounds"),
}


@pytest.mark.parametrize("name", list(RUN_DIRS))
def test_a_damaged_run_directory_on_resume(copy: Path, capsys: pytest.CaptureFixture[str], name: str) -> None:
    damage, flags, fragment = RUN_DIRS[name]
    damage(copy)
    before = _snapshot(copy)
    _one_line_exit_2(main(["resume", str(copy), *flags]), capsys.readouterr().err, fragment)
    assert _snapshot(copy) == before


def test_resume_of_no_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _one_line_exit_2(main(["resume", str(tmp_path / "nowhere")]), capsys.readouterr().err, "no such directory")
    assert not (tmp_path / "nowhere").exists()


def test_the_controls_succeed(copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The undamaged copy evaluates, exports and resumes: each case above fails for its damage."""
    assert main(["evaluate", str(copy), "--json"]) == 0
    assert main(["export", str(copy), "--width", "0.5", "--out", str(copy.parent / "exported")]) == 0
    assert main(["resume", str(copy), "--rounds", "3"]) == 0


def _model_json(edit: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    def apply(run_dir: Path) -> None:
        record = json.loads((run_dir / "model.json").read_text())
        edit(record)
        (run_dir / "model.json").write_text(json.dumps(record))
    return apply


def _model_tensors(edit: Callable[[dict[str, torch.Tensor]], None]) -> Callable[[Path], None]:
    def apply(run_dir: Path) -> None:
        with safe_open(str(run_dir / "model.safetensors"), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
        edit(tensors)
        save_file(tensors, str(run_dir / "model.safetensors"))
    return apply


def _first_nan(tensors: dict[str, torch.Tensor]) -> None:
    key = sorted(tensors)[0]
    tensors[key] = torch.full_like(tensors[key], float("inf"))


MODELS: dict[str, tuple[Callable[[Path], None], str]] = {
    "model.json not JSON": (_damage_file("model.json", b"{"), "model.json: damaged"),
    "model.json a list": (_damage_file("model.json", b"[1, 2]"), "model.json: damaged"),
    "model.json not UTF-8": (_damage_file("model.json", b"\xff"), "model.json: unreadable"),
    "model.json unknown model": (_model_json(lambda r: r.update({"name": "resnet9000"})), "model.json: model.name"),
    "model.json another width": (_model_json(lambda r: r.update({"width": 0.5})), "has shape"),
    "model.json missing": (_damage_file("model.json", None), "not a finished run"),
    "model.safetensors truncated": (_halve("model.safetensors"), "damaged tensor file"),
    "model.safetensors missing a tensor": (_model_tensors(lambda t: t.pop(sorted(t)[0])), "do not fit"),
    "model.safetensors infinite": (_model_tensors(_first_nan), "NaN or infinite"),
    "channel statistics garbage": (_damage_file("channel_stats.safetensors", b"junk"), "channel_stats"),
}


@pytest.mark.parametrize("command", ["evaluate", "export"])
@pytest.mark.parametrize("name", list(MODELS))
def test_a_damaged_model(copy: Path, capsys: pytest.CaptureFixture[str], name: str, command: str) -> None:
    damage, fragment = MODELS[name]
    damage(copy)
    before = _snapshot(copy)
    flags = ["--width", "0.5", "--out", str(copy.parent / "exported")] if command == "export" else []
    _one_line_exit_2(main([command, str(copy), *flags]), capsys.readouterr().err, fragment)
    assert _snapshot(copy) == before
    assert not (copy.parent / "exported").exists()


@pytest.mark.parametrize("flags, fragment", [
    (["--width", "0"], "--width"),
    (["--width", "1.5"], "--width"),
    (["--width", "0.5", "--out", "FILE/sub"], "--out"),
])
def test_a_bad_export_request(copy: Path, capsys: pytest.CaptureFixture[str], flags: list[str], fragment: str) -> None:
    (copy.parent / "FILE").write_text("mine")
    flags = [f.replace("FILE", str(copy.parent / "FILE")) for f in flags]
    _one_line_exit_2(main(["export", str(copy), *flags]), capsys.readouterr().err, fragment)
