"""SecAgg's cost per device, deployed (real `fedfit server` and `fedfit device` processes on
127.0.0.1) vs simulated (the in-memory transport of the same protocol classes).

One synchronous round of ``--devices`` devices (one width, or two widths with ``--widths``),
optionally with the last device exiting right after masking (``--drop``). Each device logs the
bytes of its SecAgg request and response bodies and the wall time from advertising its keys to
the cohort's end; the simulated figures are :func:`fedfit.security.secagg.protocol.secure_sum`'s
traffic for the same cohort size and vector length (binary message sizes, no HTTP/JSON/hex).
A device's seconds run from advertising its keys to the cohort's end, waiting for the others
included (with ``--drop``, the ``phase_timeout_s`` the server waits for the dropped device); its
masking-and-shares seconds are its own computation. Wall times on a shared host are indicative only.

    PYTHONPATH=src .venv/bin/python bench/secagg_deploy.py [--dataset digits] [--model mlp] [--devices 4]
        [--widths 1.0 0.5] [--drop] [--phase-timeout 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

import numpy as np
import yaml

from fedfit.security.secagg.protocol import secure_sum

SECRET = "bench-secret"
LINE = re.compile(r"secagg task \w+: cohort of (\d+), (\d+) words, sent (\d+) B, received (\d+) B, ([\d.]+) s "
                  r"\(([\d.]+) s masking")


def config(dataset: str, model: str, devices: int, widths: list[float] | None, timeout: float) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "name": "secagg-deploy", "seed": 1, "model": {"name": model}, "output": {"plots": False},
        "data": {"dataset": dataset, "partition": {"kind": "iid"}, "max_train_samples": 100 * devices,
                 "max_test_samples": 200},
        "fleet": {"tiers": {"flagship_phone": devices}}, "training": {"batch_size": 10, "lr": 0.1},
        "orchestration": {"rounds": 1, "clients_per_round": devices},
        "privacy": {"secure_aggregation": {"enabled": True, "threshold": 0.5, "min_cohort": 3,
                                           "phase_timeout_s": timeout}},
        "deploy": {"poll_wait_s": 1.0, "linger_s": 6.0, "heartbeat_timeout_s": 60.0}}
    if dataset == "fashion_mnist":
        raw["data"]["path"] = "/usr/share/datasets/fashion-mnist"
    if widths:
        raw["width"] = {"mode": "random", "widths": widths}
    return raw


def deployed(raw: dict[str, Any], devices: int, drop: bool) -> list[dict[str, float]]:
    """Per surviving device: cohort size, words, bytes sent and received, seconds."""
    with TemporaryDirectory() as tmp, socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        cfg = Path(tmp) / "c.yaml"
        cfg.write_text(yaml.safe_dump(raw))
        env = os.environ | {"OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
        base = [sys.executable, "-m", "fedfit.cli"]
        logs = [Path(tmp) / f"d{i}.log" for i in range(devices)]
        procs = [subprocess.Popen(base + ["server", str(cfg), "--state", f"{tmp}/state", "--port", str(port),
                                          "--secret", SECRET], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env=env)]
        for i, log in enumerate(logs):
            extra = {"FEDFIT_SECAGG_EXIT_BEFORE_MASKED": "1"} if drop and i == devices - 1 else {}
            with log.open("wb") as out:
                procs.append(subprocess.Popen(base + ["device", "--server", f"http://127.0.0.1:{port}", "--secret",
                                                      SECRET, "--shard", f"{i}/{devices}"], stdout=out,
                                              stderr=subprocess.STDOUT, env=env | extra))
        for p in procs:
            p.wait(timeout=600)
        rows = [m.groups() for log in logs for m in LINE.finditer(log.read_text())]
    return [{"cohort": int(c), "words": int(w), "sent_bytes": int(s_), "received_bytes": int(r), "seconds": float(t),
             "crypto_seconds": float(k)} for c, w, s_, r, t, k in rows]


def simulated(devices: int, words: int, drop: bool) -> dict[str, float]:
    """Mean per-survivor traffic and the wall time of one in-memory SecAgg of ``devices`` vectors."""
    vectors = [np.random.default_rng(i).normal(size=words) for i in range(devices)]
    dropped = {devices - 1} if drop else set()
    t0 = time.perf_counter()
    result = secure_sum(vectors, threshold=max(1, -(-devices // 2)), dropped=dropped, seed=1)
    wall = time.perf_counter() - t0
    alive = result.survivors
    return {"sent_bytes": statistics.fmean(result.traffic.sent[i] for i in alive),
            "received_bytes": statistics.fmean(result.traffic.received[i] for i in alive),
            "seconds_all_devices": wall}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--model", default="mlp")
    ap.add_argument("--devices", type=int, default=4)
    ap.add_argument("--widths", type=float, nargs="*", default=None)
    ap.add_argument("--drop", action="store_true")
    ap.add_argument("--phase-timeout", type=float, default=10.0)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    rows = deployed(config(args.dataset, args.model, args.devices, args.widths, args.phase_timeout), args.devices, args.drop)
    if not rows:
        sys.exit("no device finished SecAgg (see the device logs)")
    out: dict[str, Any] = {"deployed": rows}
    out["simulated"] = {str(w): simulated(c, w, args.drop) for c, w in sorted({(r["cohort"], r["words"])
                                                                                for r in rows})}
    for r in rows:
        print(f"deployed: cohort {r['cohort']}, {r['words']} words ({8 * r['words']} B masked), "
              f"sent {r['sent_bytes']} B, received {r['received_bytes']} B, {r['seconds']:.2f} s "
              f"({r['crypto_seconds']:.2f} s masking and shares)")
    for words, sim in out["simulated"].items():
        print(f"simulated: {words} words: sent {sim['sent_bytes']:.0f} B, received {sim['received_bytes']:.0f} B, "
              f"{sim['seconds_all_devices']:.2f} s for the whole cohort in one process")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
