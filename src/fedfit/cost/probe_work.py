"""What DYNAMITE's two probes cost a task, in the cost model's own terms.

The one source of truth for the probes' charge: the task cost model (:func:`fedfit.cost.time.task_cost`,
the virtual clock and the energy a task reports) and DYNAMITE's planner
(:class:`fedfit.policy.dynamite.costs.DeviceCost`, its round times, energy and time shares) both
price a probing task with :func:`probe_units`.

A forward and backward pass over ``m`` samples costs, by the time model
(:func:`~fedfit.cost.time.compute_time_s`: ``m · F`` FLOPs at utilisation ``peak · m / (m + h)``)::

    a · (m + h)    (a = F / (flop/s · peak · thermal): seconds per sample at full utilisation)

so a call's work, in units of ``a`` (per-sample training compute), is ``m + h``: its samples plus
the device's half-saturation batch ``h``, the fixed cost every call pays. What each probe runs, on
a first batch of ``b`` samples drawn from the device's ``D`` (``b ≥ 2`` and ``D ≥ 2``, else the
trainer runs neither):

* the **σ² probe** (:mod:`fedfit.training.probe`): the mean gradients of the batch's halves, two
  forward/backward calls of ``⌊b/2⌋`` and ``b − ⌊b/2⌋`` samples: ``b + 2h``;
* the **curvature probe** (:mod:`fedfit.training.curvature_probe`): one Hessian-vector product
  over the epoch's next batch, ``b' = min(b, D − b)`` samples (the first batch's ``b`` when
  ``D ≤ b``): a gradient with the graph kept and the backward through it, which costs
  :data:`HVP_PASSES` forward/backward passes over the same samples: ``k · (b' + h)``.

A plain step of ``b`` samples (one micro-batch) costs ``b + h`` in the same units, so e.g. at
``b = 8`` and ``h = 4`` the σ² probe is 16/12 = 1.33 steps and the curvature probe 3 steps.
"""

from __future__ import annotations

#: Forward/backward passes' work of one Hessian-vector product by double backward (the gradient
#: with its graph kept, then the backward of ⟨∇L, u⟩ through it) over the same samples. Measured
#: (``bench/probe_charge.py``, bench/RESULTS.md): its FLOPs (``FlopCounterMode``) are 2.0× a
#: forward/backward's for the zoo's logreg, 2.3–2.8× for the MLP, 2.96× for the CNN; its CPU time on
#: one thread 2.3–3.1× for the CNN, where the FLOPs dominate (3.0–4.4× for logreg and the MLP, where
#: each autograd call's fixed cost does). 3: the CNN's, at or above every FLOP count.
HVP_PASSES = 3.0


def curvature_samples(batch: int, examples: int) -> int:
    """``b'``: the samples the curvature probe's Hessian is taken over (the trainer's next batch).

    >>> curvature_samples(8, 100), curvature_samples(8, 12), curvature_samples(8, 6)
    (8, 4, 6)
    """
    rest = min(batch, max(0, examples - batch))
    return rest if rest else min(batch, examples)


def probe_units(batch: int, examples: int, *, curvature: bool, half_batch: float) -> float:
    """The probes' work in units of ``a`` (seconds per sample at full utilisation): ``b + 2h`` for
    the σ² probe, plus ``k · (b' + h)`` with ``curvature``; 0 when the first batch ``batch`` (or the
    device's ``examples``) holds fewer than two samples, as the trainer then runs no probe.

    >>> probe_units(8, 100, curvature=False, half_batch=4.0)
    16.0
    >>> probe_units(8, 100, curvature=True, half_batch=4.0)  # 16 + 3 · 12
    52.0
    >>> probe_units(1, 100, curvature=True, half_batch=4.0)
    0.0
    """
    if batch < 2 or examples < 2:
        return 0.0
    sigma = batch + 2 * half_batch
    return sigma + HVP_PASSES * (curvature_samples(batch, examples) + half_batch) if curvature else sigma


def probe_samples(batch: int, examples: int, *, curvature: bool) -> float:
    """The probes' FLOPs in units of one sample's training FLOPs: ``b``, plus ``k · b'``.

    >>> probe_samples(8, 100, curvature=True)
    32.0
    """
    if batch < 2 or examples < 2:
        return 0.0
    return batch + (HVP_PASSES * curvature_samples(batch, examples) if curvature else 0.0)
