"""Build the security and privacy pieces of an experiment from its config.

The attack spec for the simulated workload, the combining rule (robust, DP-FedAvg or SecAgg)
for the aggregation rule, and the privacy report for the summary.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from fedfit.aggregation.robust import Combine, RobustSettings, RootUpdate, robust_combine
from fedfit.config import ExperimentConfig
from fedfit.errors import ConfigError
from fedfit.security.accountant import epsilon, noise_for_epsilon
from fedfit.security.attacks import AttackSpec
from fedfit.security.central_dp import CentralDP
from fedfit.simulation.workload import Workload
from fedfit.training import train
from fedfit.training.dp_sgd import LocalDP
from fedfit.types import DeviceProfile, Params, TrainPlan


def attack_spec(config: ExperimentConfig, profiles: list[DeviceProfile]) -> AttackSpec:
    """The ``attack`` section as an :class:`AttackSpec` (malicious ids resolved).

    Raises:
        ConfigError: a device id outside the fleet or a tier the fleet does not have.
    """
    a, n = config.attack, len(profiles)
    bad = [d for d in a.devices if d >= n]
    if bad:
        raise ConfigError(f"attack.devices: no device {bad[0]} (fleet has {n})")
    tiers = {p.tier for p in profiles}
    unknown = [t for t in a.tiers if t not in tiers]
    if unknown:
        raise ConfigError(f"attack.tiers: the fleet has no tier '{unknown[0]}'")
    drawn = np.random.default_rng([config.seed, 17]).permutation(n)[: round(a.fraction * n)]
    chosen = {int(d) for d in drawn} | set(a.devices) | {i for i, p in enumerate(profiles) if p.tier in a.tiers}
    return AttackSpec(a.kind, frozenset(chosen), a.scale, a.boost, a.poison_fraction, a.target_class, config.seed)


def root_update(config: ExperimentConfig, workload: Workload) -> RootUpdate:
    """FLTrust's server training: ``root_samples`` clean samples drawn from the devices' data."""
    r, t = config.aggregation.robust, config.training
    x = torch.cat([d.x for d in workload.data.train])
    y = torch.cat([d.y for d in workload.data.train])
    chosen = torch.randperm(len(x), generator=torch.Generator().manual_seed(config.seed + 31))[: r.root_samples]
    root_x, root_y = x[chosen], y[chosen]
    plan = TrainPlan(device_id=config.num_devices, round=0, micro_batch=min(t.batch_size, len(chosen)),
                     local_epochs=r.root_epochs, lr=t.lr)

    def update(master: Params) -> Params:
        return train(workload.module(1.0), master, root_x, root_y, plan, seed=config.seed,
                     optimizer=workload.recipe.optimizer).params

    return update


def sampling_rate(config: ExperimentConfig) -> float:
    """q: the share of the fleet invited per aggregation."""
    o = config.orchestration
    cohort = config.asynchronous.buffer_size if o.mode == "async" else math.ceil(
        o.clients_per_round * (1 + o.over_selection))
    return min(1.0, cohort / config.num_devices)


def _cohort_size(config: ExperimentConfig) -> int:
    """Updates one aggregation folds: k in sync rounds, the buffer in FedBuff, 1 in FedAsync."""
    if config.orchestration.mode == "async":
        return 1 if config.asynchronous.algorithm == "fedasync" else config.asynchronous.buffer_size
    return config.orchestration.clients_per_round


def noise_multiplier(config: ExperimentConfig) -> float:
    """σ of the ``privacy.central`` section: given, or calibrated to ``target_epsilon``."""
    c = config.privacy.central
    if c.noise_multiplier is not None:
        return c.noise_multiplier
    assert c.target_epsilon is not None
    return noise_for_epsilon(target_epsilon=c.target_epsilon, sampling_rate=sampling_rate(config),
                             rounds=config.orchestration.rounds, delta=c.delta, kind=c.accountant)


def check_security(config: ExperimentConfig) -> None:
    """Raise :class:`ConfigError` for combinations that cannot work together."""
    r, p = config.aggregation.robust, config.privacy
    robust = r.rule != "mean" or r.clip != "none"
    if p.secure_aggregation.enabled and robust:
        raise ConfigError("privacy.secure_aggregation: cannot combine with aggregation.robust (rule "
                          f"'{r.rule}', clip '{r.clip}'): robust rules need each device's update and SecAgg "
                          "shows the server only the sum")
    if p.secure_aggregation.enabled and _cohort_size(config) < p.secure_aggregation.min_cohort:
        raise ConfigError(f"privacy.secure_aggregation: an aggregation folds {_cohort_size(config)} update(s), "
                          f"fewer than min_cohort {p.secure_aggregation.min_cohort}: a sum of so few reveals them")
    if p.central.enabled and robust:
        raise ConfigError("privacy.central: DP-FedAvg clips and averages itself; set aggregation.robust.rule "
                          "to mean and clip to none")
    if p.central.enabled and (p.central.noise_multiplier is None) == (p.central.target_epsilon is None):
        raise ConfigError("privacy.central: give exactly one of noise_multiplier and target_epsilon")
    if p.local.enabled and (config.model.norm != "none" or config.memory.mode != "off"):
        raise ConfigError("privacy.local: DP-SGD needs model.norm: none and memory.mode: off "
                          "(per-sample gradients of batch-norm or memory-technique programs are not supported)")


def local_dp(config: ExperimentConfig) -> LocalDP | None:
    """DP-SGD settings of ``privacy.local`` (``None`` when off)."""
    check_security(config)
    c = config.privacy.local
    return LocalDP(c.clip_norm, c.noise_multiplier, config.seed) if c.enabled else None


def security_combine(config: ExperimentConfig, workload: Workload) -> Combine:
    """The combining rule the config asks for (the plain masked average by default)."""
    check_security(config)
    p, r = config.privacy, config.aggregation.robust
    s = p.secure_aggregation
    if s.enabled:  # imported here: SecAgg's key agreement loads cryptography, which a run without it never needs
        from fedfit.security.secagg.cohorts import SecureAggregate
        from fedfit.security.secagg.private_sum import SecureCentralDP

        secure = SecureAggregate(s.threshold, s.dropout, s.min_cohort, config.seed)
        # with central DP, devices clip before masking and the server noises the sum
        return SecureCentralDP(secure, p.central.clip_norm, noise_multiplier(config), config.seed) \
            if p.central.enabled else secure
    if p.central.enabled:
        return CentralDP(p.central.clip_norm, noise_multiplier(config), config.seed)
    settings = RobustSettings(r.rule, r.clip, r.clip_bound, r.clip_quantile, r.trim_fraction, r.byzantine,
                              r.krum_keep, r.iterations)
    return robust_combine(settings, root_update(config, workload) if r.rule == "fltrust" else None)


def privacy_summary(config: ExperimentConfig, rounds: int, examples: int) -> dict[str, Any]:
    """``{"privacy": {...}}``: central DP's device-level ε after ``rounds`` aggregations, and local
    DP-SGD's sample-level ε for a device of ``examples`` samples taking part in every round."""
    c, loc, out = config.privacy.central, config.privacy.local, dict[str, Any]()
    if c.enabled:
        sigma = noise_multiplier(config)
        eps = epsilon(noise_multiplier=sigma, sampling_rate=sampling_rate(config), rounds=rounds, delta=c.delta,
                      kind=c.accountant)
        out.update({"epsilon": eps, "delta": c.delta, "noise_multiplier": sigma, "clip_norm": c.clip_norm,
                    "sampling_rate": sampling_rate(config), "rounds": rounds, "accountant": c.accountant})
    if loc.enabled and loc.noise_multiplier > 0:
        batch = min(config.training.batch_size, max(examples, 1))
        steps = rounds * config.training.local_epochs * math.ceil(max(examples, 1) / batch)
        eps = epsilon(noise_multiplier=loc.noise_multiplier, sampling_rate=batch / max(examples, 1), rounds=steps,
                      delta=loc.delta)
        out["local"] = {"epsilon": eps, "delta": loc.delta, "noise_multiplier": loc.noise_multiplier,
                        "clip_norm": loc.clip_norm, "steps": steps, "examples": examples}
    return {"privacy": out} if out else {}
