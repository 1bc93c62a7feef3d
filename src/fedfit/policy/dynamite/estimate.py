"""Online estimates of β, ρ, δ, σ² and ζ from what updates carry, smoothed over rounds.

As in DYNAMITE (and Wang et al. 2019, whose estimators it uses), every quantity comes from
consecutive models and gradients. fedfit's updates carry trained parameters, the steps taken,
the samples processed and the mean training loss, so the gradient of device i in a round that
started from the global model w is the update's *pseudo-gradient*::

    g_i = (w − w_i) / (η · steps_i)        (the mean local gradient along the local path)
    g   = Σ p_i g_i                          (the global gradient at w, p_i = D_i / D)

and from one round (t) to the next (t+1)::

    δ  = Σ p_i ‖g_i − g‖                                  gradient divergence
    β  = sqrt(‖g(t+1) − g(t)‖² − σ² Σ p_i² (v_i(t) + v_i(t+1))) / ‖w(t+1) − w(t)‖
                                                          smoothness: the gradient secant over
                                                          the devices in both rounds, less the
                                                          mini-batch noise it expects
    ρ  = ‖g‖                                              Lipschitz constant: a ρ-Lipschitz loss
                                                          has ‖∇F‖ ≤ ρ; the gradient-norm probe
                                                          is the tightest value consistent with
                                                          it (the loss secant the authors use
                                                          mixes losses averaged over local paths
                                                          of different lengths once τ changes)
    σ² = Σ_i max(0, ‖g_i(t+1) − g_i(t)‖² − β² ‖Δw‖²) / Σ_i (v_i(t) + v_i(t+1))  (over the
         devices in both rounds): the part of a device's gradient change its smoothness does
         not explain is mini-batch noise of variance σ² v_i, v_i the pseudo-gradient's sampling
         variance under the trainer's shuffled epochs (:mod:`.sampling`; 1/n_i, n_i the samples
         processed, where the batch is unknown). Pooled, not averaged per device: a device whose
         task ran nearly whole epochs has v_i ≈ 0 and would blow its residual up.
    ζ  = Σ p_i ‖Δg_i − Δg‖ / ‖Δw‖      Hessian dissimilarity: how differently the devices'
         gradients change along the same step (Δg_i = g_i(t+1) − g_i(t), Δg = Σ p_i Δg_i over
         the devices in both rounds); it is what makes the averaged model drift
         (:func:`~fedfit.policy.dynamite.bound.drift`). Mini-batch noise is left in (it can only
         raise ζ, and the bound caps ζ at β): σ² is fitted to the residual of a *common* β, so
         it absorbs exactly the curvature differences ζ measures, and subtracting it would
         cancel them.

σ² probed (``dynamite.sigma_probe``): when updates carry ``Update.sigma2``, each device's
unbiased measurement of its data's per-sample gradient variance at the received model
(:mod:`fedfit.training.probe`: the first step's batch split in halves), the round's σ² is their
data-share-weighted mean ``Σ p_i σ̂²_i / Σ p_i`` over the devices that reported one — the
fleet's σ² when the devices' variances differ, weighted as the bound weighs their gradients —
and it replaces the gradient-change estimate above (which needs a pair of rounds and reads
curvature along the local paths as noise). It is smoothed like the others, and β's noise
correction uses it from the same round.

F0, the loss gap the bound's optimisation term starts from, is the loss of the *current* global
model: the data-share-weighted mean of the updates' ``start_loss`` (the loss of the model a
device received on its first batch, before any local step), as the authors take it; rounds
whose updates carry none fall back to the share-weighted mean training loss along the local
paths, which runs below F(w) by the progress made along them, and on streams rises with newly
arrived data rather than with the model.

Each raw estimate enters an exponential moving average ``x ← α x + (1 − α) x_new``. Pure
functions on flat tensors: the planner flattens parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from fedfit.policy.dynamite.bound import Estimates
from fedfit.policy.dynamite.sampling import draw_variance


def pseudo_gradient(start: torch.Tensor, end: torch.Tensor, lr: float, steps: int) -> torch.Tensor:
    """The mean local gradient of a task: ``(start − end) / (lr · steps)``."""
    return (start - end) / (lr * max(1, steps))


def divergence(grads: Sequence[torch.Tensor], shares: Sequence[float]) -> tuple[torch.Tensor, float]:
    """(g, δ): the share-weighted global gradient and Σ p_i ‖g_i − g‖ (shares renormalised)."""
    total = sum(shares)
    weights = [p / total for p in shares]
    g = sum((w * gi for w, gi in zip(weights, grads)), torch.zeros_like(grads[0]))
    return g, sum(w * float(torch.linalg.vector_norm(gi - g)) for w, gi in zip(weights, grads))


def smoothness(g_prev: torch.Tensor, g_now: torch.Tensor, w_prev: torch.Tensor, w_now: torch.Tensor,
               noise: float = 0.0) -> float | None:
    """β from the gradient secant, the expected mini-batch ``noise`` in ‖Δg‖² taken out;
    ``None`` when the model did not move or the noise explains the whole change.

    >>> smoothness(torch.tensor([0.0, 0.0]), torch.tensor([3.0, 4.0]), torch.zeros(2), torch.tensor([1.0, 0.0]), 9.0)
    4.0
    """
    step = float(torch.linalg.vector_norm(w_now - w_prev))
    signal = float(torch.linalg.vector_norm(g_now - g_prev)) ** 2 - noise
    return None if step <= 0 or signal <= 0 else math.sqrt(signal) / step


def dissimilarity(changes: Sequence[tuple[torch.Tensor, float]], step: float) -> float | None:
    """ζ from each device's gradient change (Δg_i, p_i) less the share-weighted mean change.

    >>> dissimilarity([(torch.tensor([3.0, 4.0]), 0.5), (torch.tensor([-3.0, -4.0]), 0.5)], 2.0)
    2.5
    """
    total = sum(p for _, p in changes)
    if step <= 0 or total <= 0:
        return None
    mean = sum((p / total * dg for dg, p in changes), torch.zeros_like(changes[0][0]))
    return sum(p / total * float(torch.linalg.vector_norm(dg - mean)) for dg, p in changes) / step


def lipschitz(g: torch.Tensor) -> float:
    """ρ: the global gradient's norm (a ρ-Lipschitz loss has ‖∇F‖ ≤ ρ)."""
    return float(torch.linalg.vector_norm(g))


