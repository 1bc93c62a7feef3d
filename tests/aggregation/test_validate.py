import pytest
import torch

from fedfit.aggregation import validate_masks, validate_params
from fedfit.aggregation.validate import all_finite
from fedfit.errors import UpdateRejected

MASTER = {"w": torch.zeros(2, 3)}


@pytest.mark.parametrize("params, fragment", [
    ({"w": torch.zeros(3, 2)}, "shape"),
    ({"w": torch.zeros(2, 3, dtype=torch.float64)}, "dtype"),
    ({"w": torch.tensor([[0.0, float("nan"), 0.0], [0.0, 0.0, 0.0]])}, "non-finite"),
    ({"w": torch.full((2, 3), float("inf"))}, "non-finite"),
    ({"x": torch.zeros(2, 3)}, "unknown parameter"),
])
def test_bad_update_is_rejected_with_reason(params: dict, fragment: str) -> None:
    with pytest.raises(UpdateRejected, match=fragment):
        validate_params(MASTER, params)


def test_good_update_passes() -> None:
    validate_params(MASTER, {"w": torch.ones(2, 3)})


def test_masks_must_be_boolean_and_shaped_like_their_parameter() -> None:
    params = {"w": torch.zeros(2, 3)}
    validate_masks(params, None)
    validate_masks(params, {"w": torch.ones(2, 3, dtype=torch.bool)})
    for bad in ({"w": torch.ones(3, 2, dtype=torch.bool)}, {"w": torch.ones(2, 3)}, {"v": torch.ones(1, dtype=torch.bool)}):
        with pytest.raises(UpdateRejected):
            validate_masks(params, bad)


def test_finite_values_whose_sum_overflows_still_pass() -> None:
    huge = torch.full((2, 3), 3.0e38)  # each entry finite, their float32 sum is +inf
    assert torch.isinf(huge.sum())
    validate_params(MASTER, {"w": huge})


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_one_non_finite_entry_is_found_in_any_float_dtype(bad: float, dtype: torch.dtype) -> None:
    for position in (0, 57, 199):
        values = torch.randn(200, generator=torch.Generator().manual_seed(position)).to(dtype)
        values[position] = bad
        assert not all_finite(values)
        assert all_finite(torch.cat([values[:position], values[position + 1:]]))


def test_opposite_infinities_are_not_finite() -> None:
    assert not all_finite(torch.tensor([float("inf"), float("-inf"), 1.0]))
