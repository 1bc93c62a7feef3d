"""auto's run-wide rules, each against a hand-computed case."""

from __future__ import annotations

import math

import pytest

from fedfit.policy.auto import (
    DEFAULT_MARGIN, DeviceOutlook, choose_batch, choose_deadline, choose_margin, choose_mode, choose_over_selection,
    decide, quantile,
)


def dev(task_s: float, *, budget: int = 1000, fixed: int = 100, sample: float = 100.0, n: int = 80) -> DeviceOutlook:
    return DeviceOutlook(budget_bytes=budget, fixed_bytes=fixed, sample_bytes=sample, task_s=task_s, num_examples=n)


def test_quantile_interpolates_between_order_statistics() -> None:
    assert quantile([4.0, 1.0, 3.0, 2.0], 0.75) == pytest.approx(3.25)  # position 2.25
    assert quantile([5.0], 0.9) == 5.0
    with pytest.raises(ValueError):
        quantile([], 0.5)


def test_deadline_is_five_quarters_of_the_p75_of_finite_times() -> None:
    devices = [dev(1.0), dev(2.0), dev(3.0), dev(4.0), dev(math.inf)]
    assert choose_deadline(devices) == pytest.approx(1.25 * 3.25)
    assert choose_deadline([dev(math.inf)]) is None


def test_over_selection_makes_up_the_predicted_shortfall() -> None:
    devices = [dev(1.0), dev(2.0), dev(3.0), dev(4.0), dev(math.inf)]
    assert choose_over_selection(devices, 4.0625) == pytest.approx(0.25)  # 4 of 5 on time: 1/0.8 − 1
    assert choose_over_selection(devices, None) == 0.0
    assert choose_over_selection([dev(9.0)], 1.0) == 1.0  # none on time: the cap


def test_margin_shrinks_only_when_it_would_exclude_a_device_that_fits_one_sample() -> None:
    tight = dev(1.0, budget=1000, fixed=700, sample=100.0)  # headroom 0.2 < 0.22
    roomy = dev(1.0, budget=1000, fixed=100, sample=100.0)  # headroom 0.8
    unfit = dev(math.inf, budget=1000, fixed=2000, sample=100.0)  # fits nothing: no say
    assert choose_margin([tight, roomy, unfit]) == pytest.approx(0.18)
    assert choose_margin([roomy, unfit]) == DEFAULT_MARGIN
    assert choose_margin([unfit]) == DEFAULT_MARGIN


@pytest.mark.parametrize("median, batch", [(80, 8), (400, 32), (20, 4), (160, 16)])
def test_batch_gives_the_median_device_ten_steps(median: int, batch: int) -> None:
    devices = [dev(1.0, n=median // 2), dev(1.0, n=median), dev(1.0, n=median * 3)]
    assert choose_batch(devices) == batch


def test_async_when_fedbuffs_valued_rate_beats_sync() -> None:
    # Equal speeds, 4 devices, k = 4, buffer 2: sync folds 4 updates per 2 s = 2/s; FedBuff: a
    # version every V = 1 s (4 V / 2 = 2), each update ⌊2/1⌋ = 2 versions stale, × 3^-½: 1.15/s. Sync.
    assert choose_mode([2.0] * 4, 4, 0.0, None, buffer_size=2) == "sync"
    # Five at 1 s, five at 200 s, k = 2, no over-selection, deadline 2 s: sync rounds end at the
    # 2nd of 2 draws or at 2 s: E[L] = 1 + 0.75 × 1 = 1.75 s, kept E[min(2, Bin(2, ½))] = 1: 0.571/s.
    # FedBuff (buffer 2): V (5 + 5/200) = 2, V = 0.398 s; a 1 s update is ⌊2.51⌋ = 2 versions stale
    # (× 3^-½), a 200 s one 502 (× 503^-½ = 0.0446): 5 × 0.577 + 5 × 0.000223 = 2.888/s. Async.
    wide = [1.0] * 5 + [200.0] * 5
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=2) == "async"
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=6) == "sync"  # 10 < 2 × 6 can train
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=2, async_advantage=5.0) == "async"  # 2.888 > 2.857
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=2, async_advantage=6.0) == "sync"  # 2.888 < 3.43
    # The fast devices' labels skewed by ¾: their 2 versions count as ⌊2 / ½⌋ = 4, × 5^-½: 2.24/s
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=2, async_advantage=4.0,
                       skews=[0.75] * 5 + [0.0] * 5) == "sync"  # 2.24 < 4 × 0.571
    assert choose_mode(wide, 2, 0.0, 2.0, buffer_size=2, async_advantage=4.0) == "async"  # 2.888 > 2.286