def noise_variance(changes: Sequence[tuple[torch.Tensor, float]], beta: float, step: float) -> float | None:
    """σ² from devices seen in two consecutive rounds.

    Args:
        changes: per device, (g_i(t+1) − g_i(t), v_i(t) + v_i(t+1)): the gradient change and
            the variance of its sampling noise in units of σ² (:func:`.sampling.draw_variance`).
        beta: the smoothness estimate.
        step: ‖w(t+1) − w(t)‖.

    Returns:
        The estimate, or ``None`` without devices whose change carries noise.
    """
    kept = [(max(0.0, float(torch.linalg.vector_norm(dg)) ** 2 - (beta * step) ** 2), v) for dg, v in changes if v > 0]
    return sum(r for r, _ in kept) / sum(v for _, v in kept) if kept else None


def smooth(old: float | None, new: float | None, holding: float) -> float | None:
    """Exponential moving average ``holding · old + (1 − holding) · new`` (``None`` sides skipped).

    >>> smooth(None, 2.0, 0.5), smooth(2.0, 4.0, 0.5), smooth(2.0, None, 0.5)
    (2.0, 3.0, 2.0)
    """
    if new is None or not math.isfinite(new):
        return old
    return new if old is None else holding * old + (1 - holding) * new


@dataclass(frozen=True)
class RoundObservation:
    """What one aggregation showed the estimator.

    Attributes:
        start: the global model the devices started from (flat).
        grads: device id → pseudo-gradient.
        samples: device id → samples processed.
        shares: device id → data size (the weight of its gradient).
        loss: the data-weighted mean training loss reported.
        version: the version of ``start`` (-1: unknown).
        steps: device id → local steps taken.
        start_losses: device id → loss of ``start`` on the device's first batch (those that
            reported one; :mod:`.calibrate`).
        turnover: device id → the variance, in units of σ², that the change of the samples it
            holds since its task in the previous observation adds to its gradient change (a
            stream buffer's turnover, :mod:`.turnover`; absent: none).
        sigma2s: device id → its probed per-sample gradient variance (``Update.sigma2``; those
            that reported one).
        curvatures: device id → its probed curvature along the noise, β_σ
            (``Update.noise_curvature``; those that reported one).
    """

    start: torch.Tensor
    grads: dict[int, torch.Tensor]
    samples: dict[int, int]
    shares: dict[int, float]
    loss: float
    version: int = -1
    steps: dict[int, int] = dataclasses.field(default_factory=dict)
    start_losses: dict[int, float] = dataclasses.field(default_factory=dict)
    batches: dict[int, int] = dataclasses.field(default_factory=dict)
    turnover: dict[int, float] = dataclasses.field(default_factory=dict)
    sigma2s: dict[int, float] = dataclasses.field(default_factory=dict)
    curvatures: dict[int, float] = dataclasses.field(default_factory=dict)

    def draw_variance(self, device: int) -> float:
        """The sampling variance of the device's pseudo-gradient in units of σ²: the trainer's
        epochs over its ``shares`` samples when its batch and steps are known, else ``1/n``."""
        if device in self.batches and device in self.steps:
            return draw_variance(int(self.shares[device]), self.batches[device], self.steps[device])
        return 1 / max(1, self.samples[device])


