"""The built-in tiers, ``scaled`` catalogue: static profiles of the devices in the seed scenarios.

Each tier is a :class:`~fedfit.types.DeviceProfile` with numbers taken from a named
reference device; the comment beside each number says where it comes from. The training
budgets here are *scaled down* with the small zoo models (an 8 GB phone grants 9 MiB, so that
the 4-layer CNN trains seed 000's batches); :mod:`fedfit.devices.realistic` holds the
``realistic`` catalogue (the default, ``fleet.catalogue``), the same devices with the budgets
a background job gets on them. Conventions:

* memory is binary (``8 GB`` = ``8 * 2**30`` bytes); ``training_memory_bytes`` is what the OS
  grants a *background* training job with no app pressing, far below total RAM;
* ``flops_per_s`` is sustained fp32 *training* throughput (forward + backward with a mobile
  training runtime), not the chip's marketing peak; ``utilisation`` scales it down at small
  micro-batches (``peak * b / (b + half_batch)``);
* battery energy is ``mAh * V / 1000 * 3600`` joules; ``None`` means mains-powered;
* powers are whole-device draw while training (``compute_power_w``) or transmitting
  (``radio_power_w``).

User tiers come from YAML through :func:`fedfit.devices.user_tiers.profile_from_mapping`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from fedfit.errors import ConfigError
from fedfit.types import DeviceProfile, Link, UtilisationCurve

GIB = 2**30
MIB = 2**20
KIB = 2**10
#: Joules in one watt-hour.
J_PER_WH = 3600.0

# Phone training budgets of the *scaled* catalogue, derived from seed 000's outcome: with the default vision model, an
# 8 GB phone trains batches of 32, a 4 GB one 16 and a 2 GB one 8 (the seed gives batches, not
# budgets, so we derive the budgets). The default CNN (cnn, width 1, plain SGD) measures, by
# fedfit.cost.measure (tensor allocator, bench/memory_model.py): fixed peak (weights + gradients
# + 12,468 B of fixed step bytes + 256 KiB workspace) 1,997,572 B and 165,780 B per sample
# (135,408 B of saved activations + 30,372 B of backward buffers beyond those autograd has freed
# at the peak). The generated free-memory traces leave >= 78% of the budget free 75% of the time
# (the 25th percentile of app pressure). So
#   budget = (1,997,572 + (B + 0.5) * 165,780) / 0.78   for B = 32, 16, 8,
# rounded to whole KiB. tests/cost/test_calibration.py re-derives the three batch sizes from the
# memory model, so a change to the model or the CNN that breaks the calibration fails there.
# (Before the allocator measurement: 235,760 B per sample, budgets 12078 / 7356 / 4994 KiB.)
FLAGSHIP_TRAINING_MEMORY_BYTES = 9247 * KIB
MIDRANGE_TRAINING_MEMORY_BYTES = 5926 * KIB
OLDER_TRAINING_MEMORY_BYTES = 4265 * KIB


def _wh(milliamp_hours: float, volts: float) -> float:
    """Battery energy in joules from a cell's rating."""
    return milliamp_hours * volts / 1000.0 * J_PER_WH


# Share of a phone-class CPU's fp32 peak that an on-device *training* runtime reaches on small
# convnets (small kernels, unfused ops, big.LITTLE scheduling, thermal headroom kept for the
# user): about a tenth. An assumption, not a measurement; override it per tier in YAML
# (``utilisation_peak``). It puts one local epoch of the default CNN at ~0.5 s on a flagship
# and ~5 s on an older phone, the order FedScale's device traces report for small models.
MOBILE_RUNTIME_SHARE = 0.1

