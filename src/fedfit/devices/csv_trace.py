"""A user's CSV trace laid over a generated one.

The file has a header row and a ``t_s`` column (virtual seconds, >= 0, strictly increasing)
plus any of :data:`COLUMNS`. Each row's values hold from its ``t_s`` until the next row's,
and the last row's until the end of the trace; before the first row, and in every column the
file leaves out, the base trace's values stand. Values are sampled at the base trace's grid
points (a row shorter than one step may be skipped). If the last row lies past the base
horizon, the trace is lengthened to cover it (the base repeats cyclically underneath).

Formats: ``charging`` / ``online``: ``true``/``false``, ``1``/``0`` or ``yes``/``no``;
``link``: ``wifi``, ``cellular`` or ``offline``. ``link`` and ``bandwidth_bps`` go together,
and a row's bandwidth is 0 exactly when its link is offline. After the overlay a device on no
link, or with an empty battery, is not online.

Errors are one line naming the file, the row (as a spreadsheet counts: the header is row 1)
and the column: ``trace foo.csv row 3: battery_fraction 1.7 not in [0, 1]``.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from fedfit.bounded import MAX_TRACE_BYTES
from fedfit.devices.csv_overlay import overlay
from fedfit.devices.traces import TRACE_ARRAYS, DeviceTrace
from fedfit.errors import ConfigError
from fedfit.types import DeviceProfile, Link

#: Columns a CSV trace may override, besides the required ``t_s``: every per-step trace field.
COLUMNS = TRACE_ARRAYS
_BATTERY_COLUMNS = ("battery_fraction", "charging")
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no")


class _CellError(ValueError):
    """A bad cell; the message starts with the column name."""


def load_csv_traces(paths: Mapping[int, str | os.PathLike[str]], bases: Mapping[int, DeviceTrace],
                    max_bytes: int = MAX_TRACE_BYTES) -> dict[int, DeviceTrace]:
    """:func:`load_csv_trace` of ``paths[d]`` over ``bases[d]`` for every device ``d`` of ``paths``,
    each file read once and its rows parsed once per profile (a fleet that lays one file over a
    thousand devices parses it once); the same traces, and the same first error, as one by one."""
    texts: dict[str, str] = {}
    rows: dict[tuple[str, DeviceProfile, bool], tuple[npt.NDArray[np.float64], dict[str, list[object]]]] = {}
    traces = {}
    for device, path in paths.items():
        source, base = os.fspath(path), bases[device]
        if source not in texts:
            texts[source] = _read_text(path, max_bytes)
        key = (source, base.profile, base.battery_fraction is None)
        if key not in rows:
            rows[key] = _parsed_rows(texts[source], base, source)
        traces[device] = overlay(base, *rows[key])
    return traces


def load_csv_trace(path: str | os.PathLike[str], base: DeviceTrace, max_bytes: int = MAX_TRACE_BYTES) -> DeviceTrace:
    """Read a CSV trace and lay it over ``base``.

    Args:
        path: the CSV file.
        base: the generated trace to override (its profile, step and thresholds are kept).
        max_bytes: refuse a larger file (``fleet.max_trace_bytes``) without reading it all.

    Returns:
        A new trace; ``base`` is unchanged.

    Raises:
        ConfigError: the file is missing, unreadable or malformed; the message names the file
            and, for a bad value, the row and column.
    """
    return parse_csv_trace(_read_text(path, max_bytes), base, source=os.fspath(path))


def _read_text(path: str | os.PathLike[str], max_bytes: int) -> str:
    """The file's text (UTF-8, at most ``max_bytes``); a one-line :class:`ConfigError` if not."""
    try:
        with Path(path).open("rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise ConfigError(f"trace {os.fspath(path)}: larger than the {max_bytes}-byte limit "
                              "(fleet.max_trace_bytes)")
        text = data.decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(f"trace {os.fspath(path)}: file not found") from None
    except UnicodeDecodeError:
        raise ConfigError(f"trace {os.fspath(path)}: not UTF-8 text") from None
    except OSError as err:
        raise ConfigError(f"trace {os.fspath(path)}: cannot read ({err.strerror})") from None
    return text


def columns_from_start(path: str | os.PathLike[str], max_bytes: int = MAX_TRACE_BYTES) -> frozenset[str]:
    """The columns a CSV trace sets at every step: its columns when its first row is at t = 0,
    else none. A file that cannot be read this far gives none (:func:`load_csv_trace` then
    reports what is wrong with it). Lets the generator skip what the file overwrites."""
    try:
        with Path(path).open("rb") as f:
            head = f.read(min(max_bytes, 4096)).decode("utf-8", errors="replace")
    except OSError:
        return frozenset()
    rows = csv.reader(io.StringIO(head))
    header, first = next(rows, None), next(rows, None)
    if not header or not first or len(first) != len(header):
        return frozenset()
    cells = dict(zip((name.strip() for name in header), (cell.strip() for cell in first), strict=True))
    try:
        at_zero = float(cells.get("t_s", "")) == 0.0
    except ValueError:
        return frozenset()
    return frozenset(name for name in cells if name in COLUMNS) if at_zero else frozenset()


def parse_csv_trace(text: str, base: DeviceTrace, *, source: str = "<csv>") -> DeviceTrace:
    """Lay CSV ``text`` over ``base``; ``source`` names it in errors (as :func:`load_csv_trace`)."""
    return overlay(base, *_parsed_rows(text, base, source))


