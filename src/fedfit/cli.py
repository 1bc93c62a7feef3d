"""The ``fedfit`` command line: run | resume | compare | devices | export | evaluate | prune.

Flags and files are read here and nowhere below. Configuration, data, checkpoint and file-system
errors exit with status 2 and one line naming what is wrong; Ctrl-C exits with 130 and one line.
``FEDFIT_MAX_CONFIG_BYTES`` raises the size cap on config files (see :mod:`fedfit.bounded`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from fedfit.bounded import MAX_CONFIG_BYTES, load_yaml, read_text
from fedfit.config import ExperimentConfig, default_scenario, load_config, with_overrides
from fedfit.devices.realistic import CATALOGUE_NOTES, DEFAULT_CATALOGUE
from fedfit.errors import CheckpointError, ConfigError, DataError, PlanError
from fedfit.runner import OnRound, OnStart, RunResult, resume, run
from fedfit.resumption import resumable
from fedfit.simulation import checkpoint
from fedfit.orchestration.sync import RoundOutcome
from fedfit.report import atomic, plot_accuracy
from fedfit.report.lock import make_run_dir
from fedfit.autoconfig import names_no_strategy
from fedfit.strategies import TUNED, apply_strategy
from fedfit.transport.cli_parsers import add_parsers as add_deploy_parsers
from fedfit.cli_run_dir import add_run_dir_commands
from fedfit.cli_devices import cmd_devices
from fedfit.cli_tuned import tuned_config as _tuned

EXIT_USAGE = 2
EXIT_STOPPED = 3  # the run stopped without progress (orchestration.stall_timeout_s / max_wall_s)
EXIT_INTERRUPTED = 130
MAX_CONFIG_ENV = "FEDFIT_MAX_CONFIG_BYTES"


def _parse_set(items: Sequence[str]) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set: expected KEY=VALUE, got '{item}'")
        try:
            overrides[key.strip()] = load_yaml(value, f"--set {key.strip()}")
        except ConfigError as err:
            raise ConfigError(f"--set {key.strip()}: not a YAML value: {value[:40]!r}") from err
    return overrides


def _max_config_bytes() -> int:
    raw = os.environ.get(MAX_CONFIG_ENV, "")
    if not raw:
        return MAX_CONFIG_BYTES
    if not raw.isdigit() or int(raw) < 1:
        raise ConfigError(f"{MAX_CONFIG_ENV}: expected a positive number of bytes, got {raw[:20]!r}")
    return int(raw)


def _config(path: str | None, sets: Sequence[str]) -> ExperimentConfig:
    config = load_config(path, _max_config_bytes()) if path else default_scenario()
    return with_overrides(config, _parse_set(sets)) if sets else config


def _run_dir(config: ExperimentConfig, out: str | None) -> Path:
    if out:
        return Path(out)
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(config.output.dir) / f"{config.name.replace(':', '-')}-{stamp}"


def _run_with_progress(config: ExperimentConfig, run_dir: Path | None, console: Console,
                       force: bool = False) -> RunResult:
    return _with_progress(config, console,
                          lambda on_round, on_start: run(config, run_dir, on_round, force=force, on_start=on_start))


def _with_progress(config: ExperimentConfig, console: Console,
                   start: Callable[[OnRound | None, OnStart | None], RunResult], done: int = 0) -> RunResult:
    """``start(on_round, on_start)`` under a progress bar of the run's rounds (as resolved once
    built: an async ``auto`` run counts its versions), ``done`` of them already run."""
    if not config.output.progress:
        return start(None, None)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("{task.fields[status]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(config.name, total=config.orchestration.rounds, completed=done, status="")

        def on_round(outcome: RoundOutcome) -> None:
            r = outcome.report
            acc = f"acc {r.accuracy:.3f}" if r.accuracy is not None else ""
            progress.update(task, advance=1, status=f"{acc} t={r.virtual_time_s / 60:.1f} min")

        return start(on_round, lambda resolved: progress.update(task, total=resolved.orchestration.rounds))


def _print_result(result: RunResult, run_dir: Path, console: Console) -> int:
    """Print a run's headline figures; the exit status (:data:`EXIT_STOPPED` when it stopped early)."""
    s = result.summary
    console.print(f"final accuracy {_fmt_accuracy(s['final_accuracy'])}, virtual time "
                  f"{s['virtual_time_s'] / 60:.1f} min, time to {s['target_accuracy']:.2f}: "
                  f"{_fmt_time(s['time_to_target_s'])}")
    console.print(f"failures: {s['failures_by_cause'] or 'none'}")
    console.print(f"run directory: {run_dir}")
    if result.stopped is None:
        return 0
    print(f"fedfit: stopped: {result.stopped}", file=sys.stderr)
    return EXIT_STOPPED


