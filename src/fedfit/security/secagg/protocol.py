"""SecAgg in simulation: the server learns only the sum of a cohort's vectors, even with dropouts.

Bonawitz et al. 2017, "Practical Secure Aggregation for Privacy-Preserving Machine Learning"
(CCS), semi-honest variant over a complete graph (Bell et al. 2020, CCS, thin it to a sparse
one; this module keeps every pair). Four rounds, the server only routing and summing:

0. *Advertise keys*: device i sends two X25519 public keys, c_i (share encryption) and s_i (masks).
1. *Share keys*: i draws a self-mask seed b_i, Shamir-splits b_i and its secret s-key t-of-n,
   and sends share j to device j encrypted (AES-GCM) under the key it agrees with c_j.
2. *Masked input*: i sends y_i = x_i + PRG(b_i) + Σ_{j≠i} ±PRG(s_ij) mod 2^64 (+ when i < j), where
   s_ij is the seed i and j agree from their s-keys; x_i is the fixed-point code of its vector.
   Devices that drop here are "dropped after masking".
3. *Unmask*: every survivor reveals, for each other device, the share of b (survivors) or of
   the s-key (the dropped) — never both. With t shares the server rebuilds each survivor's
   b_i and each dropped device's s-key, removes the self-masks and the dropped devices'
   pairwise masks that did not cancel, and decodes Σ_{survivors} x_i.

The device side is :class:`SecAggClient`, the server side
:class:`~fedfit.security.secagg.server.SecAggServer`, one method per round each; :func:`secure_sum`
is the in-memory transport between them. The server never sees an unmasked x_i; fewer than t colluding devices learn nothing of a
share. Key material comes from ``rng`` so simulations are reproducible (a deployment would
draw it from the OS CSPRNG).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from fedfit.security.secagg.primitives import (
    FRACTION_BITS, PUBLIC_KEY_BYTES, agree, decode, encode, prg, private_bytes, private_key, public_bytes,
)
from fedfit.security.secagg.server import SecAggAborted, SecAggServer
from fedfit.security.secagg.shamir import Share, split

SHARE_BYTES = 66  # one GF(2^521 − 1) element
NONCE_BYTES = 12


@dataclass
class Traffic:
    """Bytes each device sent and received over the protocol."""

    sent: dict[int, int] = field(default_factory=dict)
    received: dict[int, int] = field(default_factory=dict)

    def add(self, device: int, *, sent: int = 0, received: int = 0) -> None:
        self.sent[device] = self.sent.get(device, 0) + sent
        self.received[device] = self.received.get(device, 0) + received


@dataclass(frozen=True)
class SecAggResult:
    """What the server ends with.

    Attributes:
        total: Σ of the survivors' vectors (float64, decoded from fixed point).
        survivors: indices whose masked input arrived.
        traffic: bytes per device.
    """

    total: np.ndarray
    survivors: tuple[int, ...]
    traffic: Traffic


class SecAggClient:
    """One device's side of the protocol."""

    def __init__(self, index: int, rng: random.Random) -> None:
        self.index = index
        self.c_key, self.s_key = private_key(rng.randbytes(32)), private_key(rng.randbytes(32))
        self.b_seed = rng.randbytes(32)
        self.roster: dict[int, tuple[bytes, bytes]] = {}

    def advertise(self) -> tuple[bytes, bytes]:
        """Round 0: the public keys (c, s)."""
        return public_bytes(self.c_key), public_bytes(self.s_key)

    def share_keys(self, roster: dict[int, tuple[bytes, bytes]], threshold: int,
                   rng: random.Random) -> dict[int, bytes]:
        """Round 1: encrypted shares of (s-key, b) for every device in ``roster`` (own kept too)."""
        self.roster = dict(roster)
        order = sorted(roster)
        s_shares = split(int.from_bytes(private_bytes(self.s_key), "big"), len(order), threshold, rng)
        b_shares = split(int.from_bytes(self.b_seed, "big"), len(order), threshold, rng)
        out = {}
        for k, j in enumerate(order):
            plain = _pack(s_shares[k]) + _pack(b_shares[k])
            nonce = rng.randbytes(NONCE_BYTES)
            out[j] = nonce + AESGCM(self._channel(j)).encrypt(nonce, plain, _aad(self.index, j))
        return out

    def masked_input(self, codes: np.ndarray) -> np.ndarray:
        """Round 2: y_i = x_i + PRG(b_i) + Σ ±PRG(s_ij) mod 2^64."""
        y = codes + prg(self.b_seed, len(codes))
        for j, (_, s_pk) in self.roster.items():
            if j == self.index:
                continue
            mask = prg(agree(self.s_key, s_pk, b"mask"), len(codes))
            y = y + mask if self.index < j else y - mask
        return y

    def unmask(self, survivors: set[int], inbox: dict[int, bytes]) -> dict[int, tuple[str, Share]]:
        """Round 3: for each sender, the share of b (a survivor) or of the s-key (dropped)."""
        out: dict[int, tuple[str, Share]] = {}
        for sender, box in inbox.items():
            plain = AESGCM(self._channel(sender)).decrypt(box[:NONCE_BYTES], box[NONCE_BYTES:],
                                                          _aad(sender, self.index))
            s_share, b_share = _unpack(plain[: 2 + SHARE_BYTES]), _unpack(plain[2 + SHARE_BYTES:])
            out[sender] = ("b", b_share) if sender in survivors else ("s", s_share)
        return out

    def _channel(self, peer: int) -> bytes:
        return agree(self.c_key, self.roster[peer][0], b"share")


