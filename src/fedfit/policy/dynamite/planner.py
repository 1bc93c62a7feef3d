"""The DYNAMITE planner: re-estimate after every aggregation, re-plan τ and b_i, write the plans.

DYNAMITE's adaptive control (Liu et al. 2023, arXiv 2310.14906, Algorithm "online"): after each
aggregation the server turns the updates into estimates of β, ρ, δ, σ² and the loss
(:mod:`.estimate`), calibrates each device's predicted round time against the measured one,
subtracts what was spent from the budget and solves for the (τ, b_i) minimising the bound over
what is left (:mod:`.search`), over the devices its last reports say can be reached
(:mod:`.reachable`). ``plan`` writes ``max_steps = τ``, ``b_i`` as micro-batch × accumulation
within the memory cap, and enough epochs to take τ steps; the base planner decides the rest.
Offline variants solve once, after ``warmup_rounds`` aggregations. In asynchronous mode each
aggregation re-plans too; an update's pseudo-gradient is taken against its start version.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence

import torch

from fedfit.cost.memory import MemoryModel
from fedfit.cost.profile import ModelCost
from fedfit.devices.registry import Registry
from fedfit.policy.dynamite.bound import Budget, Estimates
from fedfit.policy.dynamite.calibrate import calibrate, round_loss
from fedfit.policy.dynamite.costs import DeviceCost, device_cost
from fedfit.policy.dynamite.curvature import contraction
from fedfit.policy.dynamite.estimate import EstimatorState, RoundObservation, observe, pseudo_gradient, smooth
from fedfit.policy.dynamite.last_round import last_round_budget
from fedfit.policy.dynamite.reachable import cohort_share, expected_to_train, widen
from fedfit.policy.dynamite.search import (
    Assignment, assign_heterogeneous, closed_form_assignment, search_homogeneous,
)
from fedfit.policy.dynamite.settings import DynamiteSettings
from fedfit.policy.dynamite.slack import slack_filled
from fedfit.policy.dynamite.turnover import turnover_variance
from fedfit.policy.planning import Planner
from fedfit.policy.width import nominal_state
from fedfit.types import DeviceProfile, DeviceState, Params, TaskResult, TrainPlan, Update

def flatten(params: Params) -> torch.Tensor:
    """The floating parameters as one vector, in name order (batch-norm statistics left out)."""
    names = [n for n in sorted(params) if params[n].is_floating_point() and "running_" not in n]
    return torch.cat([params[n].detach().reshape(-1).double() for n in names])


class DynamitePlanner:
    """Plans τ and b_i for every device (implements :class:`~fedfit.policy.Planner` and the
    orchestrators' round observer).

    Args:
        base: the planner that decides everything but batch and steps.
        settings: the DYNAMITE parameters.
        registry: profiles, last reported states and measured durations of every device.
        costs: the measured model per width.
        memory: the memory model (the micro-batch cap).
        data_sizes: samples each device holds at a virtual time (``data_sizes(now_s)``; a
            stream's buffer sizes).
        lr: the local learning rate η the base planner gives.
        initial_params: the model version 0 devices start from.
        cap_of: the micro-batch a device's batch policy affords (dynamic batching); ``None``:
            the memory model's bound on the reported free memory.
        held: the samples (their identities) a device holds at a virtual time (``held(device,
            at_s)``: a stream's buffer), so σ² is read net of the buffer's turnover between a
            device's tasks (:mod:`.turnover`); ``None``: static data, nothing turns over.
    """

    def __init__(self, base: Planner, settings: DynamiteSettings, *, registry: Registry,
                 costs: Callable[[float], ModelCost], memory: MemoryModel,
                 data_sizes: Callable[[float], Sequence[int]], lr: float, initial_params: Params,
                 cap_of: Callable[[DeviceProfile, DeviceState], int] | None = None,
                 held: Callable[[int, float], Sequence[int]] | None = None) -> None:
        self.base, self.settings, self.registry = base, settings, registry
        self.costs, self.memory, self.data_sizes, self.cap_of = costs, memory, data_sizes, cap_of
        self.lr, self.held = lr, held
        self._last_held: dict[int, Sequence[int]] = {}  # device → the samples its last observed task held
        self._model = costs(1.0)  # measured once: the master's cost does not change
        self.estimator = EstimatorState()
        self.calibration = settings.calibration
        self.versions: dict[int, torch.Tensor] = {0: flatten(initial_params)}
        self._reachable: dict[int, DeviceState] = {}
        self.speed: dict[int, float] = {}  # device → measured / predicted duration (smoothed)
        self.spent_s, self.spent_j, self.observed = 0.0, 0.0, 0
        self.assignment: Assignment | None = None
        self.history: list[tuple[int, int, tuple[int, ...]]] = []  # (version, τ, b_i) per re-plan

    # -- writing plans -------------------------------------------------------------------
    def plan(self, device_id: int, round_: int, profile: DeviceProfile, state: DeviceState) -> TrainPlan:
        plan = self.base.plan(device_id, round_, profile, state)
        assignment = self.current()
        tau, batch = assignment.tau, assignment.batches[self.registry.ids().index(device_id)]
        cap = self._device(device_id, self.data_sizes(self.spent_s)[device_id]).micro_cap
        micro = min(batch, cap)
        accumulation = math.ceil(batch / micro)
        steps_per_epoch = math.ceil(max(1, self.data_sizes(self.spent_s)[device_id]) / (micro * accumulation))
        probe, curvature = self.probes()
        return dataclasses.replace(plan, micro_batch=micro, accumulation_steps=accumulation, max_steps=tau,
                                   local_epochs=math.ceil(tau / steps_per_epoch), epoch_batches=(),
                                   sigma_probe=probe, curvature_probe=curvature)

    def probes(self) -> tuple[bool, bool]:
        """(σ², curvature) probes the plans now written ask for; the rounds are priced with them."""
        probe = self.settings.sigma_probe and (self.settings.adapt or self.observed < self.settings.warmup_rounds)
        return probe, probe and self.settings.noise_model == "curvature"

    def current(self) -> Assignment:
        """The (τ, b_i) in force, solving first when none is."""
        if self.assignment is None:
            self.assignment = self.solve()
            self.history.append((self.observed, self.assignment.tau, self.assignment.batches))
        return self.assignment

    def solve(self) -> Assignment:
        """The assignment minimising the bound over the budget left, with today's estimates."""
        s, ids = self.settings, self.registry.ids()
        held = self.data_sizes(self.spent_s)
        live = (expected_to_train([self.registry.last_state(d) for d in ids]) if s.plan_for == "reachable"
                else list(range(len(ids))))  # :mod:`.reachable`
        every = [self._device(d, held[d]) for d in ids]
        devices = [every[k] for k in live]
        sizes = [max(1, d.data_size) for d in devices]
        shares = [n / sum(sizes) for n in sizes]
        est = self.estimates()
        budget = self._budget_left(len(live))
        budget = last_round_budget(budget, devices) if s.last_round else budget
        if s.solver == "closed_form":
            found = closed_form_assignment(devices, shares, est, self.lr, budget, s.tau_max)
        else:
            found = search_homogeneous(devices, shares, est, self.lr, budget, s.tau_max)
        common = found.batches[0]
        if s.solver == "heterogeneous":
            found = assign_heterogeneous(devices, shares, est, self.lr, budget, s.tau_max, start=found,
                                         energy_cap=s.energy_cap == "homogeneous")
            found = slack_filled(found, s.slack_fill, devices, shares, est, self.lr, budget,
                                 energy_cap=s.energy_cap == "homogeneous")
        others = [min(common, d.batch_cap) for d in every]
        return dataclasses.replace(found, batches=widen(live, found.batches, len(ids), others))

    def estimates(self) -> Estimates:
        """The estimates the next plan uses: smoothed, the prior's where none yet, drift calibrated."""
        est = self.estimator.estimates(self.settings.prior)
        c = self.calibration
        return est if c is None else dataclasses.replace(est, drift_scale=c.factor)

    def _contraction(self) -> float | None:
        """q = 1 − η β_σ of ``noise_model: curvature`` (β̂ before a probe reported); else ``None``."""
        if self.settings.noise_model != "curvature":
            return None
        est = self.estimates()
        return contraction(self.lr, est.beta if est.noise_curvature is None else est.noise_curvature)

    def _budget_left(self, planned: int) -> Budget:
        b = self.settings.budget
        share = cohort_share(self.settings.participation, len(self.registry.ids()), planned)
        time_s = None if b.time_s is None else max(b.time_s - self.spent_s, 1e-3 * b.time_s)
        energy = None if b.energy_j is None else max(b.energy_j - self.spent_j, 1e-3 * b.energy_j) / share
        return Budget(time_s=time_s, energy_j=energy, whole_rounds=b.whole_rounds)

    def _device(self, device_id: int, data_size: int) -> DeviceCost:
        """The device's cost from its last reported state (an unreachable device's from the
        last state it was reachable in, or a nominal one), calibrated by its measured speed."""
        profile = self.registry.profile(device_id)
        state = self.registry.last_state(device_id)
        if state is None or not state.online or state.bandwidth_bps <= 0:
            state = self._reachable.get(device_id) or nominal_state(profile)
        self._reachable[device_id] = state
        d = device_cost(profile, state, self._model, self.memory, data_size=data_size,
                        payload_bytes=self._model.param_bytes, max_accumulation=self.settings.max_accumulation,
                        streaming=self.settings.streaming, reshuffled=self.settings.noise_model == "reshuffled",
                        contraction=self._contraction(), probes=self.probes())
        if self.cap_of is not None:
            d = dataclasses.replace(d, micro_cap=max(1, min(d.micro_cap, self.cap_of(profile, state))))
        ratio = self.speed.get(device_id)
        return d if ratio is None else d.calibrated(measured_s=ratio, predicted_s=1.0)

    # -- observing aggregations ------------------------------------------------------------
    def observe(self, version: int, params: Params, results: Sequence[TaskResult], now_s: float) -> None:
        """Feed one aggregation (its new model ``version``, the results it saw, the time now)."""
        s = self.settings
        self.spent_s = max(self.spent_s, now_s)
        self.spent_j += sum(r.cost.energy_j for r in results)
        for r in results:
            if r.ok and r.cost.duration_s > 0:
                ratio = (r.finish_s - r.start_s) / r.cost.duration_s
                self.speed[r.plan.device_id] = smooth(self.speed.get(r.plan.device_id), ratio, s.holding) or ratio
        obs = self._observation(results)
        if obs is not None:
            self.estimator = observe(self.estimator, obs, s.holding, 0.0 if s.curvature_latest else None,
                                     0.0 if s.sigma_latest else None)
            if self.calibration is not None:
                now = round_loss(obs, self.estimator.estimates(s.prior), self.lr, streaming=s.streaming,
                                 reshuffled=s.noise_model == "reshuffled", contraction=self._contraction())
                self.calibration = calibrate(self.calibration, now)
        self.versions[version] = flatten(params)
        for old in [v for v in self.versions if v < version - 16]:
            del self.versions[old]
        self.observed += 1
        if self.settings.adapt or self.observed == self.settings.warmup_rounds:
            self.assignment = None

    def _observation(self, results: Sequence[TaskResult]) -> RoundObservation | None:
        updates = [r.outcome for r in results if isinstance(r.outcome, Update) and r.outcome.round in self.versions]
        start_version = max((u.round for u in updates), default=None)
        if start_version is None:
            return None
        start = self.versions[start_version]
        grads, samples, shares, losses, steps, starts, batches = {}, {}, {}, [], {}, {}, {}
        probes: dict[int, float] = {}
        curvatures: dict[int, float] = {}
        for u, plan in ((r.outcome, r.plan) for r in results if isinstance(r.outcome, Update)):
            if u.round != start_version or u.masks is not None:
                continue
            end = flatten(u.params)
            if end.shape != start.shape:
                continue  # a narrower sub-model: not comparable with the master
            grads[u.device_id] = pseudo_gradient(start, end, plan.lr, u.steps)
            samples[u.device_id], shares[u.device_id] = u.samples_processed, float(max(1, u.num_examples))
            steps[u.device_id], batches[u.device_id] = u.steps, u.micro_batch * u.accumulation_steps
            if u.start_loss is not None and math.isfinite(u.start_loss):
                starts[u.device_id] = u.start_loss
            if u.sigma2 is not None and math.isfinite(u.sigma2):
                probes[u.device_id] = u.sigma2
            if u.noise_curvature is not None and math.isfinite(u.noise_curvature):
                curvatures[u.device_id] = u.noise_curvature
            losses.append((u.train_loss, shares[u.device_id]))
        if not grads:
            return None
        loss = sum(l * w for l, w in losses) / sum(w for _, w in losses)
        return RoundObservation(start=start, grads=grads, samples=samples, shares=shares, loss=loss,
                                version=start_version, steps=steps, start_losses=starts, batches=batches,
                                sigma2s=probes, curvatures=curvatures,
                                turnover=self._turnover([r for r in results if isinstance(r.outcome, Update)
                                                         and r.outcome.round == start_version
                                                         and r.plan.device_id in grads]))

    def _turnover(self, results: Sequence[TaskResult]) -> dict[int, float]:
        """Each device's buffer turnover since its last observed task (empty on static data)."""
        if self.held is None:
            return {}
        turnover: dict[int, float] = {}
        for r in results:
            d, now = r.plan.device_id, self.held(r.plan.device_id, r.start_s)
            if d in self._last_held:
                turnover[d] = turnover_variance(self._last_held[d], now)
            self._last_held[d] = now
        return turnover
