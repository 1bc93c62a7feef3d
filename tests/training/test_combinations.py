"""Techniques that cannot be combined are rejected with one line."""

import pytest

from fedfit.errors import PlanError
from fedfit.training.techniques import check_techniques
from fedfit.types import Techniques


def test_composable_techniques_pass() -> None:
    check_techniques(Techniques(checkpointing=True, train_stages=(2, 3), qat_bits=8), 4)


@pytest.mark.parametrize("t, words", [
    (Techniques(keep_fraction=0.5, checkpointing=True), "partial cannot be combined with checkpointing"),
    (Techniques(split_cut=2, qat_bits=8), "split cannot be combined with qat"),
    (Techniques(sparsity=0.5, keep_fraction=0.5), "partial cannot be combined with pruning"),
    (Techniques(split_cut=4), "split cut must be in 1..3"),
])
def test_impossible_plans_raise_one_line(t: Techniques, words: str) -> None:
    with pytest.raises(PlanError, match=words) as err:
        check_techniques(t, 4)
    assert "\n" not in str(err.value)