def _fmt_accuracy(accuracy: float | None) -> str:
    return "n/a (no round finished)" if accuracy is None else f"{accuracy:.4f}"


def _interrupted(run_dir: Path) -> int:
    """Say how to continue a run stopped with Ctrl-C; the exit status of SIGINT."""
    saved = (run_dir / checkpoint.FILENAME).is_file()
    hint = f"continue with: fedfit resume {run_dir}" if saved else "no checkpoint was written yet"
    print(f"fedfit: interrupted; {hint}", file=sys.stderr)
    return EXIT_INTERRUPTED


def _auto_unless_named(config: ExperimentConfig, path: str | None, sets: Sequence[str]) -> ExperimentConfig:
    """``config`` with ``auto`` on when the file and ``--set`` name none of the keys auto decides."""
    raw = None if path is None else load_yaml(read_text(Path(path), MAX_CONFIG_BYTES, "config"), path)
    if path is None or not names_no_strategy(raw or {}, _parse_set(sets)):
        return config
    return with_overrides(config, {"auto.enabled": True})


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    config = _auto_unless_named(_config(args.config, args.set), args.config, args.set)
    run_dir = _run_dir(config, args.out)
    console.print(f"{config.name}: tier catalogue '{config.fleet.catalogue}' ({CATALOGUE_NOTES[config.fleet.catalogue]})")
    try:
        result = _run_with_progress(config, run_dir, console, args.force)
    except KeyboardInterrupt:
        return _interrupted(run_dir)
    return _print_result(result, run_dir, console)


def cmd_resume(args: argparse.Namespace, console: Console) -> int:
    run_dir = Path(args.run_dir)
    checked = resumable(run_dir, args.rounds)
    done, total = checked.saved.rounds_done, checked.total  # an async auto run counts versions
    if done < total:
        console.print(f"resuming {run_dir} after round {done} of {total}")
    else:
        console.print(f"finishing {run_dir}: all {total} rounds are checkpointed; writing the model and summary")
    try:
        result = _with_progress(checked.config, console, lambda on_round, on_start: resume(
            run_dir, args.rounds, on_round, on_start=on_start, checked=checked), done)
    except KeyboardInterrupt:
        return _interrupted(run_dir)
    return _print_result(result, run_dir, console)


def _fmt_time(seconds: float | None) -> str:
    return "not reached" if seconds is None else f"{seconds / 60:.1f} min"


def _compare_row(name: str, s: dict[str, Any]) -> list[str]:
    part = ", ".join(f"{t} {v:.0%}" for t, v in s["participation_by_tier"].items())
    fails = ", ".join(f"{c} {n}" for c, n in s["failures_by_cause"].items()) or "none"
    reached = _fmt_time(s["time_to_target_s"]) if s.get("stopped") is None else "stopped (no progress)"
    return [name, reached, _fmt_accuracy(s["final_accuracy"]), fails, part]