def test_async_runs_keep_the_update_budget() -> None:
    # 8 devices at 1 s, k = 6: buffer 3, FedBuff's rate (V = 3/8 s, 2 versions stale, × 3^-½:
    # 4.6/s) beats sync's (6 per 1 s): no — 4.6 < 6, sync, one version per round
    assert decide([dev(1.0)] * 8, clients_per_round=6).rounds_scale == 1.0
    # one fast device beside seven slow ones (k = 2, buffer 2): async, 2 / 2 versions per round
    d = decide([dev(0.1)] + [dev(50.0)] * 7, clients_per_round=2)
    assert d.mode == "async" and d.rounds_scale == 1.0
    d = decide([dev(0.1)] * 2 + [dev(50.0)] * 10, clients_per_round=6)
    assert d.mode == "async" and d.buffer_size == 3 and d.rounds_scale == 2.0  # 6 / 3


def test_decide_on_a_small_fleet() -> None:
    devices = [dev(1.0), dev(2.0), dev(3.0), dev(math.inf, fixed=2000)]
    d = decide(devices, clients_per_round=2, async_advantage=1.2)
    # sync 2 updates per E[2nd of 3 draws of (1, 2, 3)] = 2 s: 1/s; FedBuff (buffer 1): V (1 + ½ + ⅓)
    # = 1, V = 6/11; staleness 1, 3, 5: 2^-½ + 4^-½ / 2 + 6^-½ / 3 = 1.093/s < 1.2 × 1/s
    assert d.mode == "sync" and d.buffer_size == 1
    assert decide(devices, clients_per_round=2).mode == "async"  # 1.093 > 1
    assert d.deadline_s == pytest.approx(3.125)  # 1.25 × p75 of (1, 2, 3) = 1.25 × 2.5
    assert d.over_selection == pytest.approx(0.333)  # 3 of 4 on time
    assert d.width_mode == "fixed"  # nobody beyond 2 × 3.125 s
    assert d.participation == "none"  # every trainable device within the deadline
    assert d.memory_mode == "auto" and not d.defer_unfit  # one device fits no plain sample
    assert d.epoch_budget_s == pytest.approx(1.5625) and d.max_epochs == 3
    assert d.standard_batch == 8 and len(d.reasons) == 9


def test_decide_slow_device_gets_width_and_interval_weights() -> None:
    d = decide([dev(1.0), dev(1.0), dev(1.0), dev(10.0)], clients_per_round=2)
    # deadline 1.25 × p75(1, 1, 1, 10) = 1.25 × 3.25; 10 s > 2 × 4.06 s. Mode: sync invites 3 (1/3
    # over-selection), kept E[min(2, Bin(3, ¾))] = 117/64, E[L] = 1 + 3.0625 × 10/64: 1.24/s; FedBuff
    # (buffer 2): V (3 + 1/10) = 2, V = 0.645 s; 3 × 2^-½ / 1 + 16^-½ / 10 = 2.15/s — async
    assert d.mode == "async"
    assert d.width_mode == "capability" and d.participation == "interval" and d.memory_mode == "off"


def test_no_width_for_a_model_without_one() -> None:
    d = decide([dev(1.0), dev(1.0), dev(1.0), dev(10.0)], clients_per_round=2, scalable_width=False)
    assert d.width_mode == "fixed" and d.participation == "interval"


@pytest.mark.parametrize("k, n, buffer", [(6, 20, 3), (10, 30, 5), (3, 20, 2), (6, 4, 2), (6, 3, 1)])
def test_buffer_is_half_a_cohort_at_most_half_the_trainable(k: int, n: int, buffer: int) -> None:
    assert decide([dev(1.0)] * n, clients_per_round=k).buffer_size == buffer
