"""Every device's lazy trace, made on demand, and many devices' states asked together.

:class:`LazyTraces` is a fleet's ``traces`` argument for lazy traces: it makes a device's
:class:`~fedfit.devices.lazy_trace.LazyTrace` when asked (keeping the last few thousand), answers
the user's CSV traces for the devices that have one, and computes many devices' states at once
(:mod:`fedfit.devices.lazy_batch`, per trace shape), each equal to the device's own
``state_at``.

>>> from fedfit.devices.catalogue import tier
>>> from fedfit.devices.trace_params import TraceParams
>>> traces = LazyTraces([tier("smartwatch")] * 3, TraceParams(), seed=1)
>>> traces.states_at([0, 2], 3600.0) == [traces[0].state_at(3600.0), traces[2].state_at(3600.0)]
True
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from operator import attrgetter
from typing import overload

import numpy as np

from fedfit.devices import lazy_batch
from fedfit.devices.lazy_trace import LazyTrace
from fedfit.devices.state_columns import ColumnStates
from fedfit.devices.trace_params import TraceParams
from fedfit.devices.traces import DeviceTrace
from fedfit.types import DeviceProfile, DeviceState

#: Devices of one trace shape from which :meth:`LazyTraces.states_at` computes them together (a
#: batch costs a fixed 1.5-2.5 ms of numpy passes; measured break-even ~20 fresh devices).
BATCH_FROM = 24
#: The same for :meth:`LazyTraces.online_many` (one by one, ``online_at`` skips half the draws;
#: break-even ~40).
ONLINE_BATCH_FROM = 48


class LazyTraces(Sequence["LazyTrace | DeviceTrace"]):
    """Every device's :class:`LazyTrace`, made on demand (a fleet's ``traces`` argument).

    Holds the profiles and keeps the last ``cache_size`` traces asked for (their per-device
    draws), so a device read many times in a round draws its constants once.

    Args:
        profiles: each device's profile, indexed by device id.
        params: generator parameters.
        seed: experiment seed.
        cache_size: traces kept (least recently used dropped first).
        overrides: traces to use instead for some devices (the user's CSV traces).
    """

    def __init__(self, profiles: Sequence[DeviceProfile], params: TraceParams, seed: int,
                 cache_size: int = 16384, overrides: Mapping[int, DeviceTrace] | None = None) -> None:
        self._profiles, self._params, self._seed = profiles, params, seed
        self._overrides = dict(overrides or {})
        self._cache: OrderedDict[int, LazyTrace] = OrderedDict()
        self._cache_size = cache_size
        self._shapes: dict[int, Hashable] = {}  # trace shape by id of profile (profiles are held above)
        # Whether each device of the last batch asked at one time was online, and that time on the
        # grid: a look within the same step is that answer (a pure function of device and step).
        self._held: tuple[float, dict[int, bool]] = (-1.0, {})

    def __len__(self) -> int:
        return len(self._profiles)

    @overload
    def __getitem__(self, index: int) -> LazyTrace | DeviceTrace: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[LazyTrace | DeviceTrace]: ...

    def __getitem__(self, index: int | slice) -> LazyTrace | DeviceTrace | Sequence[LazyTrace | DeviceTrace]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        device = index + len(self) if index < 0 else index
        if not 0 <= device < len(self):
            raise IndexError(f"device {index} out of range (fleet has {len(self)})")
        if device in self._overrides:
            return self._overrides[device]
        trace = self._cache.get(device)
        if trace is None:
            trace = LazyTrace(self._profiles[device], self._params, self._seed, device)
            self._cache[device] = trace
            if len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(device)
        return trace

    def _groups(self, devices: Sequence[int], positions: Iterable[int]) -> tuple[list[int], dict[Hashable, list[int]]]:
        """Of ``positions`` in ``devices``: those with a CSV trace, and the others by trace shape
        (in the order given)."""
        at = list(positions)
        overridden: list[int] = []
        if self._overrides:
            overridden = [i for i in at if devices[i] in self._overrides]
            at = [i for i in at if devices[i] not in self._overrides]
        kinds = list(map(id, map(self._profiles.__getitem__, map(devices.__getitem__, at))))
        shapes = self._shapes
        for profile_id in set(kinds).difference(shapes):
            profile = next(self._profiles[devices[i]] for i, k in zip(at, kinds) if k == profile_id)
            shapes[profile_id] = lazy_batch.shape_of(profile, self._params)
        if len({shapes[k] for k in set(kinds)}) <= 1:  # the usual case: one shape
            return overridden, {shapes[kinds[0]]: at} if at else {}
        groups: dict[Hashable, list[int]] = {}
        for i, k in zip(at, kinds):
            groups.setdefault(shapes[k], []).append(i)
        return overridden, groups

    def states_at(self, devices: Sequence[int], t_s: float | Sequence[float]) -> list[DeviceState]:
        """``self[d].state_at(t)`` for each of ``devices`` at ``t_s`` (one time, or one per
        device), lazy ones computed together (:func:`fedfit.devices.lazy_batch.states_at`, per
        trace shape), equal to one by one."""
        times = [float(t_s)] * len(devices) if isinstance(t_s, (int, float)) else list(t_s)
        found: list[DeviceState | None] = [None] * len(devices)
        whole: ColumnStates | None = None  # every device computed in one batch, in order
        overridden, groups = self._groups(devices, range(len(devices)))
        for i in overridden:  # the user's CSV trace
            found[i] = self._overrides[devices[i]].state_at(times[i])
        for rows in groups.values():
            if len(rows) < BATCH_FROM:  # a few numpy passes cost more than a few devices one by one
                for i in rows:
                    found[i] = self[devices[i]].state_at(times[i])
                continue
            ids = np.array([devices[i] for i in rows], dtype=np.int64)
            at = float(t_s) if isinstance(t_s, (int, float)) else np.array([times[i] for i in rows], dtype=np.float64)
            profiles = list(map(self._profiles.__getitem__, ids.tolist()))
            batch = lazy_batch.states_at(profiles, self._params, self._seed, ids, at)
            if len(rows) == len(devices) and isinstance(batch, ColumnStates):
                whole = batch
                break
            for i, state in zip(rows, batch):
                found[i] = state
        states: list[DeviceState] = [s for s in found if s is not None] if whole is None else whole
        if isinstance(t_s, (int, float)) and math.isfinite(t_s) and t_s >= 0:
            overrides = self._overrides
            online = map(attrgetter("online"), states) if whole is None else whole.columns.online.tolist()
            held = dict(zip(devices, online))
            for d in overrides.keys() & held.keys() if overrides else ():
                del held[d]
            self._held = (self._on_grid(t_s), held)
        return states

    def _on_grid(self, t_s: float) -> float:
        return math.floor(t_s / self._params.step_s) * self._params.step_s

    def online_many(self, devices: Sequence[int], times: Sequence[float]) -> list[bool]:
        """``self[d].state_at(t).online`` for each device and its time, lazy ones computed together
        without the draws ``online`` does not need (:func:`fedfit.devices.lazy_batch.online_at`)."""
        found = [False] * len(devices)
        held_t, held = self._held
        asked = []
        for i, (device, t) in enumerate(zip(devices, times)):
            if device in held and self._on_grid(t) == held_t:
                found[i] = held[device]
            else:
                asked.append(i)
        overridden, groups = self._groups(devices, asked)
        for i in overridden:  # the user's CSV trace
            found[i] = self._overrides[devices[i]].state_at(times[i]).online
        for rows in groups.values():
            if len(rows) < ONLINE_BATCH_FROM:
                for i in rows:
                    trace = self[devices[i]]
                    assert isinstance(trace, LazyTrace)  # overrides were answered above
                    found[i] = trace.online_at(times[i])
                continue
            ids = [devices[i] for i in rows]
            at = np.array([times[i] for i in rows], dtype=np.float64)
            profiles = [self._profiles[d] for d in ids]
            ups = lazy_batch.online_at(profiles, self._params, self._seed, np.array(ids, dtype=np.int64), at)
            for i, up in zip(rows, ups.tolist()):
                found[i] = up
        return found
