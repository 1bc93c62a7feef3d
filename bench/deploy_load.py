"""Load on one real `fedfit server` (uvicorn on 127.0.0.1) from N concurrent device clients.

The clients speak the real protocol with asyncio + httpx (enrol, heartbeat, long-poll task,
model download, update upload) but their local step is trivial (the sent tensors plus 0.001),
so what is measured is the server: check-ins/s (heartbeats and task polls), uploads/s, request
latency p50/p99, errors (any answer other than the protocol's 2xx / 204 / 410), and the server
process's peak RSS. Loops are bounded: the server runs ROUNDS rounds with every device invited,
then answers 410 and every client stops.

    PYTHONPATH=src python bench/deploy_load.py [--clients 500] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil
import torch
import yaml

from fedfit.transport.codec import decode, encode

SECRET = "load-secret"
OK = {200, 204, 409, 410}  # 409: a task closed by the round's end (protocol, not an error)


def config(clients: int, rounds: int) -> dict[str, object]:
    return {"name": "load", "seed": 0, "model": {"name": "logreg"}, "output": {"plots": False},
            "data": {"dataset": "digits", "partition": {"kind": "iid"}, "max_test_samples": 200},
            "fleet": {"tiers": {"flagship_phone": clients}, "catalogue": "scaled"}, "training": {"batch_size": 1},
            "orchestration": {"rounds": rounds, "clients_per_round": clients},
            "deploy": {"poll_wait_s": 2.0, "linger_s": 15.0, "heartbeat_timeout_s": 120.0}}


class Stats:
    def __init__(self) -> None:
        self.latency: list[float] = []
        self.checkins = self.uploads = self.errors = self.finished = 0
        self.first_error = ""

    async def call(self, client: httpx.AsyncClient, method: str, url: str, **kw: object) -> httpx.Response:
        start = time.perf_counter()
        try:
            resp = await client.request(method, url, **kw)  # type: ignore[arg-type]
        except httpx.TransportError as err:
            self.errors += 1
            self.first_error = self.first_error or f"{method} {url}: {type(err).__name__}: {err}"
            return httpx.Response(599)
        self.latency.append(time.perf_counter() - start)
        if resp.status_code not in OK:
            self.errors += 1
            self.first_error = self.first_error or f"{method} {url}: {resp.status_code} {resp.text[:120]}"
        return resp


async def device(client: httpx.AsyncClient, stats: Stats) -> None:
    profile = {"total_memory_bytes": 2**31, "cpu_cores": 4, "arch": "x86_64", "flops_per_s": 1e9, "num_examples": 1}
    enrolled = await stats.call(client, "POST", "/v1/enrol", json={"secret": SECRET, "profile": profile})
    if enrolled.status_code != 200:
        return
    auth = {"Authorization": f"Bearer {enrolled.json()['token']}"}
    report = json.dumps({"samples_processed": 1, "steps": 1, "micro_batch": 1, "accumulation_steps": 1,
                         "train_loss": 1.0, "duration_s": 0.001, "num_examples": 1})
    failures = 0
    while failures < 20:  # the server gone for good (it exits after its run): stop
        await stats.call(client, "POST", "/v1/heartbeat", content='{"free_memory_bytes": 1000000000}',
                         headers=auth | {"Content-Type": "application/json"})
        task = await stats.call(client, "GET", "/v1/task", params={"wait_s": 2.0}, headers=auth)
        stats.checkins += 2
        if task.status_code == 410:
            stats.finished += 1
            return
        if task.status_code != 200:
            failures = failures + 1 if task.status_code == 599 else 0
            if failures:
                await asyncio.sleep(0.5)
            continue
        failures = 0
        task_id = task.json()["task_id"]
        model = await stats.call(client, "GET", f"/v1/tasks/{task_id}/model", headers=auth)
        if model.status_code != 200:
            continue
        params = {k: v + 0.001 for k, v in decode(model.content)[0].items()}
        body = encode(params, {"report": report})
        up = await stats.call(client, "POST", f"/v1/tasks/{task_id}/update", content=body,
                              headers=auth | {"Content-Type": "application/octet-stream"})
        stats.uploads += up.status_code == 200


async def drive(url: str, clients: int) -> tuple[Stats, float]:
    stats = Stats()
    limits = httpx.Limits(max_connections=clients + 10, max_keepalive_connections=clients + 10)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120.0) as client:
        start = time.perf_counter()
        await asyncio.gather(*(device(client, stats) for _ in range(clients)))
        return stats, time.perf_counter() - start


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_up(url: str, timeout_s: float = 300.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/metrics", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.5)
    raise SystemExit("server did not start")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "load.yaml"
        cfg.write_text(yaml.safe_dump(config(args.clients, args.rounds)))
        port = free_port()
        env = os.environ | {"OMP_NUM_THREADS": "1"}
        server = subprocess.Popen([sys.executable, "-m", "fedfit.cli", "server", str(cfg), "--state", f"{tmp}/state",
                                   "--port", str(port), "--secret", SECRET], env=env)
        url = f"http://127.0.0.1:{port}"
        wait_up(url)
        proc, peak = psutil.Process(server.pid), [0]

        async def sample() -> None:
            while server.poll() is None:
                peak[0] = max(peak[0], proc.memory_info().rss)
                await asyncio.sleep(0.2)

        async def both() -> tuple[Stats, float]:
            sampler = asyncio.create_task(sample())
            result = await drive(url, args.clients)
            sampler.cancel()
            return result

        try:
            stats, seconds = asyncio.run(both())
            server.wait(timeout=60)
        finally:
            if server.poll() is None:
                server.kill()
                server.wait()
    lat = sorted(stats.latency)
    p50, p99 = lat[len(lat) // 2], lat[min(len(lat) - 1, int(len(lat) * 0.99))]
    print(f"clients {args.clients}, rounds {args.rounds}, {seconds:.1f} s")
    print(f"clients told the run finished {stats.finished}/{args.clients} (the rest saw the server exit)")
    print(f"requests {len(lat)}, errors {stats.errors}{' (' + stats.first_error + ')' if stats.errors else ''}")
    print(f"check-ins/s {stats.checkins / seconds:.1f}, uploads/s {stats.uploads / seconds:.1f} "
          f"(uploads accepted {stats.uploads})")
    print(f"latency p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms (long-polls included)")
    print(f"server peak RSS {peak[0] / 2**20:.0f} MiB, server exit {server.returncode}")


if __name__ == "__main__":
    main()