def cmd_compare(args: argparse.Namespace, console: Console) -> int:
    base = _config(args.config, args.set)
    sets = _parse_set(args.set)  # the user's --set wins over a strategy's own keys
    grids: dict[str, dict[str, Any]] = {}
    configs: dict[str, ExperimentConfig] = {}
    for name in args.strategy:
        if name == TUNED and name not in base.strategies:
            configs[name], grids[name] = _tuned(base, console, args.json)
        else:
            configs[name] = with_overrides(apply_strategy(base, name), sets)
    out = Path(args.out) if args.out else _run_dir(base.model_copy(update={"name": f"{base.name}-compare"}), None)
    results: dict[str, RunResult] = {}
    make_run_dir(out)
    for name, config in configs.items():
        quiet = config.model_copy(update={"output": config.output.model_copy(update={"progress": False})})
        results[name] = _run_with_progress(config if not args.json else quiet, out / name, console, args.force)
    atomic.write_with(out / "compare_accuracy.png", lambda p: plot_accuracy(
        {n: r.reports for n, r in results.items()}, p, base.evaluation.target_accuracy))
    table = {n: r.summary | grids.get(n, {}) for n, r in results.items()}
    atomic.write_text(out / "compare.json", json.dumps(table, indent=2) + "\n")
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    t = Table(title=f"{base.name}: target accuracy {base.evaluation.target_accuracy:.2f}")
    for col in ("strategy", "time to target", "final acc", "failures", "participation by tier"):
        t.add_column(col)
    for name, s in table.items():
        t.add_row(*_compare_row(name, s))
    console.print(t)
    console.print(f"plot: {out / 'compare_accuracy.png'}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The argument parser of ``fedfit``."""
    p = argparse.ArgumentParser(prog="fedfit", description="Federated learning fitted to every device.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one experiment (default: the photo-app phone fleet)")
    r.add_argument("config", nargs="?", help="YAML config (default: built-in photo_app scenario)")
    r.add_argument("--out", help="run directory (default: output.dir/NAME-TIMESTAMP)")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
    r.add_argument("--force", action="store_true", help="replace a run already in the --out directory")
    r.set_defaults(func=cmd_run)
    s = sub.add_parser("resume", help="continue an interrupted run from its checkpoint")
    s.add_argument("run_dir")
    s.add_argument("--rounds", type=int, help="total rounds to reach (more than the config's extends the run)")
    s.set_defaults(func=cmd_resume)
    c = sub.add_parser("compare", help="run several strategies on the same fleet and seed")
    c.add_argument("config")
    c.add_argument("--strategy", action="append", required=True, help="strategy name (repeat)")
    c.add_argument("--json", action="store_true", help="print the summaries as JSON")
    c.add_argument("--out", help="directory for the runs and the overlaid plot")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a config key")
    c.add_argument("--force", action="store_true", help="replace runs already in the --out directory")
    c.set_defaults(func=cmd_compare)
    d = sub.add_parser("devices", help="print the tier catalogue")
    d.add_argument("--json", action="store_true")
    d.add_argument("--catalogue", choices=sorted(CATALOGUE_NOTES), default=DEFAULT_CATALOGUE,
                   help="realistic (default): what a background job gets on the device; scaled: budgets "
                        "of a few MB for the small zoo models")
    d.set_defaults(func=cmd_devices)
    add_run_dir_commands(sub)
    add_deploy_parsers(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fedfit`` script."""
    args = parser().parse_args(argv)
    console = Console(stderr=False)
    try:
        return int(args.func(args, console))
    except (ConfigError, DataError, PlanError, CheckpointError) as err:
        print(f"fedfit: error: {_one_line(str(err))}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as err:  # a disk full or a file that vanished mid-way: name it, no traceback
        where = f"{err.filename}: " if err.filename else ""
        print(f"fedfit: error: {where}{err.strerror or err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("fedfit: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _one_line(message: str) -> str:
    return " ".join(message.split())[:500]


if __name__ == "__main__":
    sys.exit(main())
