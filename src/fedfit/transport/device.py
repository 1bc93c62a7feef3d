"""``fedfit device``: measure the host, enrol, and train the tasks the server sends.

Before each task the device takes a :class:`~fedfit.devices.PsutilMonitor` snapshot (free memory
capped by ``--memory-limit`` minus the process's own RSS; battery, charging and temperature
``None`` where the platform has no sensor), runs the same ``decide_batch`` policy as the
simulator on it (dynamic batching), and trains with the same trainer. A real out-of-memory error
is reported as an ``out_of_memory`` failure and the device carries on.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import platform
import resource
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psutil
import torch

from fedfit.config import ExperimentConfig, parse_config
from fedfit.cost import MemoryModel, measure
from fedfit.data import build_federated_data
from fedfit.devices import PsutilMonitor
from fedfit.errors import DataError
from fedfit.planner_stack import dynamic_planner
from fedfit.inputs import data_kwargs
from fedfit.models import ModelSpec
from fedfit.report.model_file import _spec_from
from fedfit.sources import user_data
from fedfit.training import OptimizerConfig, train
from fedfit.training.trainer import EpochBatch
from fedfit.transport.assemble import device_profile
from fedfit.transport.client import DeviceClient, Refused
from fedfit.transport.codec import decode, encode, with_masks
from fedfit.transport.secagg_device import secure_upload
from fedfit.transport.messages import (
    FailureReport, ProfileReport, ReadinessReport, StateReport, TaskMessage, UpdateReport, plan_from_record,
)
from fedfit.types import DeviceState, FailureCause, TrainPlan

Log = Callable[[str], None]


@dataclass(frozen=True)
class DeviceOptions:
    memory_limit_bytes: int | None = None
    shard: tuple[int, int] | None = None
    data: Path | None = None
    tier: str | None = None
    poll_wait_s: float = 10.0


def flops_per_s(size: int = 128, repeats: int = 8) -> float:
    """A short matrix-multiply micro-benchmark of this host (one thread)."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * size**3 * repeats / max(time.perf_counter() - start, 1e-9)


def measure_profile(options: DeviceOptions, num_examples: int) -> ProfileReport:
    return ProfileReport(total_memory_bytes=int(psutil.virtual_memory().total),
                         memory_limit_bytes=options.memory_limit_bytes, cpu_cores=os.cpu_count() or 1,
                         arch=platform.machine()[:64] or "unknown", flops_per_s=flops_per_s(),
                         tier=options.tier, num_examples=num_examples)


class LimitedMonitor:
    """The host's monitor with free memory capped by ``limit`` minus this process's RSS."""

    def __init__(self, limit_bytes: int | None) -> None:
        self._monitor, self._limit = PsutilMonitor(), limit_bytes

    def record_transfer(self, num_bytes: int, seconds: float) -> None:
        self._monitor.record_transfer(num_bytes, seconds)

    def snapshot(self) -> DeviceState:
        state = self._monitor.snapshot(0.0)
        if self._limit is None:
            return state
        budget = max(0, self._limit - psutil.Process().memory_info().rss)
        return dataclasses.replace(state, free_memory_bytes=min(state.free_memory_bytes, budget))


def local_data(config: ExperimentConfig, spec: ModelSpec, options: DeviceOptions) -> tuple[torch.Tensor, torch.Tensor]:
    """The device's training data: shard ``I/N`` of the config's data set, or an ``.npz`` of ``x``, ``y``."""
    if options.data is not None:
        return _npz(options.data, spec)
    shard, total = options.shard or (0, config.num_devices)
    if total != config.num_devices or not 0 <= shard < total:
        raise DataError(f"--shard: need I/N with N = the config's {config.num_devices} devices and 0 <= I < N")
    own = user_data(config, None)  # the config's data.loader / data.devices_dir, as the server reads it
    local = (own if own is not None else build_federated_data(**data_kwargs(config))).train[shard]
    return local.x, local.y


