"""A run's data set files read on a thread while the program is still importing torch.

``fedfit run CONFIG`` spends its first seconds importing torch and fedfit's modules, on one
core. When the config names Fashion-MNIST, :func:`for_command` (called by
:mod:`fedfit.entry` before those imports) starts reading and decompressing its four IDX files
on a thread; ``zlib`` releases the interpreter lock for a whole file, so on a machine with a
free core the read costs no wall time. :func:`fedfit.data.idx.read_idx` then takes the bytes
(:func:`take`) instead of reading the file again, once, and only while the file is unchanged
(same path, size and modification time); otherwise, or when the read failed, it reads the file
itself and reports any error as it always does. Nothing is written to disk, and the values are
those of reading the file (the bytes are the file's). A config this module cannot read, or a
data set named only by an included file or an unusual override, is simply not prefetched.

This module imports neither torch nor numpy.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from fedfit.overlap import Pending, started

#: Where Debian's ``dataset-fashion-mnist`` package puts the IDX files (defined here, where torch
#: is not imported; :mod:`fedfit.data.datasets` takes it from here).
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
FASHION_MNIST_STEMS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                       "t10k-labels-idx1-ubyte")

_Key = tuple[str, int, int]
_pending: dict[_Key, Pending[bytes]] = {}
_lock = threading.Lock()


def file_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed (in one ``zlib`` call) when the name ends in ``.gz``."""
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _key(path: Path) -> _Key | None:
    try:
        stat = path.stat()
        return str(path.resolve()), stat.st_size, stat.st_mtime_ns
    except OSError:
        return None


def start(paths: Iterable[Path]) -> None:
    """Start reading each existing file of ``paths`` on a thread (one thread per file)."""
    for path in paths:
        key = _key(path)
        with _lock:
            if key is not None and key not in _pending:
                _pending[key] = started(file_bytes, path)


def take(path: Path) -> bytes | None:
    """The bytes :func:`start` read for ``path`` (waiting for them), handed out once; ``None``
    when nothing was started for the file as it is now, or the read failed."""
    key = _key(path)
    with _lock:
        pending = _pending.pop(key, None) if key is not None else None
    if pending is None:
        return None
    try:
        return pending.result()
    except Exception:  # the caller reads the file itself and reports what is wrong with it
        return None


def start_dataset(dataset: object, folder: object = None) -> None:
    """Start reading the files of ``dataset`` in ``folder`` (``None``: its default folder):
    Fashion-MNIST's four IDX files, plain or gzipped; other data sets have none to read."""
    if dataset != "fashion_mnist":
        return
    root = Path(str(folder)) if folder is not None else Path(FASHION_MNIST_DIR)
    start(next((p for p in (root / stem, root / f"{stem}.gz") if p.is_file()), root / stem)
          for stem in FASHION_MNIST_STEMS)


def for_command(argv: Sequence[str]) -> None:
    """:func:`start_dataset` for ``fedfit run CONFIG [--set data.dataset=... --set data.path=...]``;
    any other command, or a config it cannot read, starts nothing (the command reports errors)."""
    try:
        _for_command(argv)
    except Exception:  # only a head start: whatever went wrong, the command reads the files itself
        return


def _for_command(argv: Sequence[str]) -> None:
    if len(argv) < 2 or argv[0] != "run" or argv[1].startswith("-"):
        return
    from fedfit.bounded import MAX_CONFIG_BYTES, load_yaml, read_text

    try:
        config = load_yaml(read_text(Path(argv[1]), MAX_CONFIG_BYTES, "config"), argv[1])
    except Exception:  # reported by the command itself
        return
    data = config.get("data") if isinstance(config, Mapping) else None
    data = dict(data) if isinstance(data, Mapping) else {}
    for i, arg in enumerate(argv[:-1]):
        key, _, value = argv[i + 1].partition("=")
        if arg == "--set" and key in ("data.dataset", "data.path"):
            data[key.removeprefix("data.")] = value
    start_dataset(data.get("dataset", "fashion_mnist"), data.get("path"))  # the config's default data set
