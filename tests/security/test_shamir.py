"""Shamir sharing: any t shares recover the secret, t − 1 do not, bad inputs are refused."""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedfit.security.secagg.shamir import PRIME, reconstruct, split


@settings(max_examples=30, deadline=None)
@given(secret=st.integers(0, 2**256 - 1), n=st.integers(1, 7), data=st.data())
def test_any_threshold_shares_recover_the_secret(secret: int, n: int, data: st.DataObject) -> None:
    t = data.draw(st.integers(1, n))
    shares = split(secret, n, t, random.Random(data.draw(st.integers(0, 10**6))))
    subset = data.draw(st.permutations(shares))[:t]
    assert reconstruct(subset) == secret


def test_every_threshold_subset_of_a_small_sharing_recovers_it() -> None:
    shares = split(123456789, n=5, threshold=3, rng=random.Random(1))
    assert all(reconstruct(list(c)) == 123456789 for c in itertools.combinations(shares, 3))


def test_fewer_than_threshold_shares_give_a_different_value() -> None:
    shares = split(2**200 + 17, n=5, threshold=3, rng=random.Random(2))
    assert reconstruct(shares[:2]) != 2**200 + 17


def test_a_degree_one_polynomial_is_evaluated_by_hand() -> None:
    # t = 2 with coefficient a: shares (1, s + a), (2, s + 2a); interpolation: 2(s+a) − (s+2a) = s
    shares = split(10, n=2, threshold=2, rng=random.Random(0))
    a = (shares[0][1] - 10) % PRIME
    assert shares[1] == (2, (10 + 2 * a) % PRIME)


@pytest.mark.parametrize(("secret", "n", "t"), [(-1, 3, 2), (PRIME, 3, 2), (5, 3, 4), (5, 3, 0)])
def test_impossible_sharings_are_refused(secret: int, n: int, t: int) -> None:
    with pytest.raises(ValueError):
        split(secret, n, t)


def test_duplicate_shares_are_refused() -> None:
    share = split(5, 3, 2, random.Random(0))[0]
    with pytest.raises(ValueError):
        reconstruct([share, share])
