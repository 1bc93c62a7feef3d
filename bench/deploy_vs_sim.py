"""Deployment vs simulation on the same config: `fedfit run` against `fedfit server` + 4 `fedfit
device --shard I/4` processes on 127.0.0.1, accuracy per round and the final model compared.

The config is sync FedAvg, every device every round (k = 4, no over-selection, no deadline), so
the cohort never depends on timing. With `--batching fixed` (the default) both sides train the
same plans: device I trains shard I (it enrols as slot I) with the task RNG of (seed, I, round),
and the server sums the updates in device order whatever order they arrive in. The simulated runs
over `--seeds` give the seed-to-seed band the deployed run's difference is compared with.

`--batching dynamic` turns dynamic batching on: each real device then decides its micro-batch from
its own psutil readings. A 2-round calibration deployment measures each device process's resident
memory (RSS); the measured run gives device I `--memory-limit` = its RSS + the free memory simulated
device I had at its first dispatch (`--memory-limit` caps free memory at limit − RSS). The
simulated devices are pinned online, charging and cool (the host reports no battery or
temperature); the CPU load is the host's on the real side, the traces' on the simulated side.

    PYTHONPATH=src python bench/deploy_vs_sim.py [--seeds 0 1 2] [--deploy-seeds 0] [--batching fixed|dynamic] [--dataset fashion_mnist]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil
import torch
import yaml
from safetensors.torch import load_file

from deploy_faults import free_port, spawn  # the same process helpers as the crash trials

SECRET = "deploy-vs-sim"
DEVICES = 4
TIERS = {"flagship_phone": 1, "midrange_phone": 1, "older_phone": 1, "smartwatch": 1}


def online_trace(tmp: Path) -> Path:
    """Every simulated device online on Wi-Fi, charging and cool throughout, as the real processes
    on loopback are (the host reports no battery and no temperature); free memory is the trace's."""
    path = tmp / "online.csv"
    path.write_text("t_s,link,bandwidth_bps,online,battery_fraction,charging,temperature_c\n"
                    "0,wifi,20000000,true,1.0,true,30\n")
    return path


def config(seed: int, rounds: int, batching: str, dataset: str, tmp: Path) -> dict[str, Any]:
    data: dict[str, Any] = {"dataset": dataset, "partition": {"kind": "iid"}, "max_train_samples": 1200,
                            "max_test_samples": 500}
    if dataset == "fashion_mnist":
        data["path"] = "/usr/share/datasets/fashion-mnist"
    return {"name": "deploy_vs_sim", "seed": seed, "data": data, "model": {"name": "mlp"},
            "fleet": {"tiers": TIERS, "catalogue": "scaled",
                      "traces": {i: str(online_trace(tmp)) for i in range(DEVICES)}},
            "training": {"batch_size": 16, "local_epochs": 1, "lr": 0.05},
            "orchestration": {"rounds": rounds, "clients_per_round": DEVICES},
            "batching": {"mode": batching}, "evaluation": {"every": 1},
            "output": {"plots": False, "progress": False},
            "deploy": {"poll_wait_s": 1.0, "linger_s": 3.0, "heartbeat_timeout_s": 120.0}}


