"""DYNAMITE's cost model in fedfit's terms: what one round of (τ, b_i) costs a device.

One local step of batch ``b`` (micro-batch ``m = min(b, cap)``, ``k = ceil(b / m)``
accumulated micro-batches) takes, by fedfit's time model (:mod:`fedfit.cost.time`, with
utilisation ``u(m) = peak · m / (m + h)``)::

    step_s(b) = flops_per_sample · k · (m + h) / (flops_per_s · peak · thermal)
              = a · k · (m + h)                      (a: seconds per sample at full utilisation)

so a round of ``τ`` steps costs ``τ · step_s(b) + probe_s(b) + comm_s`` seconds and
``P_compute · (τ · step_s(b) + probe_s(b)) + P_radio · comm_s`` joules, ``probe_s`` being the
probes the task is asked for, charged as the task cost model charges them
(:func:`fedfit.cost.probe_work.probe_units`, 0 without probes). Predictions come from the device's
profile and last reported state; once the device has reported a measured duration,
:meth:`DeviceCost.calibrated` rescales the prediction to the measurement (measured wins).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from fedfit.cost.memory import MemoryModel
from fedfit.cost.probe_work import probe_units
from fedfit.cost.profile import ModelCost
from fedfit.cost.time import THERMAL_FACTOR, transfer_time_s
from fedfit.policy.dynamite.curvature import contracted_noise
from fedfit.policy.dynamite.sampling import step_noise
from fedfit.policy.dynamite.stream import stream_noise
from fedfit.types import DeviceProfile, DeviceState


@dataclass(frozen=True, slots=True)
class DeviceCost:
    """What one device's rounds cost, as DYNAMITE plans them.

    Attributes:
        sample_s: ``a``, seconds per sample at full utilisation.
        half_batch: ``h``, the utilisation curve's half-saturation micro-batch.
        comm_s: seconds of one aggregation's download + upload.
        compute_power_w: power drawn while training.
        radio_power_w: power drawn while transferring.
        micro_cap: largest micro-batch the device's free memory holds (≥ 1).
        data_size: ``D_i``, samples the device holds (its stream buffer's size when streaming).
        max_accumulation: micro-batches a step may accumulate (1: the batch is capped by memory).
        streaming: the data held is a buffer sampled from a stream (:mod:`.stream`: its batches
            are worth :func:`~fedfit.policy.dynamite.stream.stream_noise`, not 1/b).
        reshuffled: the bound prices the trainer's reshuffled epochs over the ``data_size``
            samples (:func:`~fedfit.policy.dynamite.sampling.step_noise`) instead of independent
            draws (1/b); ``streaming`` takes precedence.
        contraction: q = 1 − η β_σ, the step contraction along the noise
            (``noise_model: curvature``): the reshuffled epochs' noise at the round's end,
            :func:`~fedfit.policy.dynamite.curvature.contracted_noise`; ``None``: not used
            (``streaming`` takes precedence).
        sigma_probe, curvature_probe: the device's tasks take the σ² probe (and the curvature
            probe with it): each round pays :meth:`probe_s`.
    """

    sample_s: float
    half_batch: float
    comm_s: float
    compute_power_w: float
    radio_power_w: float
    micro_cap: int
    data_size: int
    max_accumulation: int = 1
    streaming: bool = False
    reshuffled: bool = False
    contraction: float | None = None
    sigma_probe: bool = False
    curvature_probe: bool = False

    @property
    def batch_cap(self) -> int:
        """Largest batch the device can afford (memory × accumulation, never above its data)."""
        return max(1, min(self.micro_cap * self.max_accumulation, max(1, self.data_size)))

    def noise(self, share: float, tau: int, batch: int) -> float:
        """This device's term of the bound's noise sum, p_i² × the per-step gradient variance of a
        task of ``tau`` steps of ``batch`` in units of σ²: p²/b for independent draws, p² ×
        :func:`~fedfit.policy.dynamite.sampling.step_noise` for reshuffled epochs, p² ×
        :func:`~fedfit.policy.dynamite.stream.stream_noise` on a stream.

        >>> DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=64, data_size=64).noise(0.5, 50, 8)
        0.03125
        >>> DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=64, data_size=64, streaming=True).noise(0.5, 50, 64)
        0.1953125
        >>> reshuffled = DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=64, data_size=64, reshuffled=True)
        >>> reshuffled.noise(0.5, 48, 8), round(reshuffled.noise(0.5, 50, 8), 6)  # 6 epochs; + 2 steps
        (0.0, 0.000952)
        """
        if self.streaming:
            return share * share * stream_noise(tau, batch, self.data_size)
        if self.contraction is not None:
            return share * share * contracted_noise(self.data_size, batch, tau, self.contraction)
        if self.reshuffled:
            return share * share * step_noise(self.data_size, batch, tau)
        return share * share / batch

    def step_s(self, batch: int) -> float:
        """Seconds of one local step of ``batch`` samples.

        >>> DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=8, data_size=100, max_accumulation=2).step_s(16)
        0.24
        """
        micro = min(batch, self.micro_cap)
        k = math.ceil(batch / micro)
        return round(self.sample_s * k * (micro + self.half_batch), 12)

    def probe_s(self, batch: int) -> float:
        """Seconds of the probes of one task of ``batch`` (0 without :attr:`sigma_probe`): the first
        step's effective batch ``k · m`` of the device's data, priced by
        :func:`fedfit.cost.probe_work.probe_units`.

        >>> probing = DeviceCost(0.01, 4.0, 1.0, 2.0, 1.0, micro_cap=8, data_size=100, sigma_probe=True)
        >>> probing.probe_s(8), round(probing.round_s(10, 8), 12)  # 0.01 · (8 + 2 · 4); 10 steps of 0.12 s, 1 s link
        (0.16, 2.36)
        """
        if not self.sigma_probe:
            return 0.0
        micro = min(batch, self.micro_cap)
        first = min(micro * math.ceil(batch / micro), self.data_size)
        units = probe_units(first, self.data_size, curvature=self.curvature_probe, half_batch=self.half_batch)
        return round(self.sample_s * units, 12)

    def round_s(self, tau: int, batch: int) -> float:
        """Seconds of one round: ``τ`` steps of ``batch`` and the probes, then one aggregation's transfers."""
        return tau * self.step_s(batch) + self.probe_s(batch) + self.comm_s

    def round_j(self, tau: int, batch: int) -> float:
        """Joules of one round on this device."""
        return self.compute_power_w * (tau * self.step_s(batch) + self.probe_s(batch)) + self.radio_power_w * self.comm_s

    def largest_batch_within(self, tau: int, round_s: float) -> int:
        """Largest batch (≤ :attr:`batch_cap`) whose round fits ``round_s`` seconds; 0 if none."""
        lo, hi = 0, self.batch_cap
        while lo < hi:  # step_s is non-decreasing in the batch
            mid = (lo + hi + 1) // 2
            if self.round_s(tau, mid) <= round_s * (1 + 1e-12):
                lo = mid
            else:
                hi = mid - 1
        return lo

    def calibrated(self, measured_s: float, predicted_s: float) -> DeviceCost:
        """This cost with compute and transfer times scaled by ``measured_s / predicted_s``."""
        if predicted_s <= 0 or measured_s <= 0 or not math.isfinite(measured_s / predicted_s):
            return self
        ratio = measured_s / predicted_s
        return dataclasses.replace(self, sample_s=self.sample_s * ratio, comm_s=self.comm_s * ratio)


