"""How much a stream buffer's turnover between two tasks adds to a device's gradient change.

For DYNAMITE's streaming setting (Liu et al. 2023, arXiv 2310.14906), used by the planner when
``dynamite.stream_turnover`` is set.

The estimator (:mod:`.estimate`) reads σ², the per-sample gradient variance, off the part of a
device's pseudo-gradient change ``g_i(t+1) − g_i(t)`` that the smoothness β does not explain,
divided by the sampling variance that change carries in units of σ² (:mod:`.sampling`: the
trainer's shuffled epochs over the D samples the device holds). On static data both tasks draw
from the same D samples, so a task that runs whole epochs carries no sampling noise: its
pseudo-gradient is the mean over the device's data. On a stream the two tasks draw from two
*different* buffers S₀ (at the first task's dispatch, D₀ samples) and S₁ (D₁): c samples kept,
a added, r replaced or dropped. Each buffer's mean gradient deviates from the stream's by its
own samples' deviations, so even two whole-epoch tasks differ by the change of buffer mean::

    ḡ(S₁) − ḡ(S₀) = Σ_kept x_j (1/D₁ − 1/D₀) + Σ_added x_j / D₁ − Σ_removed x_j / D₀

With arrivals drawn independently from the stream (per-sample variance σ² about its mean), the
terms are independent and the change's variance, in units of σ², is::

    u(S₀, S₁) = c (1/D₁ − 1/D₀)² + a / D₁² + r / D₀²

(A stream that cycles through a small partition can hold one sample twice; in general, with
n₀ⱼ and n₁ⱼ copies of sample j, u = Σ_j (n₁ⱼ/D₁ − n₀ⱼ/D₀)², which is what is computed.)

It is independent of the tasks' own sampling noise (that has mean zero given the buffer), so the
gradient change's noise is σ² (v₀ + v₁ + u). Without it a stream's turnover is read as
mini-batch noise of tasks that carry almost none, and σ² comes out too high by the ratio
(v₀ + v₁ + u) / (v₀ + v₁): 50 steps of 8 over a 64-sample buffer have v ≈ 8·10⁻⁵, while three
new samples in a buffer of 30 give u ≈ 3·10⁻³. A concept drift (a shift of the arrivals' label
mix) is not i.i.d. and is still read as noise; only the i.i.d. part is taken out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence


def turnover_variance(before: Sequence[int], after: Sequence[int]) -> float:
    """u(S₀, S₁): the variance, in units of σ², of the change of a buffer's mean gradient from
    holding the samples ``before`` to holding ``after`` (sample identities), arrivals i.i.d.

    >>> turnover_variance([1, 2, 3, 4], [1, 2, 3, 4])  # nothing changed
    0.0
    >>> turnover_variance([1, 2], [1, 2, 3, 4])  # grew by 2: 2 (1/4 − 1/2)² + 2/16
    0.25
    >>> turnover_variance([1, 2, 3, 4], [1, 2, 3, 5])  # one replaced: 1/16 + 1/16
    0.125
    >>> turnover_variance([1, 1], [1, 2])  # a repeated sample: (1/2 − 1)² + (1/2)²
    0.5
    >>> turnover_variance([], [7, 8])  # nothing held before: no change to measure
    0.0
    """
    if not before or not after:
        return 0.0
    old, new = Counter(before), Counter(after)
    d0, d1 = len(before), len(after)
    return sum((new[j] / d1 - old[j] / d0) ** 2 for j in sorted(old.keys() | new.keys()))
