"""Streaming arrivals, bounded buffers and concept drift, against hand-worked sequences."""

from __future__ import annotations

import random

import pytest
import torch

from fedfit.data.stream import DataStream, StreamSpec, arrival_times, replace_into


def stream(**kw: object) -> DataStream:
    spec = StreamSpec(**{"rate_per_s": (1.0, 2.0), "buffer_size": 4, "initial": 2, **kw})  # type: ignore[arg-type]
    labels = [torch.tensor([0, 1, 2, 3] * 5), torch.tensor([0, 0, 3, 3] * 5)]
    return DataStream(spec, labels, num_classes=4)


def test_arrivals_follow_rate_initial_and_bursts() -> None:
    assert arrival_times(2.0, 1, 2.0) == [0.0, 0.5, 1.0, 1.5, 2.0]
    assert arrival_times(0.0, 3, 10.0, burst_every_s=4.0, burst_size=2) == [0.0] * 3 + [4.0] * 2 + [8.0] * 2


def test_buffer_grows_with_the_tier_rate_then_stays_bounded() -> None:
    s = stream()
    assert [s.size(0, t) for t in (0.0, 1.0, 2.0, 10.0)] == [2, 3, 4, 4]
    assert s.size(1, 1.0) == 4  # twice the rate: 2 + 2 arrivals
    assert s.buffer(0, 10.0).seen == 12


def test_fifo_keeps_the_newest_samples() -> None:
    held = stream(replacement="fifo").buffer(0, 10.0)
    assert sorted(held.arrived_s) == [7.0, 8.0, 9.0, 10.0]
    assert held.mean_age_s(10.0) == pytest.approx(1.5)


def test_reservoir_replaces_with_probability_b_over_k() -> None:
    # Algorithm R with B = 1: arrival k takes the slot iff randrange(k + 1) == 0
    rng, check = random.Random(5), random.Random(5)
    slots = replace_into("reservoir", 1, 6, rng)
    expected = [0] + [0 if check.randrange(k + 1) < 1 else None for k in range(1, 6)]
    assert slots == expected


def test_random_replacement_always_takes_a_slot() -> None:
    slots = replace_into("random", 3, 50, random.Random(0))
    assert None not in slots and set(slots[3:]) <= {0, 1, 2}


def test_reservoir_is_a_uniform_sample_of_the_stream() -> None:
    # each of 40 arrivals is held with probability B/40 = 1/4: mean kept position ~ the middle
    positions = []
    for seed in range(200):
        s = replace_into("reservoir", 10, 40, random.Random(seed))
        holder = {slot: k for k, slot in enumerate(s) if slot is not None}
        positions += holder.values()
    assert sum(positions) / len(positions) == pytest.approx(19.5, abs=1.0)


def test_drift_shifts_the_label_mix() -> None:
    labels = [torch.tensor([0, 1, 2, 3] * 5)]
    s = DataStream(StreamSpec(rate_per_s=(1.0,), buffer_size=4, initial=1, drift_at_s=5.0), labels, 4)
    early, late = s.buffer(0, 4.0), s.buffer(0, 20.0)
    assert {int(labels[0][i]) for i in early.indices} <= {0, 1}
    assert {int(labels[0][i]) for i in late.indices} <= {2, 3}


def test_same_spec_same_buffer() -> None:
    a, b = stream(replacement="random").buffer(1, 7.5), stream(replacement="random").buffer(1, 7.5)
    assert a == b