def device_cost(profile: DeviceProfile, state: DeviceState, cost: ModelCost, memory: MemoryModel, *,
                data_size: int, payload_bytes: int, max_accumulation: int = 1,
                streaming: bool = False, reshuffled: bool = False, contraction: float | None = None,
                probes: tuple[bool, bool] = (False, False)) -> DeviceCost:
    """The predicted :class:`DeviceCost` of a device from fedfit's time and memory models.

    Args:
        profile: the device's static profile.
        state: its last reported state (thermal state, bandwidth, free memory).
        cost: the measured model it trains.
        memory: the memory model (gives the micro-batch cap).
        data_size: samples it holds.
        payload_bytes: bytes sent each way per aggregation.
        max_accumulation: micro-batches a step may accumulate.
        streaming: ``data_size`` is a stream buffer's (:attr:`DeviceCost.streaming`).
        reshuffled: the noise of reshuffled epochs (:attr:`DeviceCost.reshuffled`).
        contraction: the curvature-aware noise's q (:attr:`DeviceCost.contraction`).
        probes: its tasks take (the σ² probe, the curvature probe) (:meth:`DeviceCost.probe_s`).
    """
    rate = profile.flops_per_s * profile.utilisation.peak * THERMAL_FACTOR[state.thermal]
    one_way = transfer_time_s(payload_bytes, state.bandwidth_bps, profile.latency_s)
    cap = memory.for_device(profile).max_micro_batch(cost, state.free_memory_bytes)
    return DeviceCost(sample_s=cost.train_flops_per_sample / rate, half_batch=profile.utilisation.half_batch,
                      comm_s=2 * one_way, compute_power_w=profile.compute_power_w,
                      radio_power_w=profile.radio_power_w, micro_cap=max(1, cap), data_size=data_size,
                      max_accumulation=max_accumulation, streaming=streaming, reshuffled=reshuffled,
                      contraction=contraction, sigma_probe=probes[0], curvature_probe=probes[0] and probes[1])
