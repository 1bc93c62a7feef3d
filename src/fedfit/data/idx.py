"""The IDX file format of MNIST and Fashion-MNIST: read and write, plain or gzip.

An IDX file is a 4-byte magic number ``0x00 0x00 <type code> <ndim>``, then ``ndim``
big-endian ``uint32`` dimension sizes, then the values in C order, big-endian. The format
is described at http://yann.lecun.com/exdb/mnist/ (section "The IDX file format").
A path ending in ``.gz`` is read and written through gzip.

>>> import tempfile, numpy as np
>>> path = Path(tempfile.mkdtemp()) / "tiny-idx1-ubyte.gz"
>>> write_idx(path, np.array([3, 1, 4], dtype=np.uint8))
>>> read_idx(path).tolist()
[3, 1, 4]
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

import numpy as np

from fedfit import prefetch
from fedfit.errors import DataError

#: IDX type code → big-endian numpy dtype.
_DTYPE_BY_CODE: dict[int, np.dtype[np.generic]] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_CODE_BY_KIND_SIZE: dict[tuple[str, int], int] = {
    (dtype.kind, dtype.itemsize): code for code, dtype in _DTYPE_BY_CODE.items()
}


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (plain, or gzip when the name ends in ``.gz``) into an array.

    Args:
        path: The file to read.

    Returns:
        The values, shaped as the header says, in native byte order (``uint8`` for the
        image and label files of MNIST and Fashion-MNIST).

    Raises:
        DataError: The file is missing, not valid gzip, has a malformed header, or holds
            more or fewer bytes than its header announces. The message names the file.
    """
    path = Path(path)
    payload = _read_bytes(path)
    dtype, shape, offset = _parse_header(path, payload)
    expected_bytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(payload) - offset != expected_bytes:
        raise DataError(
            f"malformed IDX file {path}: header announces {expected_bytes} data bytes "
            f"for shape {shape}, found {len(payload) - offset} (truncated or corrupt download?)"
        )
    values = np.frombuffer(payload, dtype=dtype, offset=offset).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def write_idx(path: str | Path, array: np.ndarray) -> None:
    """Write an array as an IDX file (gzip when the name ends in ``.gz``).

    Args:
        path: Where to write; parent folders must exist.
        array: Values of a type IDX can hold: ``uint8``, ``int8``, ``int16``, ``int32``,
            ``float32`` or ``float64``; at least one dimension.

    Raises:
        DataError: The array's dtype or rank cannot be written as IDX.
    """
    path = Path(path)
    code = _CODE_BY_KIND_SIZE.get((array.dtype.kind, array.dtype.itemsize))
    if code is None or not 1 <= array.ndim <= 255:
        raise DataError(f"cannot write {path} as IDX: dtype {array.dtype}, {array.ndim} dims")
    header = bytes([0, 0, code, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    body = np.ascontiguousarray(array, dtype=_DTYPE_BY_CODE[code]).tobytes()
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as stream:
            stream.write(header + body)
    else:
        path.write_bytes(header + body)


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when the name ends in ``.gz``."""
    prefetched = prefetch.take(path)  # read on a thread while the program started (fedfit.prefetch)
    if prefetched is not None:
        return prefetched
    try:
        # a .gz in one call, not gzip.open's 8 KB reads: zlib releases the GIL for the whole
        # file, so another thread (a run's traces, fedfit.overlap) runs meanwhile
        return prefetch.file_bytes(path)
    except FileNotFoundError:
        raise DataError(f"IDX file not found: {path}") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"cannot read IDX file {path}: {exc} (truncated or corrupt?)") from None


def _parse_header(path: Path, payload: bytes) -> tuple[np.dtype[np.generic], tuple[int, ...], int]:
    """The dtype, shape and data offset the header of ``payload`` announces."""
    if len(payload) < 4 or payload[0] != 0 or payload[1] != 0:
        raise DataError(f"malformed IDX file {path}: bad magic number (not an IDX file?)")
    code, ndim = payload[2], payload[3]
    if code not in _DTYPE_BY_CODE or ndim == 0:
        raise DataError(f"malformed IDX file {path}: unknown type code {code:#04x} or 0 dims")
    offset = 4 + 4 * ndim
    if len(payload) < offset:
        raise DataError(f"malformed IDX file {path}: header cut short (truncated file?)")
    shape = struct.unpack(f">{ndim}I", payload[4:offset])
    return _DTYPE_BY_CODE[code], tuple(int(size) for size in shape), offset
