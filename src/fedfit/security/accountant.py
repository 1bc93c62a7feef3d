"""Privacy accounting for DP-FedAvg, by Google's maintained ``dp-accounting`` library.

Each round samples a cohort of devices (rate q = cohort / fleet) and adds Gaussian noise of
σ times the clipping norm to the sum of their clipped updates: one Poisson-sampled Gaussian
mechanism per round, composed over the rounds (McMahan, Ramage, Talwar and Zhang 2018,
"Learning Differentially Private Recurrent Language Models", ICLR). The accountant is the
Rényi-DP one of Mironov 2017 with the sampled-Gaussian analysis of Mironov, Talwar and Zhang
2019, or the tighter privacy-loss-distribution one; ε is reported at the config's δ for
device-level adjacency (adding or removing one device's whole data).

fedfit invites a fixed-size uniform cohort rather than Poisson-sampling devices; the
accounting treats it as Poisson sampling at the same rate, as DP-FedAvg's analysis does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # imported where used: dp_accounting (scipy) takes ~0.2 s, runs without DP skip it
    import dp_accounting

AccountantKind = Literal["rdp", "pld"]
#: Rényi orders: integers (the fractional ones below 2 fail to converge at large sampling rates).
ORDERS = (*range(2, 129), 160, 192, 256, 512)


def _event(noise_multiplier: float, sampling_rate: float, rounds: int) -> dp_accounting.DpEvent:
    import dp_accounting

    gaussian = dp_accounting.GaussianDpEvent(noise_multiplier)
    per_round = gaussian if sampling_rate >= 1.0 else dp_accounting.PoissonSampledDpEvent(sampling_rate, gaussian)
    return dp_accounting.SelfComposedDpEvent(per_round, rounds)


def _accountant(kind: AccountantKind) -> dp_accounting.PrivacyAccountant:
    from dp_accounting import pld, rdp

    return pld.PLDAccountant() if kind == "pld" else rdp.RdpAccountant(list(ORDERS))


def epsilon(*, noise_multiplier: float, sampling_rate: float, rounds: int, delta: float,
            kind: AccountantKind = "rdp") -> float:
    """ε at ``delta`` after ``rounds`` rounds of the sampled Gaussian mechanism.

    Args:
        noise_multiplier: σ, noise standard deviation over the clipping norm (> 0).
        sampling_rate: q, the share of devices in each round's cohort.
        rounds: rounds aggregated (0: ε = 0).
        delta: the δ of (ε, δ)-DP.
        kind: ``rdp`` or ``pld`` accountant.

    >>> round(epsilon(noise_multiplier=1.3, sampling_rate=256 / 60000, rounds=4687, delta=1e-5), 2)
    1.11
    """
    if rounds <= 0:
        return 0.0
    accountant = _accountant(kind)
    accountant.compose(_event(noise_multiplier, sampling_rate, rounds))
    return float(accountant.get_epsilon(delta))


def noise_for_epsilon(*, target_epsilon: float, sampling_rate: float, rounds: int, delta: float,
                      kind: AccountantKind = "rdp") -> float:
    """The smallest σ whose ``rounds`` rounds stay within ``target_epsilon`` at ``delta``."""
    import dp_accounting

    sigma = dp_accounting.calibrate_dp_mechanism(
        lambda: _accountant(kind), lambda s: _event(s, sampling_rate, rounds), target_epsilon, delta,
        dp_accounting.LowerEndpointAndGuess(1e-3, 1.0), tol=1e-4)
    return float(sigma)
