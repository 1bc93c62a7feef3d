"""The server's side of SecAgg, free of any transport: route keys and shares, sum, unmask.

A transport (the simulator's :func:`~fedfit.security.secagg.protocol.secure_sum`, or an HTTP
deployment) moves each round's messages between :class:`~fedfit.security.secagg.protocol.SecAggClient`
objects on the devices and one :class:`SecAggServer`; the server only ever holds public keys,
encrypted shares, masked inputs and the shares survivors reveal for unmasking.
"""

from __future__ import annotations

import numpy as np

from fedfit.security.secagg.primitives import agree, prg, private_key
from fedfit.security.secagg.shamir import Share, reconstruct


class SecAggAborted(Exception):
    """Fewer than the threshold of devices survived to unmask; the cohort's sum is lost."""


class SecAggServer:
    """One SecAgg instance at the server.

    Args:
        threshold: t, shares needed to rebuild a secret (and survivors needed to finish).
        length: words in each masked input.
    """

    def __init__(self, threshold: int, length: int) -> None:
        self.threshold, self.length = threshold, length
        self.roster: dict[int, tuple[bytes, bytes]] = {}
        self.inboxes: dict[int, dict[int, bytes]] = {}
        self.total = np.zeros(length, dtype=np.uint64)
        self.alive: set[int] = set()
        self._revealed: dict[int, tuple[str, list[Share]]] = {}

    def receive_keys(self, device: int, keys: tuple[bytes, bytes]) -> None:
        """Round 0: a device's (c, s) public keys; the roster is broadcast once all are in."""
        self.roster[device] = keys
        self.inboxes.setdefault(device, {})

    def receive_shares(self, sender: int, boxes: dict[int, bytes]) -> None:
        """Round 1: route each encrypted share to its recipient's inbox."""
        for recipient, box in boxes.items():
            self.inboxes.setdefault(recipient, {})[sender] = box

    def receive_masked(self, device: int, masked: np.ndarray) -> None:
        """Round 2: add a masked input (mod 2^64)."""
        self.total = self.total + masked
        self.alive.add(device)

    def survivors(self) -> set[int]:
        """Devices whose masked input arrived (asked to unmask).

        Raises:
            SecAggAborted: fewer than ``threshold`` of them.
        """
        if len(self.alive) < self.threshold:
            raise SecAggAborted(f"{len(self.alive)} of {len(self.roster)} devices survived, "
                                f"threshold {self.threshold}")
        return set(self.alive)

    def receive_unmask(self, revealed: dict[int, tuple[str, Share]]) -> None:
        """Round 3: one survivor's shares, per owner, of b (survivors) or the s-key (dropped)."""
        for owner, (kind, share) in revealed.items():
            expected = "b" if owner in self.alive else "s"
            if kind != expected:
                raise ValueError(f"device {owner}: got a share of '{kind}', expected '{expected}'")
            self._revealed.setdefault(owner, (kind, []))[1].append(share)

    def finish(self) -> np.ndarray:
        """The unmasked sum (uint64 fixed-point codes) of the survivors' inputs."""
        total = self.total
        for owner, (kind, shares) in sorted(self._revealed.items()):
            secret = reconstruct(shares[: self.threshold]).to_bytes(32, "big")
            if kind == "b":
                total = total - prg(secret, self.length)
                continue
            dropped_key = private_key(secret)
            for j in sorted(self.alive):  # survivor j added +PRG(s_jk) if j < k, −PRG(s_jk) otherwise
                mask = prg(agree(dropped_key, self.roster[j][1], b"mask"), self.length)
                total = total - mask if j < owner else total + mask
        return total
