"""Retry back-off: how long a device whose tasks keep failing waits before its next invitation.

A device that fails once (offline for a moment, out of memory while an app held its RAM) is
worth retrying soon; one that fails every time (its memory never fits the plan) should cost
the server less and less. The wait doubles with each failure in a row and is capped, as in
the exponential back-off of network protocols (Metcalfe and Boggs 1976, Ethernet):

    delay(n) = min(base · factor^(n−1), cap)    for the n-th failure in a row (n ≥ 1)

A success resets n to 0 (:attr:`fedfit.devices.registry.DeviceHistory.failure_streak`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential back-off with a cap.

    Attributes:
        base_s: virtual seconds after the first failure.
        cap_s: the longest wait, whatever the streak.
        factor: growth per further failure in a row (1: a constant wait).
    """

    base_s: float = 60.0
    cap_s: float = 3600.0
    factor: float = 2.0

    def delay_s(self, failures_in_row: int) -> float:
        """Virtual seconds to wait after the ``failures_in_row``-th failure in a row (0: none).

        >>> b = Backoff(base_s=60.0, cap_s=300.0)
        >>> [b.delay_s(n) for n in range(6)]
        [0.0, 60.0, 120.0, 240.0, 300.0, 300.0]
        """
        if failures_in_row <= 0 or self.base_s <= 0:
            return 0.0
        if self.factor <= 1.0:
            return min(self.base_s, self.cap_s)
        # cap the exponent before raising, so a long streak cannot overflow a float
        grow = 1.0
        for _ in range(failures_in_row - 1):
            grow *= self.factor
            if self.base_s * grow >= self.cap_s:
                return self.cap_s
        return min(self.base_s * grow, self.cap_s)
