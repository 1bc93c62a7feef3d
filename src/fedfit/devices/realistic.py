"""The ``realistic`` tier catalogue, and the catalogues by name (``fleet.catalogue``).

Two catalogues hold the same tiers with the same devices behind them:

* ``scaled`` (:data:`fedfit.devices.catalogue.TIERS`): training budgets of a few MB, calibrated so
  that the tiny zoo CNN on 28×28 images trains seed 000's batches 32 / 16 / 8 on the 8 / 4 / 2 GB
  phones. Fast to simulate on a laptop, but an "8 GB phone" grants training 9 MiB: the budgets
  are scaled down with the model, not what such a phone gives.
* ``realistic`` (:data:`REALISTIC`): what a *background* training job gets on the named device,
  calibrated with a realistic on-device model: MobileNetV2 at width 0.5 on ``3×96×96`` images
  (``model: {name: mobilenetv2, width: 0.5, norm: batch}``; 697 k parameters, 7.3 MB of
  training memory per sample under fedfit's memory model, 95 MFLOP per training sample). Its
  8 / 4 / 2 GB phones afford batches 32 / 16 / 8 of that model at the traces' typical free share
  (78% of the budget, see ``tests/devices/test_realistic.py``).

Sources of the realistic budgets, and where they are estimates:

* No mobile OS publishes a memory budget for background work; what exists are ceilings and
  kill thresholds. Android caps an app's *Java* heap (AOSP
  ``frameworks/native/build/phone-xhdpi-2048-dalvik-heap.mk`` and its 4096 / 6144 / 8192
  siblings: ``dalvik.vm.heapgrowthlimit`` 192-256 MB, ``heapsize`` (``largeHeap``) 512 MB), but a
  training runtime (TFLite, ExecuTorch, ONNX Runtime) allocates natively, outside that cap; the
  limit it meets is the low-memory killer (``lmkd``), which kills background and cached
  processes first and, among them, the largest (``oom_score_adj``, PSI-based kills since
  Android 10). A background job that wants to survive therefore stays a small share of RAM.
* iOS: ``jetsam`` ends apps over a per-device limit; measured foreground limits are ~1.4 GB on
  2 GB iPhones and ~2 GB on 3 GB ones (community measurements, not published by Apple), and a
  background task (``BGProcessingTask``) is the first jetsam victim under pressure, with a
  lower, unpublished limit.
* So the phone and tablet budgets are an **estimate**: about 3.7% of RAM (300 MiB of 8 GB,
  152 MiB of 4 GB, 80 MiB of 2 GB, 224 MiB of 6 GB): below the Java-heap ceilings above, in
  the range where a background process is not the largest on the device. The exact figures
  are picked inside that range so the calibration model lands on 32 / 16 / 8.
* Watch: watchOS and Wear OS run background work in a few tens of MB (developers report
  watch-extension limits of a few tens of MB; Wear OS 1-1.5 GB watches use Android's low-RAM
  configuration, ``ro.config.low_ram``): 48 MiB, an estimate. The calibration model fits
  micro-batch 4.
* Vehicle: the Jetson Orin NX 16 GB shares its memory between CPU and GPU and the driving /
  infotainment stack holds most of it; 2 GiB for a background training job is an estimate
  (automotive head units and ADAS computers have 8-32 GB).
* Sensor MCU: its real 384 KB of 512 KB SRAM, as in ``scaled``.

Compute and links are the same in both catalogues, because they are already taken from the
reference devices (see :mod:`fedfit.devices.catalogue`: CPU fp32 peaks from the cores' clock and
NEON width, Jetson Orin NX 1.88 TFLOP/s fp32 from NVIDIA's data sheet) times a training
runtime's share, which is an **estimate** not measured here (a tenth on phones, for small
kernels, unfused ops, big.LITTLE scheduling and thermal headroom kept for the user). With it a
flagship trains MobileNetV2-0.5 at 96×96 at ~170 samples/s (batch 32), an older phone at ~14
(batch 8). Bandwidth
comes from the traces (:class:`fedfit.devices.TraceParams`): Wi-Fi 20-100 Mbit/s and cellular
1-20 Mbit/s uplink bracket the Ookla Speedtest Global Index median mobile upload (about
10 Mbit/s in 2024), LTE-M / NB-IoT 20-80 kbit/s the 3GPP Release 13 low-band categories' practical
uplink.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from types import MappingProxyType

from fedfit.devices.catalogue import GIB, MIB, TIERS
from fedfit.errors import ConfigError
from fedfit.types import DeviceProfile

#: Training budgets of the realistic catalogue, bytes (see the module docstring for sources).
REALISTIC_TRAINING_MEMORY_BYTES: Mapping[str, int] = MappingProxyType({
    "flagship_phone": 300 * MIB,
    "midrange_phone": 152 * MIB,
    "older_phone": 80 * MIB,
    "tablet": 224 * MIB,
    "smartwatch": 48 * MIB,
    "sensor_mcu": TIERS["sensor_mcu"].training_memory_bytes,
    "vehicle_computer": 2 * GIB,
})

#: The realistic catalogue: the scaled tiers with realistic training budgets.
REALISTIC: Mapping[str, DeviceProfile] = MappingProxyType({
    name: dataclasses.replace(profile, training_memory_bytes=REALISTIC_TRAINING_MEMORY_BYTES[name])
    for name, profile in TIERS.items()
})

#: Tier catalogues by name (``fleet.catalogue``).
CATALOGUES: Mapping[str, Mapping[str, DeviceProfile]] = MappingProxyType({"realistic": REALISTIC, "scaled": TIERS})
#: One line per catalogue for run headers and ``fedfit devices``.
CATALOGUE_NOTES: Mapping[str, str] = MappingProxyType({
    "realistic": "budgets a background job gets on the device, for on-device models such as mobilenetv2",
    "scaled": "budgets scaled down for the small zoo models: an 8 GB phone grants 9 MiB",
})
#: The catalogue a config that names none uses.
DEFAULT_CATALOGUE = "realistic"


def catalogue(name: str) -> Mapping[str, DeviceProfile]:
    """The built-in tiers of the catalogue ``name`` (``realistic`` or ``scaled``).

    Raises:
        ConfigError: an unknown catalogue; the message lists the known ones.

    >>> catalogue("realistic")["flagship_phone"].training_memory_bytes // 2**20
    300
    """
    if name not in CATALOGUES:
        raise ConfigError(f"fleet.catalogue: unknown catalogue {name!r} (known: {', '.join(CATALOGUES)})")
    return CATALOGUES[name]
