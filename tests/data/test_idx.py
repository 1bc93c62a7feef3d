"""IDX reading and writing: round trips, the byte layout, and errors that name the file."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import numpy as np
import pytest

from fedfit.data.idx import read_idx, write_idx
from fedfit.errors import DataError


@pytest.mark.parametrize("suffix", ["", ".gz"])
@pytest.mark.parametrize(
    "array",
    [
        np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4),
        np.array([-7, 0, 70000], dtype=np.int32),
        np.array([[1.5, -2.25], [0.0, 3.0]], dtype=np.float32),
        np.zeros((0, 28, 28), dtype=np.uint8),
    ],
    ids=["uint8-3d", "int32-1d", "float32-2d", "empty"],
)
def test_write_then_read_returns_the_same_array(
    tmp_path: Path, array: np.ndarray, suffix: str
) -> None:
    path = tmp_path / f"values-idx{suffix}"

    write_idx(path, array)
    loaded = read_idx(path)

    assert loaded.dtype == array.dtype.newbyteorder("=")
    np.testing.assert_array_equal(loaded, array)


def test_write_idx_lays_out_magic_big_endian_dims_then_values(tmp_path: Path) -> None:
    path = tmp_path / "tiny-idx2-ubyte"

    write_idx(path, np.array([[1, 2, 3], [4, 5, 6]], dtype=np.uint8))

    # magic 00 00 08 (ubyte) 02 (dims), then 2 and 3 as big-endian uint32, then the bytes
    expected = bytes([0, 0, 8, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 6])
    assert path.read_bytes() == expected


def test_read_idx_decodes_hand_written_big_endian_int16(tmp_path: Path) -> None:
    path = tmp_path / "shorts-idx1.gz"
    payload = bytes([0, 0, 0x0B, 1, 0, 0, 0, 2, 0x01, 0x02, 0xFF, 0xFE])
    with gzip.open(path, "wb") as stream:
        stream.write(payload)

    loaded = read_idx(path)

    assert loaded.tolist() == [0x0102, -2]


def test_missing_file_raises_data_error_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "absent-idx1-ubyte"

    with pytest.raises(DataError, match=re.escape(str(path))):
        read_idx(path)


def test_truncated_plain_file_raises_data_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "images-idx3-ubyte"
    write_idx(path, np.ones((4, 28, 28), dtype=np.uint8))
    path.write_bytes(path.read_bytes()[:-10])

    with pytest.raises(DataError, match="images-idx3-ubyte"):
        read_idx(path)


def test_truncated_gzip_file_raises_data_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "images-idx3-ubyte.gz"
    write_idx(path, np.arange(4 * 28 * 28, dtype=np.int32).reshape(4, 28, 28))
    path.write_bytes(path.read_bytes()[:-40])

    with pytest.raises(DataError, match=re.escape("images-idx3-ubyte.gz")):
        read_idx(path)


def test_file_cut_inside_the_header_raises_data_error(tmp_path: Path) -> None:
    path = tmp_path / "labels-idx1-ubyte"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0]))

    with pytest.raises(DataError, match="labels-idx1-ubyte"):
        read_idx(path)


@pytest.mark.parametrize("magic", [b"\x01\x00\x08\x01", b"\x00\x00\x07\x01", b"\x00\x00\x08\x00"])
def test_bad_magic_number_raises_data_error(tmp_path: Path, magic: bytes) -> None:
    path = tmp_path / "bad-idx"
    path.write_bytes(magic + b"\x00\x00\x00\x01\x05")

    with pytest.raises(DataError, match="bad-idx"):
        read_idx(path)


def test_write_idx_rejects_a_dtype_idx_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="int64"):
        write_idx(tmp_path / "x-idx", np.zeros(3, dtype=np.int64))


def test_gzip_read_in_one_call_equals_the_stream_and_takes_several_members(tmp_path: Path) -> None:
    array = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)
    path = tmp_path / "images-idx3-ubyte.gz"
    write_idx(path, array)
    with gzip.open(path, "rb") as stream:
        streamed = stream.read()
    raw = streamed
    split = tmp_path / "split-idx3-ubyte.gz"  # the same bytes as two gzip members, which gzip allows
    split.write_bytes(gzip.compress(raw[:1000]) + gzip.compress(raw[1000:]))

    assert np.array_equal(read_idx(path), array) and np.array_equal(read_idx(split), array)


def test_file_named_gz_that_is_not_gzip_raises_data_error(tmp_path: Path) -> None:
    path = tmp_path / "plain-idx1-ubyte.gz"
    write_idx(tmp_path / "plain-idx1-ubyte", np.arange(4, dtype=np.uint8))
    path.write_bytes((tmp_path / "plain-idx1-ubyte").read_bytes())

    with pytest.raises(DataError, match=re.escape("plain-idx1-ubyte.gz")):
        read_idx(path)
