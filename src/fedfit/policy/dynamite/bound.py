"""DYNAMITE's convergence bound as a function of (τ, b_i) under a time and/or energy budget.

Liu et al. 2023, "DYNAMITE: Dynamic Interplay of Mini-Batch Size and Aggregation Frequency for
Federated Learning with Static and Streaming Dataset" (arXiv 2310.14906). With learning rate
η, τ local steps per aggregation, batch b_i on device i (data share p_i = D_i / D) and K
rounds affordable in the budget, the bound on the training error is::

    Φ(τ, b) = F0 / (η K τ)                     optimisation: fewer total steps, larger error
            + β η σ² / 2 · Σ_i p_i² / b_i      mini-batch noise of the aggregated gradient
            + ρ h(τ) / (η τ)                   local models drifting apart between aggregations

    h(τ) = ζ/β · (δ/β · ((ηβ + 1)^τ − 1) − η δ τ)   (Wang et al. 2019's model gap, × ζ/β)

    K = min(T_budget / max_i round_s_i,  E_budget / Σ_i round_j_i)

β is the smoothness, ρ the Lipschitz constant, δ the gradient divergence, σ² the per-sample
gradient variance and F0 the current loss gap (:mod:`.estimate` estimates them online). When the
devices hold stream buffers, 1/b_i becomes the per-step variance of τ steps over the buffer
(:meth:`DeviceCost.noise`, :mod:`.stream`).
Larger batches cut the noise but buy fewer steps; larger τ saves transfers but lets models
drift: :mod:`.search` finds the balance.

Homogeneous closed form. With h(τ) ≈ δ η² ζ τ (τ − 1) / 2 (first order in ηβ) and a round
costing ``τ A (b + h₀) + C`` of the binding budget B, Φ separates into a term in b and one in τ::

    b* = η σ · sqrt(β S B / (2 F0 A)),   S = Σ p_i²
    τ* = sqrt(2 F0 C / (η² B ρ δ ζ))

ζ is the devices' Hessian dissimilarity (β where unknown, Wang et al.'s worst case): see
:func:`drift`. Online, h carries a factor c measured from the global model's loss
(:mod:`.calibrate`); c multiplies ρδζ in τ*.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from fedfit.policy.dynamite.costs import DeviceCost


@dataclass(frozen=True, slots=True)
class Estimates:
    """The convergence quantities the bound needs (all > 0 except where noted).

    Attributes:
        beta: β, smoothness (Lipschitz constant of the gradient).
        rho: ρ, Lipschitz constant of the loss.
        delta: δ, gradient divergence Σ p_i ‖∇F_i − ∇F‖ (≥ 0).
        sigma2: σ², per-sample gradient variance (≥ 0).
        loss: F0, the current loss gap.
        zeta: ζ, Hessian dissimilarity: how differently the devices' gradients change along
            the same step, Σ p_i ‖Δ∇F_i − Δ∇F‖ / ‖Δw‖ (``None``: β, the worst case).
        drift_scale: c, the drift term's factor measured on the run (:mod:`.calibrate`; 1: the
            worst case as derived).
        noise_curvature: β_σ, the loss's curvature along the per-sample gradient noise
            (:mod:`.curvature`; ``None``: not measured).
    """

    beta: float
    rho: float
    delta: float
    sigma2: float
    loss: float
    zeta: float | None = None
    drift_scale: float = 1.0
    noise_curvature: float | None = None

    @property
    def dissimilarity(self) -> float:
        """ζ as the drift uses it: never above β (both bound the same gap; the tighter holds)."""
        return self.beta if self.zeta is None else min(max(0.0, self.zeta), self.beta)


@dataclass(frozen=True, slots=True)
class Budget:
    """What the rest of training may spend; ``None``: unbounded in that currency.

    Attributes:
        time_s: virtual seconds.
        energy_j: joules summed over the fleet.
        whole_rounds: K counts the rounds that finish within the budget, ⌊·⌋ (a round the
            budget cuts short is not aggregated, so a second saved that buys no whole round buys
            nothing: :func:`rounds_within`); ``False``: the continuous ratio.
    """

    time_s: float | None = None
    energy_j: float | None = None
    whole_rounds: bool = False


def drift(tau: int, lr: float, est: Estimates) -> float:
    """h(τ): how far the averaged model drifts from the centralised one in τ steps.

    Wang et al.'s h(τ) scaled by ζ / β: the averaged model leaves the centralised path only as
    far as the devices' gradients *change* differently along their diverging local paths
    (e(s+1) ≤ (1 + ηβ) e(s) + ηζ Σ p_i ‖w_i(s) − v(s)‖ gives η²ζδτ(τ − 1)/2 to first order,
    Wang's h with ζ for β). With ζ = β (unknown) it is Wang's h; with equal Hessians (ζ = 0)
    local gradient descent averages to exactly the centralised path, and h is 0. The result is
    scaled by ``est.drift_scale`` (:mod:`.calibrate`).

    >>> round(drift(2, 0.1, Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=0.0, loss=1.0)), 6)
    0.06
    >>> round(drift(2, 0.1, Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=0.0, loss=1.0, zeta=0.5)), 6)
    0.015
    """
    if est.beta <= 0:
        return 0.0
    x = lr * est.beta
    wang = est.delta / est.beta * ((x + 1) ** tau - 1) - lr * est.delta * tau
    return max(0.0, wang * est.dissimilarity / est.beta * est.drift_scale)


def rounds_affordable(tau: int, batches: Sequence[int], devices: Sequence[DeviceCost], budget: Budget) -> float:
    """K: rounds the budget pays for when every device runs τ steps of its batch (``inf``: no budget)."""
    return rounds_within(budget, max(d.round_s(tau, b) for d, b in zip(devices, batches)),
                         sum(d.round_j(tau, b) for d, b in zip(devices, batches)))


def rounds_within(budget: Budget, round_s: float, round_j: float) -> float:
    """K for rounds of ``round_s`` seconds (the slowest device's) and ``round_j`` fleet joules.

    With ``budget.whole_rounds`` K is the number of whole rounds that fit, ⌊T / round_s⌋ (and
    likewise in joules), where at least one fits; below one round it stays the ratio, so plans
    that fit no round are still ordered by how close they come.

    >>> rounds_within(Budget(time_s=10.0), 3.0, 1.0), rounds_within(Budget(time_s=10.0, whole_rounds=True), 3.0, 1.0)
    (3.3333333333333335, 3)
    >>> rounds_within(Budget(time_s=2.0, whole_rounds=True), 4.0, 1.0)
    0.5
    """
    k = math.inf
    if budget.time_s is not None:
        k = min(k, budget.time_s / round_s)
    if budget.energy_j is not None:
        k = min(k, budget.energy_j / round_j)
    if budget.whole_rounds and 1 <= k < math.inf:
        return math.floor(k * (1 + 1e-9))  # a budget of exactly K rounds affords K despite rounding
    return k


def bound(tau: int, batches: Sequence[int], devices: Sequence[DeviceCost], shares: Sequence[float],
          est: Estimates, lr: float, budget: Budget) -> float:
    """Φ(τ, b): the bound on the training error (smaller is better).

    Args:
        tau: local steps between aggregations (≥ 1).
        batches: b_i per device (≥ 1).
        devices: each device's cost.
        shares: p_i, each device's share of the data (summing to 1).
        est: the convergence quantities.
        lr: η, the local learning rate.
        budget: what training may spend.
    """
    k = rounds_affordable(tau, batches, devices, budget)
    return phi(tau, k, sum(d.noise(p, tau, b) for p, b, d in zip(shares, batches, devices)), est, lr)


def phi(tau: int, k: float, noise_sum: float, est: Estimates, lr: float) -> float:
    """Φ from the rounds the budget affords ``k`` and the noise sum Σ p_i² v_i(τ, b_i) (:func:`bound`'s terms)."""
    optimisation = est.loss / (lr * k * tau) if k > 0 else math.inf
    return optimisation + est.beta * lr * est.sigma2 / 2 * noise_sum + est.rho * drift(tau, lr, est) / (lr * tau)


@dataclass(frozen=True, slots=True)
class RoundShape:
    """A round's cost in the binding budget's currency: ``τ · A · (b + h₀) + C`` per round.

    Attributes:
        per_sample: A (seconds or joules per sample).
        per_step: A · h₀, the fixed cost of a step (under-utilised small batches).
        per_round: C, the cost of one aggregation's transfers.
        budget: B, what may be spent in that currency.
    """

    per_sample: float
    per_step: float
    per_round: float
    budget: float


def closed_form(shape: RoundShape, shares: Sequence[float], est: Estimates, lr: float) -> tuple[float, float]:
    """The homogeneous (τ*, b*) of the first-order bound (real-valued; round and clamp them).

    >>> shape = RoundShape(per_sample=0.01, per_step=0.0, per_round=200.0, budget=100.0)
    >>> t, b = closed_form(shape, [0.5, 0.5], Estimates(1.0, 1.0, 1.0, 4.0, 1.0), lr=0.1)
    >>> round(t, 6), round(b, 6)
    (20.0, 10.0)
    """
    s = sum(p * p for p in shares)
    b = lr * math.sqrt(est.sigma2 * est.beta * s * shape.budget / (2 * est.loss * shape.per_sample))
    denominator = lr * lr * shape.budget * est.rho * est.delta * est.dissimilarity * est.drift_scale
    tau = math.sqrt(2 * est.loss * shape.per_round / denominator) if denominator > 0 else math.inf
    return tau, b