def finish(procs: list[subprocess.Popen[bytes]], timeout_s: float, rss: dict[int, int] | None = None) -> list[int]:
    """Wait for ``procs``; with ``rss``, record each one's last resident memory while it runs
    (sampled every 0.2 s)."""
    deadline = time.monotonic() + timeout_s
    try:
        while rss is not None and time.monotonic() < deadline and any(p.poll() is None for p in procs):
            for i, p in enumerate(procs):
                with contextlib.suppress(psutil.Error):
                    now = psutil.Process(p.pid).memory_info().rss
                    rss[i] = now or rss.get(i, 0)  # 0: exited, not yet reaped
            time.sleep(0.2)
        return [p.wait(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def accuracies(run_dir: Path) -> list[float]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [float(json.loads(line)["accuracy"]) for line in lines]


def simulate(cfg: dict[str, Any], tmp: Path) -> Path:
    path, out = tmp / f"sim{cfg['seed']}.yaml", tmp / f"sim{cfg['seed']}"
    path.write_text(yaml.safe_dump(cfg))
    proc = spawn(["run", str(path), "--out", str(out)], tmp / "sim.log")
    if finish([proc], 600) != [0]:
        raise SystemExit(f"fedfit run failed: {(tmp / 'sim.log').read_text()[-2000:]}")
    return out


def deploy(cfg: dict[str, Any], tmp: Path, limits: list[int | None], rss: dict[int, int] | None = None) -> Path:
    """A server and one device process per shard on 127.0.0.1; returns the server's run directory.
    With ``rss``, each device's last resident memory (by shard) is recorded in it."""
    path, state, port = tmp / f"dep{cfg['seed']}.yaml", tmp / f"state{cfg['seed']}", free_port()
    path.write_text(yaml.safe_dump(cfg))
    procs = [spawn(["server", str(path), "--state", str(state), "--port", str(port), "--secret", SECRET],
                   tmp / "server.log")]
    for i in reversed(range(DEVICES)):  # enrol in reverse order: shard I must still become device I
        extra = ["--memory-limit", str(limits[i])] if limits[i] is not None else []
        procs.append(spawn(["device", "--server", f"http://127.0.0.1:{port}", "--secret", SECRET,
                            "--shard", f"{i}/{DEVICES}", *extra], tmp / f"device{i}.log"))
    seen: dict[int, int] = {}
    codes = finish(procs, 600, seen if rss is not None else None)
    if codes != [0] * len(procs):
        raise SystemExit(f"deployment failed {codes}: {(tmp / 'server.log').read_text()[-2000:]}")
    if rss is not None:
        rss.update({DEVICES - j: seen[j] for j in range(1, DEVICES + 1)})  # procs[1] is shard N-1
    return state / "run"


def calibrate(cfg: dict[str, Any], tmp: Path) -> list[int]:
    """Each device process's resident memory in a 2-round run without limits (its steady state)."""
    rss: dict[int, int] = {}
    sub = tmp / "calibrate"
    sub.mkdir()
    deploy(cfg | {"orchestration": cfg["orchestration"] | {"rounds": 2}}, sub, [None] * DEVICES, rss)
    return [rss[i] for i in range(DEVICES)]


def max_param_diff(a: Path, b: Path) -> float:
    ta, tb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    if ta.keys() != tb.keys():
        return float("inf")
    return max(float((ta[k].double() - tb[k].double()).abs().max()) for k in ta)


def sim_free_memory(sim_dir: Path) -> list[int]:
    """Each simulated device's free memory when its first task was dispatched (its trace)."""
    free: dict[int, int] = {}
    for line in (sim_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        free.setdefault(int(event["device"]), int(event["free_memory_bytes"]))
    return [free[i] for i in range(DEVICES)]


def micro_batches(tmp: Path) -> list[list[int]]:
    return [[int(m) for m in re.findall(r"micro-batch (\d+) x", (tmp / f"device{i}.log").read_text())]
            for i in range(DEVICES)]


def declines(tmp: Path) -> list[str]:
    """Each device's declined rounds and the first reason."""
    out = []
    for i in range(DEVICES):
        found = re.findall(r"round (\d+): declined \((.*)\)", (tmp / f"device{i}.log").read_text())
        out.append(f"rounds {[int(r) for r, _ in found]}: {found[0][1]}" if found else "none")
    return out


def sim_micro_batches(sim_dir: Path) -> list[list[int]]:
    rows: list[list[int]] = [[] for _ in range(DEVICES)]
    for line in (sim_dir / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        rows[int(event["device"])].append(int(event["micro_batch"]) if event["ok"] else 0)
    return rows


def bindings(tmp: Path) -> list[str]:
    """Each device's first decision: what bound its batch, with free memory and CPU load; or why it declined."""
    out = []
    for i in range(DEVICES):
        text = (tmp / f"device{i}.log").read_text()
        first = re.search(r"\(bound by (\w+); free (\d+) MiB, cpu ([\d.]+)|declined \((.*)\)", text)
        out.append("none" if first is None else first.group(4) or f"{first.group(1)}, {first.group(2)} MiB, cpu {first.group(3)}")
    return out


def fmt(accs: list[float]) -> str:
    return " ".join(f"{a:.3f}" for a in accs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--deploy-seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--batching", choices=["fixed", "dynamic"], default="fixed")
    ap.add_argument("--dataset", default="digits")
    ap.add_argument("--rss-mb", type=int, default=0, help="dynamic: device RSS added to its budget (0: measure)")
    args = ap.parse_args()
    sims: dict[int, list[float]] = {}
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        dirs = {}
        for seed in args.seeds:
            dirs[seed] = simulate(config(seed, args.rounds, args.batching, args.dataset, tmp), tmp)
            sims[seed] = accuracies(dirs[seed])
            print(f"simulated seed {seed}: {fmt(sims[seed])}", flush=True)
        finals = [a[-1] for a in sims.values()]
        spread = statistics.stdev(finals) if len(finals) > 1 else 0.0
        print(f"simulated final accuracy over seeds {args.seeds}: mean {statistics.mean(finals):.3f}, "
              f"sd {spread:.3f}, range {min(finals):.3f}-{max(finals):.3f}", flush=True)
        for seed in args.deploy_seeds:
            cfg = config(seed, args.rounds, args.batching, args.dataset, tmp)
            (tmp / f"d{seed}").mkdir()
            limits: list[int | None] = [None] * DEVICES
            if args.batching == "dynamic":
                rss = calibrate(cfg, tmp / f"d{seed}") if not args.rss_mb else [args.rss_mb * 2**20] * DEVICES
                limits = [r + free for r, free in zip(rss, sim_free_memory(dirs[seed]), strict=True)]
                print(f"deployed seed {seed}: device RSS (2-round calibration run) {rss}, simulated free at "
                      f"dispatch {sim_free_memory(dirs[seed])}, --memory-limit per device {limits}", flush=True)
            sub = tmp / f"d{seed}" / "run"
            sub.mkdir(parents=True)
            run_dir = deploy(cfg, sub, limits)
            dep = accuracies(run_dir)
            print(f"deployed  seed {seed}: {fmt(dep)}", flush=True)
            if seed in sims:
                diff = max(abs(a - b) for a, b in zip(dep, sims[seed], strict=True))
                print(f"seed {seed}: max |deployed - simulated| accuracy over rounds {diff:.4f}; final "
                      f"{dep[-1] - sims[seed][-1]:+.4f} vs simulated seed-to-seed sd {spread:.4f}; "
                      f"max |parameter difference| of the final models {max_param_diff(run_dir, dirs[seed]):.3g}",
                      flush=True)
            if args.batching == "dynamic":
                print(f"deployed  seed {seed}: micro-batches per device and round {micro_batches(sub)}; first "
                      f"decision per device (bound by, free, cpu) {bindings(sub)}; declined {declines(sub)}", flush=True)
                print(f"simulated seed {seed}: micro-batches per device and round (0: failed) "
                      f"{sim_micro_batches(dirs[seed])}", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    main()
