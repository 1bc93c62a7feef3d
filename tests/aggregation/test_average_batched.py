"""The stacked fold of many updates gives the bits of adding them one at a time."""

import numpy as np
import torch

from fedfit.aggregation import Contribution, masked_weighted_average
from fedfit.aggregation.average import ONE_BY_ONE_ABOVE, STACK_ELEMENTS, sequential_sum
from fedfit.types import Params


def one_by_one(master: Params, contributions: list[Contribution]) -> Params:
    """The masked weighted average as a plain loop of float64 ``+=`` (the reference)."""
    out: Params = {}
    for name, old in master.items():
        if not old.is_floating_point():
            out[name] = old.clone()
            continue
        num = torch.zeros_like(old, dtype=torch.float64)
        den = torch.zeros_like(old, dtype=torch.float64)
        for c in contributions:
            if name not in c.params or c.weight <= 0:
                continue
            held = c.masks.get(name) if c.masks else None
            w = c.weight if held is None else c.weight * held.to(torch.float64)
            num += w * c.params[name].to(torch.float64)
            den += w
        out[name] = torch.where(den > 0, num / den.clamp_min(1e-300), old.to(torch.float64)).to(old.dtype)
    return out


def random_round(n: int, shapes: dict[str, tuple[int, ...]], seed: int, dtype: torch.dtype = torch.float32,
                 ) -> tuple[Params, list[Contribution]]:
    """A master and ``n`` contributions of mixed scale, some masked, some missing a name, some weightless."""
    g = torch.Generator().manual_seed(seed)
    master = {name: torch.randn(shape, generator=g, dtype=dtype) for name, shape in shapes.items()}
    contributions = []
    for i in range(n):
        scale = 10.0 ** int(torch.randint(-6, 7, (1,), generator=g))
        params = {name: torch.randn(shape, generator=g, dtype=dtype) * scale for name, shape in shapes.items()
                  if i % 7 != 3 or name != "b"}
        masks = ({name: torch.rand(shape, generator=g) < 0.6 for name, shape in shapes.items() if name in params}
                 if i % 3 == 1 else None)
        weight = 0.0 if i % 11 == 5 else (i % 5 + 1 if i % 2 else float(torch.rand(1, generator=g)) * 100)
        contributions.append(Contribution(params, weight, masks))
    return master, contributions


def assert_same_bits(a: Params, b: Params) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype and torch.equal(a[name], b[name]), name
        assert torch.equal(torch.signbit(a[name]), torch.signbit(b[name])), name


def test_a_round_of_small_updates_folds_to_the_loops_bits() -> None:
    master, contributions = random_round(700, {"w": (10, 32), "b": (10,), "s": ()}, seed=1)

    assert_same_bits(masked_weighted_average(master, contributions), one_by_one(master, contributions))


def test_chunked_and_single_row_folds_match_the_loop() -> None:
    # "w" needs several chunks, "edge" is the largest tensor stacked, "big" is added one update at a time
    shapes = {"w": (STACK_ELEMENTS // 40,), "edge": (ONE_BY_ONE_ABOVE,), "big": (ONE_BY_ONE_ABOVE + 1,), "b": (1,)}
    master, contributions = random_round(90, shapes, seed=2, dtype=torch.float64)

    assert_same_bits(masked_weighted_average(master, contributions), one_by_one(master, contributions))


def test_float64_rounds_masked_and_unmasked_match_the_loop() -> None:
    # float64 results keep every bit of the sums (a float32 model rounds most order effects away)
    master, contributions = random_round(700, {"w": (10, 32), "b": (10,)}, seed=3, dtype=torch.float64)
    unmasked = [Contribution(c.params, c.weight) for c in contributions]

    assert_same_bits(masked_weighted_average(master, contributions), one_by_one(master, contributions))
    assert_same_bits(masked_weighted_average(master, unmasked), one_by_one(master, unmasked))


def test_fold_is_deterministic() -> None:
    master, contributions = random_round(200, {"w": (6, 7)}, seed=4)

    assert_same_bits(masked_weighted_average(master, contributions), masked_weighted_average(master, contributions))


def test_sequential_sum_adds_top_to_bottom() -> None:
    # 2**53 + 1 rounds back to 2**53 each time in order; pairing the ones first would give 2**53 + 2
    rows = np.array([[2.0**53, 0.0], [1.0, 0.5], [1.0, 0.25]])
    column = rows[:, :1].copy()

    assert sequential_sum(rows).tolist() == [2.0**53, 0.75]
    assert sequential_sum(column).tolist() == [2.0**53]


def test_bfloat16_and_zero_dim_tensors_fold_like_the_loop() -> None:
    master = {"h": torch.zeros(5, dtype=torch.bfloat16), "s": torch.tensor(0.0)}
    contributions = [Contribution({"h": torch.full((5,), i / 7, dtype=torch.bfloat16), "s": torch.tensor(i / 3)},
                                  float(i + 1)) for i in range(40)]

    assert_same_bits(masked_weighted_average(master, contributions), one_by_one(master, contributions))


def test_masks_arriving_after_unmasked_chunks_match_the_loop() -> None:
    # a (10, 32) tensor folds STACK_ELEMENTS // 320 updates a chunk: two unmasked chunks, then masked ones
    per_chunk = STACK_ELEMENTS // 320
    master, contributions = random_round(2 * per_chunk + 100, {"w": (10, 32), "one": (1,)}, seed=5, dtype=torch.float64)
    late = [Contribution(c.params, c.weight, c.masks if i >= 2 * per_chunk + 8 else None)
            for i, c in enumerate(contributions)]

    assert_same_bits(masked_weighted_average(master, late), one_by_one(master, late))


def test_large_tensors_folded_one_by_one_match_the_loop_unmasked_and_with_late_masks() -> None:
    # past ONE_BY_ONE_ABOVE values a tensor is folded update by update; its denominator is one
    # number until the first masked update, then per coordinate
    shapes = {"big": (64, 70), "bias": (STACK_ELEMENTS // 4,)}
    for dtype in (torch.float32, torch.float64):
        master, contributions = random_round(30, shapes, seed=6, dtype=dtype)
        unmasked = [Contribution(c.params, c.weight) for c in contributions]
        late = [Contribution(c.params, c.weight, c.masks if i >= 12 else None) for i, c in enumerate(contributions)]

        for round_ in (unmasked, late, contributions):
            assert_same_bits(masked_weighted_average(master, round_), one_by_one(master, round_))


def test_masks_only_on_weightless_updates_are_never_read() -> None:
    # a weightless update holds no coordinate: its masks (even of the wrong shape) change nothing
    master, contributions = random_round(300, {"w": (10, 32), "b": (10,)}, seed=7)
    plain = [Contribution(c.params, c.weight) for c in contributions if c.weight > 0]
    odd = {"w": torch.ones(3, dtype=torch.bool), "b": torch.ones(3, dtype=torch.bool)}
    with_weightless = [*plain[:50], Contribution(plain[0].params, 0.0, odd), *plain[50:]]

    assert_same_bits(masked_weighted_average(master, with_weightless), one_by_one(master, plain))
