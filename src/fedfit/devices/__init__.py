"""Devices: the tier catalogue, dynamic traces, resource monitors and the registry.

Static capabilities are :class:`~fedfit.types.DeviceProfile` values (:data:`REALISTIC`, the
default catalogue; :data:`TIERS`, the ``scaled`` one for the small zoo models; :func:`catalogue`
by name; or user tiers from :func:`profile_from_mapping`); dynamic resources over virtual time come from a
:class:`DeviceTrace` (seeded by :func:`generate_trace`, optionally overlaid by
:func:`load_csv_trace`) read through a :class:`Monitor`; the server keeps what devices report
in a :class:`Registry`.
"""

from fedfit.devices.catalogue import TIERS, tier
from fedfit.devices.user_tiers import profile_from_mapping
from fedfit.devices.csv_trace import load_csv_trace, parse_csv_trace
from fedfit.devices.monitor import Monitor, PsutilMonitor, TraceMonitor
from fedfit.devices.realistic import CATALOGUES, REALISTIC, catalogue
from fedfit.devices.registry import DeviceHistory, Registry, UpdateRecord
from fedfit.devices.trace_params import TierBehaviour, TraceParams
from fedfit.devices.consumption import with_consumption
from fedfit.devices.traces import DeviceTrace, generate_trace, generate_traces, thermal_of

__all__ = [
    "CATALOGUES",
    "REALISTIC",
    "TIERS",
    "DeviceHistory",
    "DeviceTrace",
    "Monitor",
    "PsutilMonitor",
    "Registry",
    "TierBehaviour",
    "TraceMonitor",
    "TraceParams",
    "UpdateRecord",
    "catalogue",
    "generate_trace",
    "generate_traces",
    "load_csv_trace",
    "parse_csv_trace",
    "profile_from_mapping",
    "thermal_of",
    "tier",
    "with_consumption",
]
