"""SecAgg: the exact sum with 30% of a cohort dropped after masking; masked inputs hide each vector;
heterogeneous updates give the masked weighted average."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from fedfit.aggregation import Contribution, masked_weighted_average
from fedfit.security.secagg.cohorts import SecureAggregate, cohorts
from fedfit.security.secagg.primitives import FRACTION_BITS, decode, encode
from fedfit.security.secagg.protocol import SecAggClient, secure_sum
from fedfit.security.secagg.server import SecAggAborted, SecAggServer


def _vectors(n: int, size: int = 200, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(scale=3.0, size=size) for _ in range(n)]


def test_sum_is_exact_with_30_percent_of_the_cohort_dropped_after_masking() -> None:
    vectors = _vectors(10)
    dropped = {2, 5, 9}
    result = secure_sum(vectors, threshold=6, dropped=dropped, seed=4)
    # reference: the survivors' fixed-point codes summed in plain integers
    codes = sum(np.round(v * 2.0**FRACTION_BITS).astype(np.int64) for i, v in enumerate(vectors) if i not in dropped)
    assert np.array_equal(result.total, codes / 2.0**FRACTION_BITS)
    assert result.survivors == (0, 1, 3, 4, 6, 7, 8)


def test_too_many_dropouts_abort_the_cohort() -> None:
    with pytest.raises(SecAggAborted):
        secure_sum(_vectors(10), threshold=6, dropped={0, 1, 2, 3, 4})


def test_a_masked_input_looks_nothing_like_the_vector() -> None:
    import random

    rng = random.Random(0)
    clients = [SecAggClient(i, rng) for i in range(3)]
    roster = {c.index: c.advertise() for c in clients}
    for c in clients:
        c.share_keys(roster, 2, rng)
    codes = encode(np.zeros(1000))
    masked = clients[0].masked_input(codes)
    # a uniform 64-bit mask: about half the bits of each word set, not the zeros sent
    bits = np.unpackbits(masked.view(np.uint8)).mean()
    assert 0.45 < bits < 0.55 and not np.array_equal(masked, codes)


def test_fixed_point_round_trip_is_exact_for_dyadic_values() -> None:
    values = np.array([0.5, -3.25, 1024.0, -1.0 / 2**FRACTION_BITS])
    assert np.array_equal(decode(encode(values)), values)


def _hetero(n: int) -> tuple[dict[str, torch.Tensor], list[Contribution]]:
    g = torch.Generator().manual_seed(0)
    master = {"a": torch.zeros(3, 4), "b": torch.zeros(4), "step": torch.tensor(3)}
    half = {"a": torch.tensor([[True] * 4, [True] * 4, [False] * 4]), "b": torch.tensor([True, True, False, False])}
    out = []
    for i in range(n):
        params = {"a": torch.randn(3, 4, generator=g), "b": torch.randn(4, generator=g), "step": torch.tensor(3)}
        out.append(Contribution(params, float(i + 1), half if i % 2 else None))
    return master, out


def test_secure_aggregate_equals_the_masked_weighted_average_of_width_groups() -> None:
    master, contributions = _hetero(10)
    secure = SecureAggregate(min_cohort=3)(master, contributions)
    plain = masked_weighted_average(master, contributions)
    for name in ("a", "b"):
        assert torch.allclose(secure[name], plain[name], atol=1e-6)
    assert torch.equal(secure["step"], master["step"])


def test_a_lone_width_joins_a_mixed_cohort_and_still_averages_exactly() -> None:
    master, contributions = _hetero(6)
    lone = Contribution(contributions[0].params, 2.0, {"a": torch.zeros(3, 4, dtype=torch.bool)})
    everyone = [*contributions, lone]
    assert [len(m) for m, _ in cohorts(master, everyone, min_cohort=3)] == [7]
    secure = SecureAggregate(min_cohort=3)(master, everyone)
    plain = masked_weighted_average(master, everyone)
    assert all(torch.allclose(secure[n], plain[n], atol=1e-6) for n in ("a", "b"))


def test_dropped_devices_are_left_out_of_the_average() -> None:
    master, contributions = _hetero(10)
    secure = SecureAggregate(min_cohort=3, dropout=0.4)(master, contributions)
    plain = masked_weighted_average(master, contributions)
    assert not torch.allclose(secure["a"], plain["a"], atol=1e-3)  # 2 of each width group missing
    assert torch.isfinite(secure["a"]).all()


def test_the_server_refuses_a_share_that_would_unmask_a_survivor() -> None:
    server = SecAggServer(threshold=1, length=4)
    server.receive_masked(0, np.zeros(4, dtype=np.uint64))
    with pytest.raises(ValueError, match="expected 'b'"):
        server.receive_unmask({0: ("s", (1, 5))})