def _parsed_rows(text: str, base: DeviceTrace,
                 source: str) -> tuple[npt.NDArray[np.float64], dict[str, list[object]]]:
    """The rows' times and each column's values, checked against ``base``'s profile."""
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        raise ConfigError(f"trace {source}: empty file (expected a header with t_s)")
    columns = _check_header(source, [name.strip() for name in header], base)
    times: list[float] = []
    values: dict[str, list[object]] = {name: [] for name in columns if name != "t_s"}
    for row in reader:
        if not row:
            continue
        where = f"trace {source} row {reader.line_num}"
        try:
            _parse_row(row, columns, base.profile, times, values)
        except _CellError as err:
            raise ConfigError(f"{where}: {err}") from None
    if not times:
        raise ConfigError(f"trace {source}: no data rows")
    return np.asarray(times), values


def _check_header(source: str, columns: list[str], base: DeviceTrace) -> list[str]:
    for name in columns:
        if name != "t_s" and name not in COLUMNS:
            raise ConfigError(
                f"trace {source} row 1: unknown column {name!r} (known: t_s, {', '.join(COLUMNS)})"
            )
        if columns.count(name) > 1:
            raise ConfigError(f"trace {source} row 1: column {name} appears twice")
    if "t_s" not in columns:
        raise ConfigError(f"trace {source} row 1: missing the required column t_s")
    if ("link" in columns) != ("bandwidth_bps" in columns):
        raise ConfigError(f"trace {source} row 1: columns link and bandwidth_bps go together")
    for name in _BATTERY_COLUMNS:
        if name in columns and base.battery_fraction is None:
            raise ConfigError(
                f"trace {source} row 1: column {name} given, but tier {base.profile.tier} "
                "is mains-powered"
            )
    return columns


def _parse_row(
    row: Sequence[str],
    columns: Sequence[str],
    profile: DeviceProfile,
    times: list[float],
    values: dict[str, list[object]],
) -> None:
    if len(row) != len(columns):
        raise _CellError(f"{len(row)} fields, the header has {len(columns)}")
    cells = {name: cell.strip() for name, cell in zip(columns, row, strict=True)}
    t_s = _number("t_s", cells["t_s"], low=0.0)
    if times and t_s <= times[-1]:
        raise _CellError(f"t_s {cells['t_s']} is not after the previous row's {times[-1]:g}")
    parsed = {name: _PARSERS[name](name, cells[name], profile) for name in values}
    if "link" in parsed and (parsed["link"] == Link.OFFLINE) != (parsed["bandwidth_bps"] == 0):
        rule = "must be 0" if parsed["link"] == Link.OFFLINE else "must be > 0"
        raise _CellError(
            f"bandwidth_bps {cells['bandwidth_bps']} with link {cells['link']} ({rule})"
        )
    times.append(t_s)
    for name, value in parsed.items():
        values[name].append(value)


def _number(name: str, raw: str, *, low: float = -math.inf, high: float = math.inf) -> float:
    if not raw:
        raise _CellError(f"{name} is empty")
    try:
        value = float(raw)
    except ValueError:
        raise _CellError(f"{name} {raw!r} is not a number") from None
    if not math.isfinite(value):
        raise _CellError(f"{name} {raw} is not finite")
    if not low <= value <= high:
        raise _CellError(f"{name} {raw} not in [{low:g}, {high:g}]")
    return value


def _fraction(name: str, raw: str, profile: DeviceProfile) -> float:
    return _number(name, raw, low=0.0, high=1.0)


def _real(name: str, raw: str, profile: DeviceProfile) -> float:
    return _number(name, raw)


def _bandwidth(name: str, raw: str, profile: DeviceProfile) -> float:
    return _number(name, raw, low=0.0)


def _memory(name: str, raw: str, profile: DeviceProfile) -> int:
    value = _number(name, raw, low=0.0)
    if value != math.floor(value):
        raise _CellError(f"{name} {raw} is not a whole number of bytes")
    if value > profile.training_memory_bytes:
        raise _CellError(
            f"{name} {raw} exceeds the tier's training_memory_bytes "
            f"({profile.training_memory_bytes})"
        )
    return int(value)


def _flag(name: str, raw: str, profile: DeviceProfile) -> bool:
    token = raw.lower()
    if token in _TRUE or token in _FALSE:
        return token in _TRUE
    raise _CellError(f"{name} {raw!r} is not a boolean (use true/false or 1/0)")


def _link(name: str, raw: str, profile: DeviceProfile) -> Link:
    try:
        link = Link(raw.lower())
    except ValueError:
        raise _CellError(f"{name} {raw!r} is not wifi, cellular or offline") from None
    if link is not Link.OFFLINE and link not in profile.radios:
        radios = ", ".join(r.value for r in profile.radios)
        raise _CellError(f"{name} {raw} is not among the tier's radios ({radios})")
    return link


_PARSERS: dict[str, Callable[[str, str, DeviceProfile], object]] = {
    "free_memory_bytes": _memory,
    "battery_fraction": _fraction,
    "charging": _flag,
    "temperature_c": _real,
    "link": _link,
    "bandwidth_bps": _bandwidth,
    "online": _flag,
    "cpu_utilisation": _fraction,
}