@dataclass(frozen=True)
class EstimatorState:
    """The smoothed estimates and the last observation (to pair with the next).

    Attributes:
        beta, rho, delta, sigma2, loss, zeta, noise_curvature: smoothed estimates (``None``: not
            yet estimated).
        last: the previous observation; its global gradient is ``last_g``.
        last_g: the previous global gradient.
    """

    beta: float | None = None
    rho: float | None = None
    delta: float | None = None
    sigma2: float | None = None
    loss: float | None = None
    zeta: float | None = None
    noise_curvature: float | None = None
    last: RoundObservation | None = None
    last_g: torch.Tensor | None = None

    def estimates(self, prior: Estimates) -> Estimates:
        """The current estimates, ``prior``'s values where none exists yet."""
        def pick(x: float | None, default: float) -> float:
            return default if x is None else x

        return Estimates(beta=pick(self.beta, prior.beta), rho=pick(self.rho, prior.rho),
                         delta=pick(self.delta, prior.delta), sigma2=pick(self.sigma2, prior.sigma2),
                         loss=pick(self.loss, prior.loss), zeta=self.zeta if self.zeta is not None else prior.zeta,
                         noise_curvature=self.noise_curvature if self.noise_curvature is not None
                         else prior.noise_curvature)


def start_loss(obs: RoundObservation) -> float:
    """F0 of one round: the share-weighted mean ``start_loss`` of the devices that reported one,
    else the share-weighted mean training loss ``obs.loss``.

    >>> obs = RoundObservation(start=torch.zeros(1), grads={}, samples={}, shares={1: 3.0, 2: 1.0, 3: 4.0},
    ...                        loss=0.5, start_losses={1: 2.0, 2: 4.0})
    >>> start_loss(obs), start_loss(dataclasses.replace(obs, start_losses={}))
    (2.5, 0.5)
    """
    weighted = [(loss, obs.shares[i]) for i, loss in obs.start_losses.items()
                if i in obs.shares and obs.shares[i] > 0 and math.isfinite(loss)]
    total = sum(w for _, w in weighted)
    return sum(loss * w for loss, w in weighted) / total if total > 0 else obs.loss


