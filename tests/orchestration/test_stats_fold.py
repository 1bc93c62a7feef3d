"""Channel statistics folded on a thread equal, bit for bit, those folded in line one update at a
time with ``accumulate`` (the reference path), and are complete whenever they are read."""

from __future__ import annotations

import threading

import pytest
import torch

from fedfit.errors import UpdateRejected
from fedfit.models import MLP
from fedfit.models.channel_stats import ChannelStats, accumulate
from fedfit.models.coordinates import CoordinateMap, width_groups
from fedfit.orchestration import stats_fold
from fedfit.orchestration.stats_fold import Fold, StatsFold
from fedfit.orchestration.submodels import SubModelExchange
from fedfit.types import Params, TrainPlan, Update

GROUPS = width_groups(MLP(3, 2, hidden=6))


def _exchange(background: bool, indices: str = "prefix") -> SubModelExchange:
    return SubModelExchange(GROUPS, lambda w: {g.name: g.size for g in width_groups(MLP(3, 2, w, hidden=6))},
                            indices=indices, seed=5, background_stats=background)


def _master(seed: int) -> Params:
    torch.manual_seed(seed)
    return {k: v.detach().clone() for k, v in MLP(3, 2, hidden=6).state_dict().items()}


def _trained(sent: Params, device: int, r: int) -> Params:
    g = torch.Generator().manual_seed(100 * r + device)
    return {k: v + torch.randn(v.shape, generator=g) * (1 + device) for k, v in sent.items()}


def _same(a: ChannelStats, b: ChannelStats) -> bool:
    return a.updates == b.updates and a.scores.keys() == b.scores.keys() and all(
        a.scores[k].dtype == b.scores[k].dtype and torch.equal(a.scores[k], b.scores[k]) for k in a.scores)


def _random_folds(n: int, seed: int) -> list[Fold]:
    g = torch.Generator().manual_seed(seed)
    before = _master(seed)
    folds = []
    for i in range(n):
        if i % 4 == 3:
            folds.append(Fold(count=1 + i % 3))
            continue
        after = {k: v + torch.randn(v.shape, generator=g) for k, v in before.items()}
        folds.append(Fold(before, after, CoordinateMap(GROUPS, {}), float(torch.rand(1, generator=g)) * 10))
    return folds


def _reference(folds: list[Fold]) -> ChannelStats:
    """One update at a time, as the exchange folded them before: ``accumulate`` or a count."""
    stats = ChannelStats.empty(GROUPS)
    for f in folds:
        if f.before is None or f.after is None or f.cmap is None:
            stats = ChannelStats(dict(stats.scores), stats.updates + f.count)
        else:
            stats = accumulate(stats, GROUPS, f.before, f.after, f.cmap, f.weight)
    return stats


@pytest.mark.parametrize("background", [True, False])
def test_batches_flushed_in_turn_equal_folding_one_by_one(background: bool) -> None:
    folds = _random_folds(14, seed=1)
    fold = StatsFold(ChannelStats.empty(GROUPS), GROUPS, background)

    for start, end in ((0, 3), (3, 4), (4, 9), (9, 14)):  # each batch flushed before the next is queued
        for f in folds[start:end]:
            fold.add(f)
        fold.flush()

    assert _same(fold.value, _reference(folds))
    assert fold.value.updates == 11 + (1 + 2 + 3)  # 11 updates scored, 3 counts (i = 3, 7, 11)


def test_a_read_waits_for_the_running_batch_and_folds_what_is_queued() -> None:
    folds = _random_folds(6, seed=2)
    gate = threading.Event()
    fold = StatsFold(ChannelStats.empty(GROUPS), GROUPS)
    fold.add(Fold(count=0))
    real = stats_fold.folded

    def held(stats: ChannelStats, groups: tuple, batch: tuple) -> ChannelStats:  # type: ignore[type-arg]
        gate.wait(5.0)
        return real(stats, groups, batch)

    stats_fold.folded = held  # type: ignore[assignment]
    try:
        for f in folds[:4]:
            fold.add(f)
        fold.flush()  # running on its thread, held at the gate
        for f in folds[4:]:
            fold.add(f)  # queued, not flushed
        threading.Timer(0.05, gate.set).start()
        got = fold.value
    finally:
        stats_fold.folded = real  # type: ignore[assignment]

    assert _same(got, _reference([Fold(count=0), *folds]))


