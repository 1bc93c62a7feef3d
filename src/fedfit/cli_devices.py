"""The ``fedfit devices`` command: the tier catalogue as a table or JSON."""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console
from rich.table import Table

from fedfit.cli_run_dir import human_bytes
from fedfit.devices.realistic import CATALOGUE_NOTES, catalogue


def cmd_devices(args: argparse.Namespace, console: Console) -> int:
    rows = {name: _profile_row(p) for name, p in catalogue(args.catalogue).items()}
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    t = Table(title=f"fedfit device tiers: catalogue '{args.catalogue}' ({CATALOGUE_NOTES[args.catalogue]})")
    for col in ("tier", "RAM", "training memory", "GFLOP/s", "battery", "radios"):
        t.add_column(col)
    for name, r in rows.items():
        t.add_row(name, r["ram"], r["training_memory"], f"{r['gflops']:.1f}", r["battery"], r["radios"])
    console.print(t)
    return 0


def _profile_row(p: Any) -> dict[str, Any]:
    battery = "mains" if p.battery_capacity_j is None else f"{p.battery_capacity_j / 3600:.2f} Wh"
    return {"ram": human_bytes(p.total_memory_bytes), "training_memory": human_bytes(p.training_memory_bytes),
            "gflops": p.flops_per_s / 1e9, "battery": battery,
            "radios": ", ".join(r.value for r in p.radios)}
