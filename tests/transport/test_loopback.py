"""Real processes on 127.0.0.1: `fedfit server` and `fedfit device`, a whole run, and a server
killed with SIGKILL mid-run then restarted with the same command (small, bounded, stops by itself)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import fedfit
from fedfit.transport.sqlite_state import SqliteState

pytestmark = pytest.mark.slow
SECRET = "loopback-secret"
SRC = str(Path(fedfit.__file__).resolve().parents[1])


def config(tmp_path: Path, rounds: int, devices: int) -> Path:
    raw = {"name": "loopback", "seed": 1, "model": {"name": "logreg"}, "output": {"plots": False},
           "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 300,
                    "max_test_samples": 150},
           "fleet": {"tiers": {"flagship_phone": devices}}, "training": {"batch_size": 10, "lr": 0.1},
           "orchestration": {"rounds": rounds, "clients_per_round": devices},
           "deploy": {"poll_wait_s": 1.0, "linger_s": 10.0, "heartbeat_timeout_s": 60.0}}
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = os.environ | {"PYTHONPATH": SRC, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen([sys.executable, "-m", "fedfit.cli", *args], stdout=out,
                                stderr=subprocess.STDOUT, env=env)


def server(cfg: Path, state: Path, port: int, tls: list[str] = []) -> subprocess.Popen[bytes]:  # noqa: B006
    return spawn(["server", str(cfg), "--state", str(state), "--port", str(port), "--secret", SECRET, *tls],
                 state.parent / "server.log")


def devices(port: int, count: int, tmp_path: Path, ca: Path | None = None) -> list[subprocess.Popen[bytes]]:
    url = f"{'https' if ca else 'http'}://127.0.0.1:{port}"
    extra = ["--ca", str(ca)] if ca else []
    return [spawn(["device", "--server", url, "--secret", SECRET, "--shard", f"{i}/{count}", *extra],
                  tmp_path / f"device{i}.log") for i in range(count)]


def self_signed(tmp_path: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (it is its own CA) and its key, as PEM files."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def finish(procs: list[subprocess.Popen[bytes]], timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    try:
        return [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def test_server_and_three_devices_finish_a_run_over_tls(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    cert, key = self_signed(tmp_path)
    tls = ["--tls-cert", str(cert), "--tls-key", str(key)]
    procs = [server(config(tmp_path, rounds=2, devices=3), state, port, tls), *devices(port, 3, tmp_path, ca=cert)]
    assert finish(procs, 400) == [0, 0, 0, 0], (tmp_path / "server.log").read_text()[-2000:]
    summary = json.loads((state / "run" / "summary.json").read_text())
    assert summary["rounds"] == 2 and summary["participants_by_tier"] == {"flagship_phone": 6}
    assert len((state / "run" / "metrics.jsonl").read_text().splitlines()) == 2


def wait_for_version(db: Path, version: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists() and SqliteState(db).progress().version >= version:
            return
        time.sleep(0.5)
    raise AssertionError(f"the server never reached version {version}")


def test_server_killed_then_restarted_loses_and_repeats_no_update(tmp_path: Path) -> None:
    port, state, rounds = free_port(), tmp_path / "state", 5
    cfg = config(tmp_path, rounds=rounds, devices=2)
    first = server(cfg, state, port)
    devs = devices(port, 2, tmp_path)
    try:
        wait_for_version(state / "state.db", 2, 300)
    except AssertionError:
        finish([first, *devs], 1)
        raise
    first.send_signal(signal.SIGKILL)
    first.wait()
    again = server(cfg, state, port)
    assert finish([again, *devs], 400) == [0, 0, 0], (tmp_path / "server.log").read_text()[-2000:]
    acknowledged = [m for i in range(2) for m in re.findall(r"accepted task (\w+)", (tmp_path / f"device{i}.log").read_text())]
    journal = SqliteState(state / "state.db").journal()
    assert sorted(acknowledged) == sorted(e.task_id for e in journal)  # none lost, none twice
    assert all(e.applied_version is not None or e.dropped for e in journal)
    metrics = [json.loads(line) for line in (state / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["round"] for m in metrics] == list(range(rounds))
    assert json.loads((state / "run" / "summary.json").read_text())["rounds"] == rounds


def test_a_killed_device_started_again_with_its_state_file_rejoins_as_itself(tmp_path: Path) -> None:
    port, state = free_port(), tmp_path / "state"
    url = f"http://127.0.0.1:{port}"
    # 10 short rounds: the kill (at version 1) comes well before the end on an idle host too, and
    # each later round waits for device 0's task, which only the restarted process can answer
    cfg = config(tmp_path, rounds=10, devices=2)
    raw = yaml.safe_load(cfg.read_text())
    raw["deploy"]["heartbeat_timeout_s"] = 600.0
    cfg.write_text(yaml.safe_dump(raw))

    def device(i: int, log: str) -> subprocess.Popen[bytes]:
        return spawn(["device", "--server", url, "--secret", SECRET, "--shard", f"{i}/2",
                      "--state", str(tmp_path / f"dev{i}" / "device.json")], tmp_path / log)

    procs = [server(cfg, state, port), device(0, "first0.log"), device(1, "device1.log")]
    try:
        wait_for_version(state / "state.db", 1, 300)
    except AssertionError:
        finish(procs, 1)
        raise
    procs[1].send_signal(signal.SIGKILL)
    procs[1].wait()
    again = device(0, "again0.log")
    assert finish([procs[0], again, procs[2]], 400) == [0, 0, 0], (tmp_path / "server.log").read_text()[-2000:]
    first, second = (tmp_path / "first0.log").read_text(), (tmp_path / "again0.log").read_text()
    slot = re.search(r"device (\d+): enrolled", first)
    assert slot is not None and f"device {slot.group(1)}: rejoined" in second
    assert re.search(r"accepted task \w+", second)  # it trained as itself after the restart
    assert len(SqliteState(state / "state.db").devices()) == 2  # no third enrolment
    assert oct((tmp_path / "dev0" / "device.json").stat().st_mode & 0o777) == "0o600"