def test_an_error_in_a_background_batch_is_raised_where_the_statistics_are_read() -> None:
    after = _master(0)
    fold = StatsFold(ChannelStats.empty(GROUPS), GROUPS)
    fold.add(Fold({}, after, CoordinateMap(GROUPS, {}), 1.0))  # no master to take the change from
    fold.flush()

    with pytest.raises(KeyError, match="fc1.weight"):
        fold.wait()


def test_setting_the_statistics_replaces_what_was_folded() -> None:
    fold = StatsFold(ChannelStats.empty(GROUPS), GROUPS)
    for f in _random_folds(3, seed=4):
        fold.add(f)
    fold.flush()
    restored = ChannelStats({g.name: torch.full((g.size,), 2.0, dtype=torch.float64) for g in GROUPS}, 7)

    fold.value = restored

    assert _same(fold.value, restored)


def _round(exchange: SubModelExchange, master: Params, r: int, widths: list[float]) -> None:
    """One round through the exchange: plans sent, updates (one non-finite) received together."""
    plans = [TrainPlan(device_id=d, round=r, micro_batch=1, width=w) for d, w in enumerate(widths)]
    sent = exchange.outgoing_many(plans, master)
    updates = []
    for plan, params in zip(plans, sent, strict=True):
        trained = _trained(params, plan.device_id, r)
        if plan.device_id == 2:
            trained["fc2.bias"] = trained["fc2.bias"].clone()
            trained["fc2.bias"][0] = float("nan")
        updates.append(Update(plan.device_id, r, trained, 4, 4, 1, 1, 1, 0.0))
    got = exchange.incoming_many(updates, master, [1.0 + d for d in range(len(updates))])
    assert isinstance(got[2], UpdateRejected) and not any(isinstance(g, UpdateRejected) for g in got[:2] + got[3:])


@pytest.mark.parametrize("indices", ["prefix", "importance"])
def test_an_exchange_folding_on_a_thread_keeps_the_in_line_statistics_and_sub_models(indices: str) -> None:
    threaded, inline = _exchange(True, indices), _exchange(False, indices)
    widths = [1.0, 0.5, 1.0, 0.5, 1.0, 0.75]
    for r in range(4):
        master = _master(10 + r)
        sent = [e.outgoing_many([TrainPlan(device_id=9, round=r, micro_batch=1, width=0.5)], master)[0]
                for e in (threaded, inline)]  # importance: chosen from the statistics so far
        assert sent[0].keys() == sent[1].keys() and all(torch.equal(sent[0][k], sent[1][k]) for k in sent[0])
        _round(threaded, master, r, widths)
        _round(inline, master, r, widths)

    assert _same(threaded.stats, inline.stats)
    assert threaded.stats.updates == 4 * 5
    assert _same(threaded.state().stats, inline.state().stats)


def test_the_next_rounds_sub_models_are_sent_after_the_last_rounds_fold_ended() -> None:
    exchange = _exchange(True)
    gate, ended = threading.Event(), threading.Event()
    real = stats_fold.folded

    def held(stats: ChannelStats, groups: tuple, batch: tuple) -> ChannelStats:  # type: ignore[type-arg]
        gate.wait(5.0)
        out = real(stats, groups, batch)
        ended.set()
        return out

    stats_fold.folded = held  # type: ignore[assignment]
    try:
        _round(exchange, _master(0), 0, [1.0, 1.0, 1.0, 0.5])
        assert not ended.is_set()  # the round's fold runs beside what follows it
        threading.Timer(0.05, gate.set).start()
        exchange.outgoing_many([TrainPlan(device_id=0, round=1, micro_batch=1)], _master(1))
        assert ended.is_set()
    finally:
        stats_fold.folded = real  # type: ignore[assignment]


def test_a_batch_of_counts_alone_is_added_at_once_without_a_thread() -> None:
    fold = StatsFold(ChannelStats.empty(GROUPS), GROUPS)
    threads = threading.active_count()
    fold.add(Fold(count=3))
    fold.add(Fold(count=2))

    fold.flush()

    assert fold._running is None and threading.active_count() == threads
    assert _same(fold.value, ChannelStats(ChannelStats.empty(GROUPS).scores, 5))
