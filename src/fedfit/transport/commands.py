"""``fedfit server`` and ``fedfit device``: flags to objects (the CLI's I/O edge for deployment)."""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import torch
import uvicorn
from fastapi import FastAPI

from fedfit.config import load_config
from fedfit.errors import ConfigError
from fedfit.transport.app import create_app
from fedfit.transport.client import DeviceClient, Refused
from fedfit.transport.device import Device, DeviceOptions, local_data, measure_profile
from fedfit.transport.identity import Identity, load_identity, save_identity
from fedfit.transport.messages import StateReport
from fedfit.transport.server import ServerRun

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def parse_bytes(text: str) -> int:
    """``300MB``, ``2GiB``, ``512000`` -> bytes.

    Raises:
        ConfigError: not a size.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    if m is None or m.group(2).upper() not in _UNITS:
        raise ConfigError(f"--memory-limit: not a size: {text!r} (e.g. 300MB, 2GiB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def parse_shard(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if m is None:
        raise ConfigError(f"--shard: expected I/N, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def _secret(args: argparse.Namespace) -> str:
    secret = args.secret or os.environ.get("FEDFIT_SECRET", "")
    if not secret:
        raise ConfigError("--secret: give the fleet secret (or set FEDFIT_SECRET)")
    return str(secret)


def cmd_server(args: argparse.Namespace, console: Any) -> int:
    config = load_config(args.config)
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ConfigError("--tls-cert and --tls-key go together")
    run = ServerRun(config, Path(args.state), _secret(args))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        loop = threading.Thread(target=_run_then_stop, args=(run, server, config.deploy.linger_s), daemon=True)
        loop.start()
        yield
        run.stop.set()

    app = create_app(run.coord, lifespan, config.deploy.poll_wait_s)
    # Keep idle connections longer than a device's poll cadence, so clients do not reuse a
    # connection the server is closing.
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, log_level="warning",
                                           ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key,
                                           timeout_keep_alive=120))
    scheme = "https" if args.tls_cert else "http"
    console.print(f"fedfit server on {scheme}://{args.host}:{args.port} (state in {args.state}), "
                  f"waiting for {config.num_devices} devices")
    server.run()
    if run.error is not None:
        print(f"fedfit: error: {run.error}", file=sys.stderr)
        return 1
    console.print(f"run finished: {args.state}/run")
    return 0


def _run_then_stop(run: ServerRun, server: uvicorn.Server, linger_s: float) -> None:
    run.run()
    run.stop.wait(linger_s)  # devices polling now hear "finished"
    server.should_exit = True


def cmd_device(args: argparse.Namespace, console: Any) -> int:
    torch.set_num_threads(1)
    options = DeviceOptions(memory_limit_bytes=parse_bytes(args.memory_limit) if args.memory_limit else None,
                            shard=parse_shard(args.shard) if args.shard else None,
                            data=Path(args.data) if args.data else None, tier=args.tier)
    verify: str | bool = args.ca if args.ca else True
    with httpx.Client(base_url=args.server, verify=verify, timeout=120.0) as http:  # > the longest long-poll (60 s)
        client = DeviceClient(http, _secret(args))
        try:
            return _device(client, options, args.server, Path(args.state) if args.state else None)
        except Refused as err:
            print(f"fedfit: error: server refused: {err}", file=sys.stderr)
            return 2
        except httpx.HTTPError as err:
            print(f"fedfit: error: server unreachable: {err}", file=sys.stderr)
            return 1


def _device(client: DeviceClient, options: DeviceOptions, server: str = "", state: Path | None = None) -> int:
    body = client.config()
    device = Device(client, options)
    if client.config_transfer is not None:  # a measured bandwidth before the first report (selection's
        device.monitor.record_transfer(*client.config_transfer)  # time predictions need one)
    config, spec = device.read_config(body)
    x, y = local_data(config, spec, options)
    profile = measure_profile(options, len(x))
    how = "rejoined" if _rejoin(client, device, server, state) else "enrolled"
    if how == "enrolled":
        client.enrol(profile, options.shard[0] if options.shard else None)  # shard I is slot I, as in simulation
        if state is not None:
            save_identity(state, Identity(server, client.device_id or 0, client.token or ""))
    device_id = client.device_id
    device.setup(profile)
    print(f"device {device_id}: {how} with {len(x)} examples, memory limit {options.memory_limit_bytes}", flush=True)
    accepted = device.run(x, y)
    print(f"device {device_id}: run finished, {accepted} updates accepted", flush=True)
    return 0


def _rejoin(client: DeviceClient, device: Device, server: str, state: Path | None) -> bool:
    """Take up the identity saved in ``state`` when it is for ``server`` and the server still
    knows its token (a server started on fresh state does not: the device enrols anew)."""
    identity = load_identity(state) if state is not None else None
    if identity is None or identity.server != server:
        return False
    client.token, client.device_id = identity.token, identity.device_id
    try:
        client.heartbeat(StateReport.of(device.monitor.snapshot()))
    except Refused as err:
        if err.code != "unknown_token":
            raise
        client.token = client.device_id = None
        return False
    return True
