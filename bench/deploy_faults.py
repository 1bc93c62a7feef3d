"""Crash trials of a real deployment on loopback: `kill -9` of the server (and sometimes of a
device) at a random moment of a run, then the same server command again.

Each trial starts a server and 3 device processes on 127.0.0.1, waits for the first committed
version, sleeps a random 0-4 s, kills the server with SIGKILL (and, in about half the trials, a
random device too, a random 0-4 s later), restarts the server with the same command and waits for
the run to end. It then compares the updates the devices were told were accepted with the
server's journal: lost = acknowledged but not journalled; twice = journalled more than once or
settled into more than one version; unsettled = journalled but in no version and not dropped.

    PYTHONPATH=src python bench/deploy_faults.py [--trials 20] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from fedfit.transport.sqlite_state import SqliteState

SECRET = "faults-secret"
ROUNDS, DEVICES = 4, 3


def config() -> dict[str, object]:
    return {"name": "faults", "seed": 0, "model": {"name": "logreg"}, "output": {"plots": False},
            "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_train_samples": 300,
                     "max_test_samples": 150},
            "fleet": {"tiers": {"flagship_phone": DEVICES}, "catalogue": "scaled"}, "training": {"batch_size": 10, "lr": 0.1},
            "orchestration": {"rounds": ROUNDS, "clients_per_round": 2, "over_selection": 0.5, "deadline_s": 60},
            "deploy": {"poll_wait_s": 1.0, "linger_s": 2.0, "heartbeat_timeout_s": 8.0}}


def spawn(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-m", "fedfit.cli", *args], stdout=out, stderr=subprocess.STDOUT,
                                env=env)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_version(db: Path, version: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if db.exists() and SqliteState(db).progress().version >= version:
            return True
        time.sleep(0.3)
    return False


def trial(tmp: Path, rng: random.Random) -> dict[str, object]:
    cfg, state, port = tmp / "c.yaml", tmp / "state", free_port()
    cfg.write_text(yaml.safe_dump(config()))
    server_args = ["server", str(cfg), "--state", str(state), "--port", str(port), "--secret", SECRET]
    server = spawn(server_args, tmp / "server.log")
    devices = [spawn(["device", "--server", f"http://127.0.0.1:{port}", "--secret", SECRET, "--shard",
                      f"{i}/{DEVICES}"], tmp / f"device{i}.log") for i in range(DEVICES)]
    wait_version(state / "state.db", 1, 400)
    time.sleep(rng.uniform(0, 4))
    server.send_signal(signal.SIGKILL)
    server.wait()
    killed_device = None
    if rng.random() < 0.5:
        time.sleep(rng.uniform(0, 4))
        killed_device = rng.randrange(DEVICES)
        devices[killed_device].send_signal(signal.SIGKILL)
    server = spawn(server_args, tmp / "server.log")
    finished = True
    for p in [server, *devices]:
        try:
            p.wait(timeout=400)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            finished = False
    acked = [m for i in range(DEVICES) for m in re.findall(r"accepted task (\w+)", (tmp / f"device{i}.log").read_text())]
    journal = SqliteState(state / "state.db").journal()
    journalled = Counter(e.task_id for e in journal)
    summary = state / "run" / "summary.json"
    rounds = json.loads(summary.read_text())["rounds"] if summary.exists() else 0
    return {"acknowledged": len(set(acked)), "journalled": len(journal),
            "lost": len(set(acked) - set(journalled)), "twice": sum(n > 1 for n in journalled.values()),
            "unsettled": sum(e.applied_version is None and not e.dropped for e in journal),
            "dropped_late": sum(e.dropped for e in journal), "device_killed": killed_device,
            "finished": finished and server.returncode == 0 and rounds == ROUNDS}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    totals: Counter[str] = Counter()
    for t in range(args.trials):
        with tempfile.TemporaryDirectory() as tmp:
            r = trial(Path(tmp), rng)
        print(f"trial {t}: {r}", flush=True)
        for key in ("acknowledged", "journalled", "lost", "twice", "unsettled", "dropped_late"):
            totals[key] += int(r[key])  # type: ignore[call-overload]
        totals["finished"] += bool(r["finished"])
        totals["device_killed"] += r["device_killed"] is not None
    print(f"{args.trials} trials: updates acknowledged {totals['acknowledged']}, in the journal "
          f"{totals['journalled']}, lost {totals['lost']}, applied twice {totals['twice']}, unsettled "
          f"{totals['unsettled']}, dropped as late {totals['dropped_late']}; trials with a device killed too "
          f"{totals['device_killed']}; trials finished {totals['finished']}/{args.trials}")


if __name__ == "__main__":
    main()