def _npz(path: Path, spec: ModelSpec) -> tuple[torch.Tensor, torch.Tensor]:
    try:
        with np.load(path) as f:
            x, y = np.asarray(f["x"], dtype=np.float32), np.asarray(f["y"], dtype=np.int64)
    except (OSError, KeyError, ValueError) as err:
        raise DataError(f"--data {path}: need an .npz with arrays x and y ({err})") from None
    if x.shape[1:] != tuple(spec.input_shape) or len(x) != len(y) or len(x) == 0:
        raise DataError(f"--data {path}: x must be (n, {', '.join(map(str, spec.input_shape))}) and y (n,), n > 0")
    if y.min() < 0 or y.max() >= spec.num_classes:
        raise DataError(f"--data {path}: labels must be in 0..{spec.num_classes - 1}")
    return torch.from_numpy(x), torch.from_numpy(y)


class Device:
    """One device's loop over a :class:`DeviceClient`."""

    def __init__(self, client: DeviceClient, options: DeviceOptions, log: Log = print) -> None:
        self.client, self.options, self.log = client, options, log
        self.monitor = LimitedMonitor(options.memory_limit_bytes)
        self.accepted: list[str] = []

    def read_config(self, body: dict[str, Any]) -> tuple[ExperimentConfig, ModelSpec]:
        """The run's config and model spec as the server sent them."""
        self.config, self.spec = parse_config(body["config"]), _spec_from(body["spec"])
        return self.config, self.spec

    def setup(self, profile: ProfileReport) -> None:
        """The device's batch policy and profile once it is enrolled."""
        t = self.config.training
        self.optimizer = OptimizerConfig(t.momentum, t.weight_decay, kind=t.optimizer, proximal_mu=t.proximal_mu)
        memory = MemoryModel(optimizer_slots=self.optimizer.slots, workspace_bytes=self.config.memory.workspace_bytes)
        device = self.client.device_id or 0
        self.policy = dynamic_planner(self.config, functools.partial(measure, self.spec), memory,
                                       [profile.num_examples] * (device + 1))
        self.profile = device_profile(self.config, device, profile)

    def run(self, x: torch.Tensor, y: torch.Tensor) -> int:
        """Pull and train tasks until the server says the run is over; returns tasks accepted."""
        while True:
            state = self.monitor.snapshot()
            self.client.heartbeat(StateReport.of(state))
            answer = self.readiness(state)
            if answer is not None:
                self.client.readiness(answer)
            try:
                task = self.client.next_task(self.options.poll_wait_s)
            except Refused as err:
                if err.code == "run_finished":
                    return len(self.accepted)
                raise
            if task is not None:
                self._handle(task, x, y)

    def readiness(self, state: DeviceState) -> ReadinessReport | None:
        """The answer to the server's readiness query from this device's batch policy on ``state``
        (full model, no memory technique); ``None`` without dynamic batching (the server then
        reads the reported state, as in simulation)."""
        if self.policy is None:
            return None
        d = self.policy.decide(self.profile, state)
        if d.declined or d.micro_batch < 1:
            return ReadinessReport(ready=False, reason=d.reason[:500], affordable_batch=0)
        return ReadinessReport(ready=True, affordable_batch=d.micro_batch)

    def _handle(self, task: TaskMessage, x: torch.Tensor, y: torch.Tensor) -> None:
        plan = plan_from_record(task.plan)
        try:
            payload, down_s = self.client.download(task.task_id)
            self.monitor.record_transfer(len(payload), down_s)
            plan, declined = self._decide(plan)
            if declined is not None:
                self.log(f"device {self.client.device_id} round {plan.round}: declined ({declined})")
                self.client.fail(task.task_id, FailureReport(cause=FailureCause.DECLINED, detail=declined))
                return
            body = self._train(plan, decode(payload)[0], x, y, down_s)
            if body is None:
                self.log(f"device {self.client.device_id} round {plan.round}: out of memory ({self._oom})")
                self.client.fail(task.task_id, FailureReport(cause=FailureCause.OUT_OF_MEMORY, detail=self._oom))
                return
            start = time.perf_counter()
            if self.config.privacy.secure_aggregation.enabled:
                out = secure_upload(self.client, self.config, self.spec, plan, (task.task_id, payload, body), self.log)
            else:
                out = self.client.upload(task.task_id, body)
            self.monitor.record_transfer(len(body), max(time.perf_counter() - start, 1e-6))
            self.accepted.append(task.task_id)
            self.log(f"accepted task {task.task_id} round {plan.round} journal {out.get('journal_seq')}")
        except Refused as err:
            if err.code == "replay":  # the upload got through before a retry: it was accepted
                self.accepted.append(task.task_id)
                self.log(f"accepted task {task.task_id} round {plan.round} (confirmed on retry)")
            else:
                self.log(f"task {task.task_id} refused: {err}")

    def _decide(self, plan: TrainPlan) -> tuple[TrainPlan, str | None]:
        """The device's own batch decision from its monitor now (dynamic batching only)."""
        if self.policy is None:
            return plan, None
        state = self.monitor.snapshot()
        d = self.policy.adapt(plan, self.profile, state, 0)
        if d.declined:
            return plan, d.reason
        self.log(f"device {self.client.device_id} round {plan.round}: micro-batch {d.micro_batch} x "
                 f"{d.accumulation_steps} (bound by {d.bound_by.value if d.bound_by else 'none'}; "
                 f"free {state.free_memory_bytes // 2**20} MiB, cpu {state.cpu_utilisation}, "
                 f"battery {state.battery_fraction}, thermal {state.thermal.value})")
        return dataclasses.replace(plan, micro_batch=d.micro_batch, accumulation_steps=d.accumulation_steps,
                                   bound_by=d.bound_by), None

    def _at_epoch(self, plan: TrainPlan) -> EpochBatch | None:
        """Dynamic batching's device side: before each local epoch after the first (decided by
        :meth:`_decide` just before), re-read the monitor and run the policy again; a decline
        pauses training and the epochs done so far are uploaded (as in simulation)."""
        policy = self.policy
        if policy is None:
            return None

        def decide(epoch: int) -> tuple[int, int] | None:
            if epoch == 0:
                return plan.micro_batch, plan.accumulation_steps
            d = policy.adapt(plan, self.profile, self.monitor.snapshot(), epoch)
            if d.declined:
                self.log(f"device {self.client.device_id} round {plan.round} epoch {epoch}: paused ({d.reason})")
                return None
            if (d.micro_batch, d.accumulation_steps) != (plan.micro_batch, plan.accumulation_steps):
                self.log(f"device {self.client.device_id} round {plan.round} epoch {epoch}: micro-batch "
                         f"{d.micro_batch} x {d.accumulation_steps} ({d.reason})")
            return d.micro_batch, d.accumulation_steps
        return decide

    def _train(self, plan: TrainPlan, params: dict[str, torch.Tensor], x: torch.Tensor, y: torch.Tensor,
               down_s: float) -> bytes | None:
        beat = _Heartbeat(self.client, self.monitor, self.config.deploy.heartbeat_timeout_s / 3)
        start = time.perf_counter()
        try:
            update = train(self.spec.build(plan.width), params, x, y, plan, seed=self.config.seed,
                           optimizer=self.optimizer, at_epoch=self._at_epoch(plan))
        except (MemoryError, torch.OutOfMemoryError) as err:
            self._oom = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else 'allocation failed'}"
            return None
        except RuntimeError as err:
            if "out of memory" not in str(err).lower() and "DefaultCPUAllocator" not in str(err):
                raise
            self._oom = str(err).splitlines()[0]
            return None
        finally:
            beat.stop()
        report = UpdateReport(samples_processed=update.samples_processed, steps=update.steps,
                              micro_batch=update.micro_batch, accumulation_steps=update.accumulation_steps,
                              train_loss=update.train_loss, epoch_batches=list(update.epoch_batches),
                              duration_s=time.perf_counter() - start, download_s=down_s,
                              peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                              num_examples=update.num_examples, start_loss=update.start_loss,
                              sigma2=update.sigma2, noise_curvature=update.noise_curvature)
        return encode(with_masks(update.params, update.masks), {"report": report.model_dump_json()})


class _Heartbeat:
    """Reports the device's state every ``every_s`` while it trains (a background thread)."""

    def __init__(self, client: DeviceClient, monitor: LimitedMonitor, every_s: float) -> None:
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(client, monitor, every_s), daemon=True)
        self._thread.start()

    def _loop(self, client: DeviceClient, monitor: LimitedMonitor, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                client.heartbeat(StateReport.of(monitor.snapshot()))
            except Exception:  # noqa: BLE001 - a missed heartbeat is not worth stopping training
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
