"""Wire bodies of deployed SecAgg (validated on arrival, like :mod:`fedfit.transport.messages`).

Keys and encrypted shares travel as lowercase hex, the masked input as raw little-endian uint64
words (``application/octet-stream``), the cohort's coordinates as base64 of the packed bits of
its mask over the master's floating parameters (in the master's order).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from fedfit.security.secagg.protocol import NONCE_BYTES, SHARE_BYTES
from fedfit.transport.messages import UpdateReport

#: An encrypted share: nonce, the two packed shares (s-key and b), the AES-GCM tag.
BOX_BYTES = NONCE_BYTES + 2 * (2 + SHARE_BYTES) + 16

Key = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
Box = Annotated[str, Field(pattern=rf"^[0-9a-f]{{{2 * BOX_BYTES}}}$")]
DeviceId = Annotated[int, Field(ge=0, le=10**9)]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class KeysBody(_Body):
    """Round 0: a trained device's two public keys and its training report (no parameters)."""

    c_key: Key
    s_key: Key
    report: UpdateReport


class SharesBody(_Body):
    """Round 1: one encrypted share per roster member, keyed by the recipient's device id."""

    boxes: Annotated[dict[DeviceId, Box], Field(max_length=100_000)]


class Revealed(_Body):
    kind: Literal["b", "s"]
    x: Annotated[int, Field(ge=1, le=65_535)]
    y: Annotated[str, Field(pattern=r"^[0-9a-f]{1,132}$")]


class RevealBody(_Body):
    """Round 3: the shares a survivor reveals, keyed by their owner's device id."""

    shares: Annotated[dict[DeviceId, Revealed], Field(max_length=100_000)]


Phase = Literal["keys", "shares", "masked", "unmask", "done", "aborted"]


class SecAggStatus(_Body):
    """What a cohort member may know now: its phase and that phase's inputs.

    Attributes:
        phase: ``keys`` (cohort not formed yet), ``shares``, ``masked``, ``unmask``, ``done``
            or ``aborted`` (``detail`` says why).
        threshold: t, shares needed to unmask.
        roster: device id → (c, s) public keys of every member that advertised.
        coords: the cohort's coordinates (base64 packed bits over the master's floats).
        length: words in a masked input.
        shared: members whose shares arrived (they mask among themselves).
        inbox: the encrypted shares addressed to this device, by sender (phase ``masked`` on).
        survivors: members whose masked input arrived (phase ``unmask``).
    """

    phase: Phase
    detail: str = ""
    threshold: int = 0
    roster: dict[int, tuple[str, str]] = {}
    coords: str = ""
    length: int = 0
    shared: list[int] = []
    inbox: dict[int, str] = {}
    survivors: list[int] = []
