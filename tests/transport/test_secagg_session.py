"""One cohort's state machine: phases end when all answered or at the deadline, fewer than t
aborts, and bodies of the wrong size, index or kind are refused before they touch the sums."""

from __future__ import annotations

import json

import pytest
import torch

from fedfit.transport.messages import UpdateReport
from fedfit.transport.rejection import Rejected
from fedfit.transport.secagg_messages import BOX_BYTES, RevealBody, SharesBody
from fedfit.transport.secagg_session import Member, Session

REPORT = UpdateReport.model_validate_json(json.dumps({
    "samples_processed": 10, "steps": 1, "micro_batch": 10, "accumulation_steps": 1, "train_loss": 0.1,
    "duration_s": 1.0, "num_examples": 10}))
KEY = bytes(range(32))


def session(n: int = 3) -> Session:
    members = {d: Member(f"t{d}", d, REPORT, (KEY, KEY)) for d in range(n)}
    coords = {"w": torch.tensor([True, False, True])}
    return Session(0, members, coords, threshold=0.6, now=0.0, timeout=5.0)


def shares(s: Session, devices: list[int]) -> None:
    for d in devices:
        s.shares(d, SharesBody(boxes={j: "00" * BOX_BYTES for j in s.members}))


def test_t_is_the_ceiling_of_threshold_times_n_and_the_vector_is_twice_the_coordinates() -> None:
    s = session()
    assert (s.t, s.length) == (2, 4)  # ⌈0.6·3⌉; (w m x, w m) over 2 coordinates


def test_a_phase_ends_when_all_answered_or_at_its_deadline_and_aborts_below_t() -> None:
    s = session()
    shares(s, [0, 1])
    assert not s.advance(4.0) and s.phase == "shares"  # still waiting for device 2
    assert not s.advance(5.5) and s.phase == "masked"  # deadline: goes on with 0 and 1
    s.masked(0, bytes(8 * s.length))
    assert s.advance(11.0) and s.phase == "aborted" and "1 of 2" in s.detail


def test_wrong_sizes_indices_kinds_and_phases_are_refused() -> None:
    s = session()
    with pytest.raises(Rejected, match="one box for each"):
        s.shares(0, SharesBody(boxes={0: "00" * BOX_BYTES}))
    with pytest.raises(Rejected, match="phase 'shares', not 'masked'"):
        s.masked(0, bytes(8 * s.length))
    shares(s, [0, 1, 2])
    with pytest.raises(Rejected) as again:
        shares(s, [0])
    assert again.value.status == 409
    s.advance(1.0)
    with pytest.raises(Rejected, match="expected 32"):
        s.masked(0, bytes(7))
    for d in (0, 1):
        s.masked(d, bytes(8 * s.length))
    s.advance(9.0)  # device 2 dropped after masking
    assert s.phase == "unmask"
    with pytest.raises(Rejected, match="share 's' at x=1"):  # device 2 dropped: its s-key share, not b
        s.reveal(0, RevealBody.model_validate({"shares": {0: {"kind": "b", "x": 1, "y": "1"},
                                                          1: {"kind": "b", "x": 1, "y": "1"},
                                                          2: {"kind": "b", "x": 1, "y": "1"}}}))
    with pytest.raises(Rejected, match="at x=1"):  # device 0's shares sit at x = 1
        s.reveal(0, RevealBody.model_validate({"shares": {0: {"kind": "b", "x": 2, "y": "1"},
                                                          1: {"kind": "b", "x": 2, "y": "1"},
                                                          2: {"kind": "s", "x": 2, "y": "1"}}}))
    with pytest.raises(Rejected, match="takes no part"):
        s.reveal(2, RevealBody.model_validate({"shares": {}}))