def probed_sigma2(obs: RoundObservation) -> float | None:
    """σ² of one round from the devices' probes: their share-weighted mean (``None``: no probe).

    >>> obs = RoundObservation(start=torch.zeros(1), grads={}, samples={}, shares={1: 3.0, 2: 1.0, 3: 4.0},
    ...                        loss=0.5, sigma2s={1: 2.0, 2: 6.0})
    >>> probed_sigma2(obs), probed_sigma2(dataclasses.replace(obs, sigma2s={}))
    (3.0, None)
    """
    return _share_mean(obs.sigma2s, obs.shares)


def probed_noise_curvature(obs: RoundObservation) -> float | None:
    """β_σ of one round from the devices' curvature probes: their share-weighted mean (``None``: none).

    >>> obs = RoundObservation(start=torch.zeros(1), grads={}, samples={}, shares={1: 1.0, 2: 3.0},
    ...                        loss=0.5, curvatures={1: 8.0, 2: 4.0})
    >>> probed_noise_curvature(obs)
    5.0
    """
    return _share_mean(obs.curvatures, obs.shares)


def _share_mean(values: dict[int, float], shares: dict[int, float]) -> float | None:
    weighted = [(s, shares[i]) for i, s in values.items() if i in shares and shares[i] > 0 and math.isfinite(s)]
    total = sum(w for _, w in weighted)
    return sum(s * w for s, w in weighted) / total if total > 0 else None


def observe(state: EstimatorState, obs: RoundObservation, holding: float,
            curvature_holding: float | None = None, sigma_holding: float | None = None) -> EstimatorState:
    """``state`` updated with one aggregation's observation; β_σ is smoothed with
    ``curvature_holding`` and a probed σ² with ``sigma_holding`` (``None``: ``holding``; 0: the
    latest round's probes alone)."""
    ids = sorted(obs.grads)
    if not ids:
        return state
    g, delta = divergence([obs.grads[i] for i in ids], [obs.shares[i] for i in ids])
    probed = probed_sigma2(obs)
    new = dataclasses.replace(state, delta=smooth(state.delta, delta, holding),
                              sigma2=smooth(state.sigma2, probed, holding if sigma_holding is None else sigma_holding),
                              noise_curvature=smooth(state.noise_curvature, probed_noise_curvature(obs),
                                                     holding if curvature_holding is None else curvature_holding),
                              rho=smooth(state.rho, lipschitz(g), holding),
                              loss=smooth(state.loss, start_loss(obs), holding), last=obs, last_g=g)
    prev = state.last
    if prev is None:
        return new
    common = [i for i in ids if i in prev.grads]
    if not common:  # no device in both rounds: nothing to difference
        return new
    g_prev, _ = divergence([prev.grads[i] for i in common], [prev.shares[i] for i in common])
    g_now, _ = divergence([obs.grads[i] for i in common], [obs.shares[i] for i in common])
    total = sum(obs.shares[i] for i in common)
    draws = {i: prev.draw_variance(i) + obs.draw_variance(i) + obs.turnover.get(i, 0.0) for i in common}
    spread = sum((obs.shares[i] / total) ** 2 * draws[i] for i in common)
    beta = smoothness(g_prev, g_now, prev.start, obs.start, noise=(new.sigma2 or 0.0) * spread)
    step = float(torch.linalg.vector_norm(obs.start - prev.start))
    changes = [(obs.grads[i] - prev.grads[i], draws[i]) for i in common]
    sigma2 = new.sigma2 if probed is not None else \
        smooth(state.sigma2, noise_variance(changes, beta if beta is not None else (state.beta or 0.0), step), holding)
    zeta = dissimilarity([(dg, obs.shares[i]) for (dg, _), i in zip(changes, common)], step)
    return dataclasses.replace(new, beta=smooth(state.beta, beta, holding),
                               sigma2=sigma2, zeta=smooth(state.zeta, zeta, holding))
