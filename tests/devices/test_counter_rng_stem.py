"""Stems (shared first keys hashed once) give the numbers of the whole key tuples, bit for bit:
checked against the scalar ``uniform``/``normal`` (CPython's tuple hash) and the array path."""

from __future__ import annotations

import numpy as np
import pytest

from fedfit.devices.counter_rng import SCALAR_UP_TO, normal, normals, stem, uniform, uniforms

IDS = np.array([0, 1, 7, 2**40, 2**61 - 2, 2**61 - 1, 2**62, 5, 123_456_789] * 5, dtype=np.int64)  # 45: the array path


def _scalar(*columns: list[int]) -> list[float]:
    return [uniform(*row) for row in zip(*columns, strict=True)]


@pytest.mark.parametrize("n", [1, SCALAR_UP_TO, SCALAR_UP_TO + 1, len(IDS)])
def test_stem_uniforms_equal_the_scalar_hash_of_the_whole_tuple(n: int) -> None:
    ids = IDS[:n]
    blocks = (np.arange(n, dtype=np.int64) * 37 - 50)  # negative keys too
    keys = stem(3, ids)
    assert keys.uniforms(11, -1).tolist() == _scalar([3] * n, ids.tolist(), [11] * n, [-1] * n)
    assert keys.then(11).uniforms(blocks).tolist() == _scalar([3] * n, ids.tolist(), [11] * n, blocks.tolist())
    assert keys.then(11, blocks).uniforms().tolist() == _scalar([3] * n, ids.tolist(), [11] * n, blocks.tolist())
    assert keys.then(11, blocks).uniforms(1).tolist() == uniforms(3, ids, 11, blocks, 1).tolist()


def test_drawing_from_a_stem_leaves_it_unchanged() -> None:
    keys = stem(2, IDS, 4)
    first = keys.uniforms(1).tolist()
    keys.uniforms(9), keys.then(5).uniforms(), keys.normals(3)
    assert keys.uniforms(1).tolist() == first == uniforms(2, IDS, 4, 1).tolist()


def test_stem_broadcasts_a_column_of_devices_against_a_matrix_of_days() -> None:
    ids = IDS[:20]
    days = np.stack([ids % 3 - 1, ids % 5, ids % 7 + 9], axis=1).astype(np.int64)
    found = stem(1, ids[:, None], 6).then(8, days).uniforms(0)
    assert found.shape == (20, 3)
    assert found.tolist() == [[uniform(1, int(d), 6, 8, int(x), 0) for x in row] for d, row in zip(ids, days)]


def test_stem_normals_equal_the_scalar_normals() -> None:
    keys = stem(5, IDS, 2)
    assert keys.normals(-1).tolist() == [normal(5, int(d), 2, -1) for d in IDS]
    assert keys.then(-1).normals().tolist() == normals(5, IDS, 2, -1).tolist()


def test_take_keeps_the_chosen_rows() -> None:
    keys = stem(4, IDS, 1)
    mask = IDS % 2 == 0
    assert keys.take(mask).uniforms(3).tolist() == [uniform(4, int(d), 1, 3) for d in IDS[mask]]
    assert keys.take(np.array([2, 0, 2])).uniforms(3).tolist() == [uniform(4, int(d), 1, 3) for d in IDS[[2, 0, 2]]]


def test_a_stem_of_ints_only_gives_the_scalar_number() -> None:
    assert float(stem(1, 2).uniforms(3)) == uniform(1, 2, 3)
    assert stem(1, 2).then(3).uniforms(np.arange(20)).tolist() == [uniform(1, 2, 3, k) for k in range(20)]


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_zero_dimensional_keys_wrap_without_warnings() -> None:
    big = np.array(2**62 + 12345, dtype=np.int64)  # its lanes overflow 64 bits
    assert float(stem(1, big).uniforms(3)) == uniform(1, 2**62 + 12345, 3)
    assert float(stem(1).then(big, 7).uniforms()) == uniform(1, 2**62 + 12345, 7)
    assert stem(1, IDS).uniforms(np.int64(9)).tolist() == [uniform(1, int(d), 9) for d in IDS]
