"""Staleness discounts s(t − τ): how much an update computed on an old model still counts.

``staleness`` is the number of server model versions applied since the device's starting
version (0 = fresh). The three functions are those of FedAsync (Xie, Koyejo and Gupta 2019,
"Asynchronous Federated Optimization", §5.2):

* ``constant``   — s = 1;
* ``polynomial`` — s = (staleness + 1)^(−a);
* ``hinge``      — s = 1 while staleness ≤ b, then 1 / (a·(staleness − b) + 1).

FedBuff (Nguyen et al. 2022) uses the polynomial form with a = 0.5.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

StalenessKind = Literal["constant", "polynomial", "hinge"]

#: A staleness discount: versions elapsed → factor in (0, 1].
StalenessFn = Callable[[int], float]


@dataclass(frozen=True, slots=True)
class StalenessDiscount:
    """Parameters of a staleness discount.

    >>> StalenessDiscount("polynomial", exponent=0.5)(3)
    0.5
    >>> StalenessDiscount("hinge", hinge_a=1.0, hinge_b=2)(4)
    0.3333333333333333

    Attributes:
        kind: ``constant``, ``polynomial`` or ``hinge``.
        exponent: a of the polynomial form.
        hinge_a: slope a of the hinge form.
        hinge_b: versions b the hinge form tolerates without discount.
    """

    kind: StalenessKind = "constant"
    exponent: float = 0.5
    hinge_a: float = 10.0
    hinge_b: int = 4

    def __call__(self, staleness: int) -> float:
        """The factor s for ``staleness`` versions elapsed (negative counts as 0)."""
        t = max(0, staleness)
        if self.kind == "polynomial":
            return float((t + 1) ** (-self.exponent))
        if self.kind == "hinge":
            return 1.0 if t <= self.hinge_b else 1.0 / (self.hinge_a * (t - self.hinge_b) + 1.0)
        return 1.0
