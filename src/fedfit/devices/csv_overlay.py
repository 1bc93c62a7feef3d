"""Parsed CSV trace columns laid over a base trace, on the base's time grid.

:mod:`fedfit.devices.csv_trace` reads and checks a user's file; :func:`overlay` turns its rows
(times and per-column values) into a :class:`~fedfit.devices.traces.DeviceTrace`: each row's
values hold from its time until the next row's, the base's values stand before the first row
and in every column the file leaves out, the trace is lengthened (the base repeating
cyclically) when the file runs past its horizon, and a device on no link or with an empty
battery is not online.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from fedfit.devices.generators import LINKS, OFFLINE
from fedfit.devices.traces import TRACE_ARRAYS, DeviceTrace


def overlay(
    base: DeviceTrace, times: npt.NDArray[np.float64], values: dict[str, list[object]]
) -> DeviceTrace:
    """``base`` with each column's values from its rows' times on, on ``base``'s grid."""
    step = base.params.step_s
    n = max(base.n_steps, int(times[-1] // step) + 1)
    row_of_step = np.searchsorted(times, np.arange(n) * step, side="right") - 1
    covered = row_of_step >= 0
    arrays: dict[str, npt.NDArray[Any] | None] = {}
    for name in TRACE_ARRAYS:
        array = getattr(base, name)
        # a copy (base stays unchanged), repeated cyclically when the file runs past its horizon
        arrays[name] = None if array is None else array.copy() if len(array) == n else np.resize(array, n)
    for name, column in values.items():
        target = arrays[name]
        if target is None:  # temperature on a trace without one: unknown (NaN) before row 2
            target = arrays[name] = np.full(n, np.nan)
        cells = [LINKS.index(v) for v in column] if name == "link" else column
        target[covered] = np.asarray(cells)[row_of_step[covered]]
    online, link, level = arrays["online"], arrays["link"], arrays["battery_fraction"]
    assert online is not None and link is not None
    online &= link != OFFLINE
    if level is not None:
        online &= level > 0
    return _rebuilt(base, arrays)


def _rebuilt(base: DeviceTrace, arrays: dict[str, npt.NDArray[Any] | None]) -> DeviceTrace:
    def required(name: str) -> npt.NDArray[Any]:
        array = arrays[name]
        assert array is not None, name
        return array

    return DeviceTrace(
        profile=base.profile,
        params=base.params,
        free_memory_bytes=required("free_memory_bytes"),
        battery_fraction=arrays["battery_fraction"],
        charging=arrays["charging"],
        temperature_c=arrays["temperature_c"],
        link=required("link"),
        bandwidth_bps=required("bandwidth_bps"),
        online=required("online"),
        cpu_utilisation=required("cpu_utilisation"),
    )