def _pack(share: Share) -> bytes:
    return share[0].to_bytes(2, "big") + share[1].to_bytes(SHARE_BYTES, "big")


def _unpack(data: bytes) -> Share:
    return int.from_bytes(data[:2], "big"), int.from_bytes(data[2:], "big")


def _aad(sender: int, receiver: int) -> bytes:
    return sender.to_bytes(4, "big") + receiver.to_bytes(4, "big")


def secure_sum(vectors: Sequence[np.ndarray], *, threshold: int, dropped: set[int] | frozenset[int] = frozenset(),
               seed: int = 0, fraction_bits: int = FRACTION_BITS) -> SecAggResult:
    """Run SecAgg over ``vectors`` (one per device), ``dropped`` devices leaving after masking.

    The in-memory transport between :class:`SecAggClient` s and a :class:`SecAggServer`, counting
    the bytes each device sends and receives.

    Raises:
        SecAggAborted: fewer than ``threshold`` devices survive.
    """
    rng, n, traffic = random.Random(seed), len(vectors), Traffic()
    clients = [SecAggClient(i, rng) for i in range(n)]
    server = SecAggServer(threshold, len(vectors[0]) if n else 0)
    for c in clients:
        server.receive_keys(c.index, c.advertise())
        traffic.add(c.index, sent=2 * PUBLIC_KEY_BYTES, received=2 * PUBLIC_KEY_BYTES * n)
    for c in clients:
        boxes = c.share_keys(server.roster, threshold, rng)
        server.receive_shares(c.index, boxes)
        for j, box in boxes.items():
            if j != c.index:
                traffic.add(c.index, sent=len(box))
                traffic.add(j, received=len(box))
    for c in clients:
        if c.index not in dropped:
            server.receive_masked(c.index, c.masked_input(encode(vectors[c.index], fraction_bits)))
            traffic.add(c.index, sent=8 * server.length)
    alive = server.survivors()
    for c in clients:
        if c.index in alive:
            server.receive_unmask(c.unmask(alive, server.inboxes[c.index]))
            traffic.add(c.index, sent=(2 + SHARE_BYTES) * n, received=4 * len(alive))
    return SecAggResult(decode(server.finish(), fraction_bits), tuple(sorted(alive)), traffic)
