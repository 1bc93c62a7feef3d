"""Calibrating the bound's drift term on the run, from the loss of the global model.

The bound (:mod:`.bound`) is the average over rounds of a per-round descent inequality: a round
of τ steps from the global model w_k, learning rate η, costs the loss::

    F(w_k) − F(w_{k+1}) ≥ η τ (θ_k − N) − ρ h(τ)                                        (1)

where θ_k is the squared gradient norm the round descends along, N = β η σ² Σ p_i² / b_i / 2
the mini-batch noise per step and ρ h(τ) the drift between the averaged and the centralised
model (Wang et al. 2019). Summing (1) over K rounds and dividing by η K τ gives
Φ = F0 / (η K τ) + N + ρ h(τ) / (η τ) (θ's average on the left). h is a worst case; we
replace it by c · h with a factor c measured on the run.

**The measurement.** Every update reports the loss of the model it *received* on its first
batch, before any local step (``Update.start_loss``): an unbiased sample of F_i(w_k). The
share-weighted mean over the devices seen in two consecutive rounds samples F(w_k) − F(w_{k+1})
without the devices' composition changing between the two. With θ_k ≈ ρ² (ρ = ‖g‖, the
bound's own gradient estimate), the part of the planned progress that the round did *not*
deliver is the drift it paid::

    y_k = η τ_k (ρ² − N) − (F(w_k) − F(w_{k+1}))       measured drift cost
    x_k = ρ h(τ_k)                                      the bound's drift cost (c = 1)

If the bound is right about drift (and about the rest), y_k = c x_k with c = 1; c < 1: τ
costs less than the worst case charges. y_k is noisy: the loss samples are single batches
whose noise does not shrink with x_k, so the estimate is the least-squares c of y = c x + ε
(ε of constant variance) with exponential forgetting λ::

    ĉ = Σ λ^(K−k) x_k y_k / Σ λ^(K−k) x_k²

which weights each round by how much drift it could show (x_k²): rounds at small τ, whose
predicted drift is within the loss noise, move ĉ little. The prior c₀ counts as one
observation at the first round's x (y₀ = c₀ x₁, one round older): ĉ₁ = (λ c₀ + y₁ / x₁) / (1 + λ). ĉ is clamped to
[c_min, c_max] (y < 0, a round that did better than planned, pulls it towards c_min). A
round's y and x are computed with the estimates after that round was observed (so ρ, β, δ, ζ
are those the planner extrapolates from); a round whose drift term is 0 (τ = 1) carries no
information on c and is skipped.

**The prior is optimistic** (c₀ = 0 by default: no drift until some is measured). A round
tells about c only in proportion to the drift it could show (its weight is x², and x grows
like τ²), so c is identifiable only at the τ the planner tries. A prior above the truth keeps τ
small, the rounds it observes carry almost no drift, and ĉ falls only as fast as τ creeps up;
a prior below the truth sends τ up at once, to where drift — if there is any — is largest and
best measured, and the first pair of rounds pulls ĉ most of the way (to y/x · 1/(1 + λ)). The
asymmetry (optimism in the face of uncertainty) costs at most the rounds planned before the
first pair, at a τ the remaining budget still pays for; c₀ = 1, the bound's worst case as
derived, is the conservative setting.

In asynchronous mode a "round" is one aggregation: it is paired with the next when that one's
newest updates started from the model it produced (version k + 1), and τ is every task's steps.

What it costs: one float per update (the first step's loss is computed anyway), a dict of the
last round's per-device losses on the server, and O(devices) arithmetic per round.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

from fedfit.policy.dynamite.bound import Estimates, drift
from fedfit.policy.dynamite.curvature import contracted_noise
from fedfit.policy.dynamite.estimate import RoundObservation
from fedfit.policy.dynamite.sampling import step_noise
from fedfit.policy.dynamite.stream import stream_noise


@dataclass(frozen=True, slots=True)
class RoundLoss:
    """One round as the calibration sees it.

    Attributes:
        version: the global model version the round's devices started from.
        losses: device id → loss of that model on the device's first batch.
        shares: device id → the device's data share weight.
        progress: η τ (ρ² − N), the decrease the bound plans without drift.
        drift: ρ h(τ), the bound's drift cost at c = 1.
    """

    version: int
    losses: Mapping[int, float]
    shares: Mapping[int, float]
    progress: float
    drift: float


@dataclass(frozen=True, slots=True)
class Calibration:
    """The drift factor's state.

    Attributes:
        prior: c₀, used until a pair of consecutive rounds was observed (0: optimistic, see above).
        low, high: the clamp on ĉ.
        holding: λ, the forgetting factor of the sums.
        excess: Σ λ^(K−k) x_k y_k, the prior's observation included (``None``: nothing measured yet).
        predicted: Σ λ^(K−k) x_k².
        last: the previous round, to pair with the next.
    """

    prior: float = 0.0
    low: float = 0.0
    high: float = 10.0
    holding: float = 0.9
    excess: float | None = None
    predicted: float | None = None
    last: RoundLoss | None = None

    @property
    def factor(self) -> float:
        """ĉ: the prior until measured, then the clamped ratio of the weighted sums."""
        if self.excess is None or not self.predicted:
            return self.prior
        return min(self.high, max(self.low, self.excess / self.predicted))


def global_decrease(before: RoundLoss, after: RoundLoss) -> float | None:
    """F(w_k) − F(w_{k+1}) over the devices that reported in both rounds (share-weighted).

    >>> a = RoundLoss(0, {1: 2.0, 2: 1.0, 3: 5.0}, {1: 1.0, 2: 3.0, 3: 1.0}, 0.0, 0.0)
    >>> b = RoundLoss(1, {1: 1.0, 2: 0.5}, {1: 1.0, 2: 3.0}, 0.0, 0.0)
    >>> global_decrease(a, b)
    0.625
    """
    common = [i for i in after.losses if i in before.losses]
    total = sum(after.shares[i] for i in common)
    if not common or total <= 0:
        return None
    return sum(after.shares[i] * (before.losses[i] - after.losses[i]) for i in common) / total


def calibrate(state: Calibration, now: RoundLoss) -> Calibration:
    """``state`` with round ``now`` observed: pairs it with the previous round when ``now``
    started from the model that round produced, and updates the weighted sums.

    >>> c = Calibration(prior=1.0, holding=0.5)
    >>> c = calibrate(c, RoundLoss(0, {1: 2.0}, {1: 1.0}, progress=0.5, drift=0.2))
    >>> c = calibrate(c, RoundLoss(1, {1: 1.6}, {1: 1.0}, progress=0.5, drift=0.2))
    >>> round(c.factor, 6)  # y = 0.5 − 0.4 = 0.1, x = 0.2: (½·1 + 0.5) / (1 + ½)
    0.666667
    """
    new = dataclasses.replace(state, last=now)
    prev = state.last
    if prev is None or now.version != prev.version + 1 or prev.drift <= 0 or not math.isfinite(prev.drift):
        return new
    decrease = global_decrease(prev, now)
    if decrease is None or not math.isfinite(decrease) or not math.isfinite(prev.progress):
        return new
    y, x, lam = prev.progress - decrease, prev.drift, state.holding
    excess, predicted = state.excess, state.predicted
    if excess is None or predicted is None:  # the prior: one observation at this x
        excess, predicted = state.prior * x * x, x * x
    return dataclasses.replace(new, excess=lam * excess + x * y, predicted=lam * predicted + x * x)


def round_loss(obs: RoundObservation, est: Estimates, lr: float, *, streaming: bool = False,
               reshuffled: bool = False, contraction: float | None = None) -> RoundLoss:
    """The round ``obs`` for :func:`calibrate`: its devices' start losses, and the progress
    η τ (ρ² − N) and drift ρ h(τ) (at c = 1) the bound plans for it with ``est``.

    τ is the share-weighted mean of the steps the devices took (rounded), N the noise of the
    batches they used (b_i = samples / steps; with ``streaming``, the noise of τ_i steps of b_i
    over the D_i samples the device held, :func:`~fedfit.policy.dynamite.stream.stream_noise`,
    D_i being the update's ``num_examples``, its share weight; with ``reshuffled``, the noise of
    reshuffled epochs over them, :func:`~fedfit.policy.dynamite.sampling.step_noise`; with a
    ``contraction`` q, their noise at the round's end,
    :func:`~fedfit.policy.dynamite.curvature.contracted_noise`).

    >>> obs = RoundObservation(start=None, grads={1: None}, samples={1: 40}, shares={1: 1.0}, loss=1.0,
    ...                        version=3, steps={1: 4}, start_losses={1: 2.0})
    >>> r = round_loss(obs, Estimates(beta=2.0, rho=1.0, delta=3.0, sigma2=10.0, loss=1.0), lr=0.1)
    >>> r.version, round(r.progress, 6), round(r.drift, 6)  # 0.4·(1 − 2·0.1·10/2/10); h(4) by hand
    (3, 0.36, 0.4104)
    """
    total = sum(obs.shares.values())
    shares = {i: p / total for i, p in obs.shares.items()}
    tau = max(1, round(sum(shares[i] * obs.steps.get(i, 1) for i in shares)))
    noise = est.beta * lr * est.sigma2 / 2 * sum(_noise(obs, i, shares[i], streaming, reshuffled, contraction)
                                                     for i in shares)
    uncalibrated = dataclasses.replace(est, drift_scale=1.0)
    return RoundLoss(version=obs.version, losses=dict(obs.start_losses), shares=dict(obs.shares),
                     progress=lr * tau * (est.rho ** 2 - noise), drift=est.rho * drift(tau, lr, uncalibrated))


def _noise(obs: RoundObservation, device: int, share: float, streaming: bool, reshuffled: bool = False,
           contraction: float | None = None) -> float:
    """``device``'s term of N's sum: p_i² × the per-step variance (units of σ²) of its batches."""
    steps, samples = max(1, obs.steps.get(device, 1)), max(1, obs.samples[device])
    held = max(1, round(obs.shares[device]))
    if streaming:
        return share ** 2 * stream_noise(steps, max(1, round(samples / steps)), held)
    batch = obs.batches.get(device) or max(1, round(samples / steps))
    if contraction is not None:
        return share ** 2 * contracted_noise(held, batch, steps, contraction)
    if reshuffled:
        return share ** 2 * step_noise(held, batch, steps)
    return share ** 2 * steps / samples