_BUILTIN: dict[str, DeviceProfile] = {
    # Reference: Pixel 8 / Galaxy S23 class (Snapdragon 8 Gen 2: 1x X3 @3.2 GHz + 4 big +
    # 3 little cores; CPU fp32 NEON peak ~300 GFLOP/s, Adreno 740 GPU ~3.5 TFLOP/s but mobile
    # training runtimes reach a small share of it). Sustained training ~2e11 FLOP/s.
    "flagship_phone": DeviceProfile(
        tier="flagship_phone",
        total_memory_bytes=8 * GIB,  # 8 GB LPDDR5
        training_memory_bytes=FLAGSHIP_TRAINING_MEMORY_BYTES,
        flops_per_s=2e11,
        # Many wide units: needs ~8 samples to reach half of its ceiling.
        utilisation=UtilisationCurve(peak=MOBILE_RUNTIME_SHARE, half_batch=8.0),
        battery_capacity_j=_wh(4500, 3.87),  # 4500 mAh @ 3.87 V = 17.4 Wh
        compute_power_w=5.0,  # SoC + DRAM under sustained load, before throttling
        radio_power_w=1.2,  # Wi-Fi / LTE uplink at moderate signal
        latency_s=0.04,
        radios=(Link.WIFI, Link.CELLULAR),
        cpu_cores=8,
        has_npu=True,  # Hexagon NPU
    ),
    # Reference: Galaxy A-series / Snapdragon 7-class (2x A78 @2.4 GHz + 6x A55 @1.8 GHz:
    # ~160 GFLOP/s CPU fp32 peak); sustained training about half: 8e10 FLOP/s.
    "midrange_phone": DeviceProfile(
        tier="midrange_phone",
        total_memory_bytes=4 * GIB,  # 4 GB LPDDR4X
        training_memory_bytes=MIDRANGE_TRAINING_MEMORY_BYTES,
        flops_per_s=8e10,
        utilisation=UtilisationCurve(peak=MOBILE_RUNTIME_SHARE, half_batch=6.0),
        battery_capacity_j=_wh(5000, 3.85),  # 5000 mAh @ 3.85 V = 19.3 Wh
        compute_power_w=3.5,
        radio_power_w=1.2,
        latency_s=0.05,
        radios=(Link.WIFI, Link.CELLULAR),
        cpu_cores=8,
        has_npu=False,
    ),
    # Reference: Snapdragon 450 class (8x A53 @1.8 GHz, 4 fp32 FLOP/cycle: ~58 GFLOP/s peak);
    # in-order cores and small caches keep sustained training near a third: 2e10 FLOP/s.
    "older_phone": DeviceProfile(
        tier="older_phone",
        total_memory_bytes=2 * GIB,  # 2 GB LPDDR3
        training_memory_bytes=OLDER_TRAINING_MEMORY_BYTES,
        flops_per_s=2e10,
        utilisation=UtilisationCurve(peak=MOBILE_RUNTIME_SHARE, half_batch=4.0),
        battery_capacity_j=_wh(3000, 3.85),  # 3000 mAh @ 3.85 V = 11.6 Wh
        compute_power_w=2.5,
        radio_power_w=1.5,  # older modems spend more per bit
        latency_s=0.08,
        radios=(Link.WIFI, Link.CELLULAR),
        cpu_cores=8,
        has_npu=False,
    ),
    # Reference: Galaxy Tab S7 FE (Snapdragon 778G, 6 GB, 10090 mAh). A flagship-lite SoC with
    # a larger heat spreader than a phone: sustained 1.5e11 FLOP/s. Wi-Fi-only model.
    "tablet": DeviceProfile(
        tier="tablet",
        total_memory_bytes=6 * GIB,
        training_memory_bytes=18 * MIB,  # above the phones' budgets (9 / 6 / 4 MB): a bigger app heap
        flops_per_s=1.5e11,
        utilisation=UtilisationCurve(peak=MOBILE_RUNTIME_SHARE, half_batch=8.0),
        battery_capacity_j=_wh(10090, 3.86),  # 10090 mAh @ 3.86 V = 38.9 Wh
        compute_power_w=5.0,
        radio_power_w=1.0,  # Wi-Fi only
        latency_s=0.04,
        radios=(Link.WIFI,),
        cpu_cores=8,
        has_npu=True,
    ),
    # Reference: Galaxy Watch 4/5 (Exynos W920: 2x A55 @1.18 GHz, ~19 GFLOP/s peak; 1.5 GB) and
    # Apple Watch Series 8 (1 GB, 308 mAh @ 3.85 V = 1.19 Wh). Passive cooling and a tiny
    # battery keep sustained training near a tenth of peak: 2e9 FLOP/s.
    "smartwatch": DeviceProfile(
        tier="smartwatch",
        total_memory_bytes=1 * GIB,
        training_memory_bytes=4 * MIB,
        flops_per_s=2e9,
        utilisation=UtilisationCurve(peak=MOBILE_RUNTIME_SHARE, half_batch=2.0),
        battery_capacity_j=3960.0,  # ~1.1 Wh = 3960 J
        compute_power_w=0.6,  # whole-watch draw with both cores busy
        radio_power_w=0.2,  # BLE relay through the phone / Wi-Fi
        latency_s=0.15,  # extra hop through the paired phone
        # Bluetooth through the paired phone is unmetered like Wi-Fi, so it is modelled as Wi-Fi.
        radios=(Link.WIFI,),
        cpu_cores=2,
        has_npu=False,
    ),
    # Reference: industrial wireless vibration sensor on an STM32F7-class MCU (Cortex-M7
    # @216 MHz, single-precision FPU: ~430 MFLOP/s peak, 512 KB SRAM) with an LTE-M/NB-IoT
    # modem; scalar training loops reach about a quarter: 1e8 FLOP/s. Powered by a 3.6 V
    # Li-SOCl2 AA cell (2600 mAh = 9.4 Wh), topped up by energy harvesting (see traces).
    "sensor_mcu": DeviceProfile(
        tier="sensor_mcu",
        total_memory_bytes=512 * KIB,
        # 384 KB of the 512 KB SRAM; the rest holds the firmware stack, sample buffers, radio.
        training_memory_bytes=384 * KIB,
        # A TinyML training loop (TFLite Micro arena bookkeeping, CMSIS-NN scratch) needs a few
        # KB of workspace, not a phone runtime's 256 KiB: 16 KiB (an assumption; override it).
        workspace_bytes=16 * KIB,
        flops_per_s=1e8,
        # Scalar code: batching barely helps; half of the ceiling already at one sample.
        utilisation=UtilisationCurve(peak=0.9, half_batch=1.0),
        battery_capacity_j=_wh(2600, 3.6),
        compute_power_w=0.33,  # ~100 mA @ 3.3 V in run mode at full clock
        radio_power_w=0.7,  # LTE-M module transmitting at 23 dBm (~190 mA @ 3.8 V)
        latency_s=1.0,  # LTE-M / NB-IoT round trips of 0.3-2 s
        # Low-band cellular only (~50 kbit/s); the trace generator draws its bandwidth.
        radios=(Link.CELLULAR,),
        cpu_cores=1,
        has_npu=False,
    ),
    # Reference: delivery-van computer on an NVIDIA Jetson Orin NX 16 GB (1024 CUDA cores:
    # ~1.9 TFLOP/s fp32 peak, 10-25 W modes); sustained fp32 training ~5e11 FLOP/s.
    # Powered from the vehicle: no battery to spare.
    "vehicle_computer": DeviceProfile(
        tier="vehicle_computer",
        total_memory_bytes=16 * GIB,
        training_memory_bytes=64 * MIB,  # the share granted next to the driving stack
        flops_per_s=5e11,
        # A GPU wants large batches: half of the ceiling at 16 samples.
        utilisation=UtilisationCurve(peak=0.8, half_batch=16.0),
        battery_capacity_j=None,  # mains (vehicle supply)
        compute_power_w=25.0,
        radio_power_w=2.0,  # LTE modem + Wi-Fi client
        latency_s=0.06,
        radios=(Link.WIFI, Link.CELLULAR),  # depot Wi-Fi, cellular on the road
        cpu_cores=8,  # 8x Cortex-A78AE
        has_npu=True,  # NVDLA
    ),
}

#: Built-in tiers of the ``scaled`` catalogue by name (read-only).
TIERS: Mapping[str, DeviceProfile] = MappingProxyType(_BUILTIN)


def tier(name: str) -> DeviceProfile:
    """The built-in profile named ``name`` in the ``scaled`` catalogue (:data:`TIERS`).

    Args:
        name: a key of :data:`TIERS`.

    Returns:
        The tier's profile.

    Raises:
        ConfigError: the name is not a built-in tier; the message lists the known ones.

    >>> tier("older_phone").total_memory_bytes == 2 * 2**30
    True
    """
    try:
        return TIERS[name]
    except (KeyError, TypeError):
        known = ", ".join(TIERS)
        raise ConfigError(f"unknown device tier {name!r} (known: {known})") from None
