"""The ``server`` and ``device`` subcommands' flags; their code (:mod:`fedfit.transport.commands`,
with FastAPI, uvicorn and httpx) is imported only when one of them runs, so the CLI's other
commands start without it."""

from __future__ import annotations

import argparse
from typing import Any


def _cmd_server(args: argparse.Namespace, console: Any) -> int:
    from fedfit.transport.commands import cmd_server

    return cmd_server(args, console)


def _cmd_device(args: argparse.Namespace, console: Any) -> int:
    from fedfit.transport.commands import cmd_device

    return cmd_device(args, console)


def add_parsers(sub: Any) -> None:
    """``server`` and ``device`` subcommands."""
    s = sub.add_parser("server", help="serve a real federation over HTTP (devices run `fedfit device`)")
    s.add_argument("config", help="YAML config")
    s.add_argument("--state", required=True, help="state directory (SQLite, model versions, run directory)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8080)
    s.add_argument("--secret", help="fleet secret devices enrol with (default: $FEDFIT_SECRET)")
    s.add_argument("--tls-cert", help="TLS certificate (PEM); with --tls-key serves HTTPS")
    s.add_argument("--tls-key", help="TLS private key (PEM)")
    s.set_defaults(func=_cmd_server)
    d = sub.add_parser("device", help="join a fedfit server as a training device")
    d.add_argument("--server", required=True, help="server URL, e.g. http://127.0.0.1:8080")
    d.add_argument("--secret", help="fleet secret (default: $FEDFIT_SECRET)")
    d.add_argument("--shard", help="train on shard I/N of the config's data set")
    d.add_argument("--data", help="local data: .npz with x (n, *input_shape) float and y (n,) int labels")
    d.add_argument("--memory-limit", help="memory offered to training, e.g. 300MB (minus this process's RSS)")
    d.add_argument("--tier", help="catalogue tier this device stands in for (default: its slot's)")
    d.add_argument("--ca", help="CA certificate (PEM) to verify the server's TLS certificate")
    d.add_argument("--state", help="file keeping this device's slot and token (mode 0600), so the device "
                                   "rejoins as itself when started again (default: enrol anew each start)")
    d.set_defaults(func=_cmd_device)
