"""One deployed SecAgg cohort at the server: the four rounds as a state machine over HTTP requests.

The server side is :class:`~fedfit.security.secagg.server.SecAggServer` (it only routes keys and
encrypted shares, sums masked inputs and unmasks); this module adds who may send what when,
and the phase deadlines. Each phase ends when every member it waits for has answered or its
``phase_timeout_s`` has passed; a phase left with fewer than t members aborts the cohort.

    shares  --all shared / timeout-->  masked  --all masked / timeout-->  unmask  --...-->  done
        \\______________ fewer than t members at the end of a phase: aborted _______________/

Members that shared mask among themselves only; members whose masked input arrived are the
survivors: their inputs are summed; members that shared but did not mask are "dropped after
masking" and their pairwise masks are removed with their s-keys rebuilt from the survivors'
shares.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from fedfit.security.secagg.cohorts import Coordinates
from fedfit.security.secagg.primitives import FRACTION_BITS, decode
from fedfit.security.secagg.server import SecAggServer
from fedfit.security.secagg.shamir import PRIME
from fedfit.transport.messages import UpdateReport
from fedfit.transport.rejection import Rejected
from fedfit.transport.secagg_messages import Phase, RevealBody, SecAggStatus, SharesBody
from fedfit.transport.secagg_vectors import pack


@dataclass(frozen=True)
class Member:
    """A device that advertised its keys for one of its tasks."""

    task_id: str
    device: int
    report: UpdateReport
    keys: tuple[bytes, bytes]


class Session:
    """One cohort's protocol state.

    Args:
        round_: the orchestrator round of its tasks.
        members: device id → member (every one advertised).
        coords: the cohort's master coordinates.
        threshold: t as a share of the members (t = ⌈threshold · n⌉, at least 1).
        now: the time the cohort formed; timeout: seconds each phase may last.
    """

    def __init__(self, round_: int, members: dict[int, Member], coords: Coordinates, threshold: float,
                 now: float, timeout: float) -> None:
        self.round, self.members, self.coords, self.timeout = round_, dict(members), coords, timeout
        self.t = max(1, math.ceil(threshold * len(members)))
        self.length = 2 * sum(int(m.sum()) for m in coords.values())
        self.server = SecAggServer(self.t, self.length)
        for device in sorted(members):
            self.server.receive_keys(device, members[device].keys)
        self.phase: Phase = "shares"
        self.detail = ""
        self.deadline = now + timeout
        self.shared: set[int] = set()
        self.revealed: set[int] = set()
        self.total: np.ndarray | None = None
        self._packed = pack(coords)

    def status(self, device: int) -> SecAggStatus:
        """What ``device`` needs in the current phase: that phase's inputs, until it has answered
        (a device waiting for the others gets just the phase)."""
        base = SecAggStatus(phase=self.phase, detail=self.detail, threshold=self.t, length=self.length)
        if self.phase == "shares" and device not in self.shared:
            roster = {d: (c.hex(), s.hex()) for d, (c, s) in self.server.roster.items()}
            return base.model_copy(update={"roster": roster})
        if self.phase == "masked" and device not in self.server.alive:
            return base.model_copy(update={"coords": self._packed, "shared": sorted(self.shared)})
        if self.phase == "unmask" and device not in self.revealed:
            inbox = {s: box.hex() for s, box in self.server.inboxes.get(device, {}).items() if s in self.shared}
            return base.model_copy(update={"inbox": inbox, "survivors": sorted(self.server.alive)})
        return base

    # -- requests ---------------------------------------------------------------------------------
    def shares(self, device: int, body: SharesBody) -> None:
        self._expect(device, "shares", self.members, "already sent its shares", self.shared)
        if set(body.boxes) != set(self.members):
            raise Rejected(422, "bad_secagg_shares", f"shares: need one box for each of the {len(self.members)} "
                                                     f"members {sorted(self.members)[:8]}, got {len(body.boxes)}")
        self.server.receive_shares(device, {j: bytes.fromhex(box) for j, box in body.boxes.items()})
        self.shared.add(device)

    def masked(self, device: int, body: bytes) -> None:
        self._expect(device, "masked", self.shared, "already sent its masked input", self.server.alive)
        if len(body) != 8 * self.length:
            raise Rejected(422, "bad_secagg_masked", f"masked input: {len(body)} bytes, expected "
                                                     f"{8 * self.length} ({self.length} uint64 words)")
        self.server.receive_masked(device, np.frombuffer(body, dtype="<u8").astype(np.uint64))

    def reveal(self, device: int, body: RevealBody) -> None:
        self._expect(device, "unmask", self.server.alive, "already revealed its shares", self.revealed)
        if set(body.shares) != self.shared:
            raise Rejected(422, "bad_secagg_reveal", f"reveal: need a share for each of the {len(self.shared)} "
                                                     "members that shared, no other")
        x = sorted(self.members).index(device) + 1
        revealed: dict[int, tuple[str, tuple[int, int]]] = {}
        for owner, r in body.shares.items():
            want = "b" if owner in self.server.alive else "s"
            y = int(r.y, 16)
            if r.kind != want or r.x != x or y >= PRIME:
                raise Rejected(422, "bad_secagg_reveal", f"reveal: device {owner}: need its share '{want}' at x={x} "
                                                         f"below 2^521-1, got '{r.kind}' at x={r.x}")
            revealed[owner] = (r.kind, (r.x, y))
        self.server.receive_unmask(revealed)
        self.revealed.add(device)

    def _expect(self, device: int, phase: Phase, allowed: set[int] | dict[int, Member], again: str,
                done: set[int]) -> None:
        if self.phase != phase:
            raise Rejected(409, "secagg_phase", f"secagg: the cohort is in phase '{self.phase}', not '{phase}'")
        if device not in allowed:
            raise Rejected(403, "secagg_not_member", f"secagg: device {device} takes no part in phase '{phase}'")
        if device in done:
            raise Rejected(409, "secagg_replay", f"secagg: device {device} {again}")

    # -- phase changes -----------------------------------------------------------------------------
    def advance(self, now: float) -> bool:
        """Move on if the phase is complete or past its deadline; ``True`` when it just ended (done or aborted)."""
        waiting = {"shares": (set(self.members), self.shared), "masked": (self.shared, self.server.alive),
                   "unmask": (set(self.server.alive), self.revealed)}.get(self.phase)
        if waiting is None or (waiting[1] != waiting[0] and now <= self.deadline):
            return False
        if len(waiting[1]) < self.t:
            self.phase, self.detail = "aborted", (f"phase '{self.phase}': {len(waiting[1])} of {len(waiting[0])} "
                                                  f"members answered, threshold {self.t}")
            return True
        self.deadline = now + self.timeout
        if self.phase == "unmask":
            self.total = decode(self.server.finish(), FRACTION_BITS)
            self.phase = "done"
            return True
        self.phase = "masked" if self.phase == "shares" else "unmask"
        return False
