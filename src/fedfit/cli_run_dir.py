"""The ``fedfit`` commands on a finished run's directory: evaluate (accuracy per width), export (a
standalone sub-model) and prune (a width suggested from the channel statistics)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from fedfit.deployment import evaluate_run, export_run, prune_run


def human_bytes(n: int) -> str:
    for unit, size in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if n >= size:
            return f"{n / size:.3g} {unit}"
    return f"{n} B"


def cmd_evaluate(args: argparse.Namespace, console: Console) -> int:
    rows = evaluate_run(Path(args.run_dir))
    if args.json:
        print(json.dumps([{"width": r.width, "accuracy": r.accuracy, "loss": r.loss, "num_params": r.num_params}
                          for r in rows], indent=2))
        return 0
    t = Table(title=f"{args.run_dir}: the master model at each width")
    for col in ("width", "accuracy", "loss", "parameters", "parameter bytes"):
        t.add_column(col)
    for r in rows:
        t.add_row(f"{r.width:g}", f"{r.accuracy:.4f}", f"{r.loss:.4f}", f"{r.num_params:,}",
                  human_bytes(4 * r.num_params))
    console.print(t)
    return 0


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    out = Path(args.out) if args.out else Path(args.run_dir) / f"export-w{args.width:g}"
    folder = export_run(Path(args.run_dir), args.width, out)
    config = json.loads((folder / "config.json").read_text())
    console.print(f"exported width {args.width:g} ({config['num_params']:,} parameters) to {folder}")
    return 0


def cmd_prune(args: argparse.Namespace, console: Console) -> int:
    rows, width = prune_run(Path(args.run_dir), args.coverage)
    if args.json:
        print(json.dumps({"width": width, "groups": [
            {"group": r.group, "size": r.size, "keep": r.keep, "dead": r.dead, "ranking": list(r.ranking)}
            for r in rows]}, indent=2))
        return 0
    t = Table(title=f"units covering {args.coverage:.0%} of the accumulated update magnitude")
    for col in ("group", "units", "keep", "never updated", "least important"):
        t.add_column(col)
    for r in rows:
        t.add_row(r.group, str(r.size), str(r.keep), str(r.dead), ", ".join(map(str, r.ranking[-5:])))
    console.print(t)
    console.print(f"suggested width: {width:.3g} (fedfit export RUN_DIR --width {width:.3g})")
    return 0


def add_run_dir_commands(sub: Any) -> None:
    e = sub.add_parser("export", help="write a standalone sub-model of a finished run")
    e.add_argument("run_dir")
    e.add_argument("--width", type=float, required=True, help="width relative to the master, in (0, 1]")
    e.add_argument("--out", help="output folder (default: RUN_DIR/export-wWIDTH)")
    e.set_defaults(func=cmd_export)
    v = sub.add_parser("evaluate", help="accuracy and parameter count of a run's model per width")
    v.add_argument("run_dir")
    v.add_argument("--json", action="store_true")
    v.set_defaults(func=cmd_evaluate)
    p = sub.add_parser("prune", help="suggest a pruned width from a run's channel statistics")
    p.add_argument("run_dir")
    p.add_argument("--coverage", type=float, default=0.9, help="share of update magnitude to keep")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_prune)
