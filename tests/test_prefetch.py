"""The data set's files read on a thread at start-up: the file's bytes, once, only while unchanged."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fedfit import prefetch
from fedfit.data.datasets import FASHION_MNIST_DIR, load_fashion_mnist
from fedfit.data.idx import read_idx, write_idx
from fedfit.errors import DataError
from tests.helpers import write_fashion_like


def test_bytes_are_the_files_handed_out_once(tmp_path: Path) -> None:
    plain, packed = tmp_path / "a-idx1-ubyte", tmp_path / "b-idx1-ubyte.gz"
    write_idx(plain, np.arange(7, dtype=np.uint8))
    write_idx(packed, np.arange(9, dtype=np.uint8))
    prefetch.start([plain, packed, tmp_path / "absent"])

    assert prefetch.take(plain) == plain.read_bytes()
    assert prefetch.take(packed) == gzip.decompress(packed.read_bytes())
    assert prefetch.take(plain) is None and prefetch.take(tmp_path / "absent") is None


def test_a_file_changed_since_is_read_again(tmp_path: Path) -> None:
    path = tmp_path / "c-idx1-ubyte"
    write_idx(path, np.arange(5, dtype=np.uint8))
    prefetch.start([path])
    prefetch.take(path)  # let the read finish before the file changes
    prefetch.start([path])
    write_idx(path, np.arange(6, dtype=np.uint8))
    os.utime(path, ns=(1, 1))  # another modification time, whatever the clock's resolution

    assert prefetch.take(path) is None
    assert read_idx(path).tolist() == list(range(6))


def test_read_idx_takes_the_prefetched_bytes_and_a_failed_read_is_reported_as_usual(tmp_path: Path) -> None:
    good, bad = tmp_path / "good-idx1-ubyte.gz", tmp_path / "bad-idx1-ubyte.gz"
    write_idx(good, np.arange(11, dtype=np.uint8))
    bad.write_bytes(good.read_bytes()[:-12])
    prefetch.start([good, bad])

    assert read_idx(good).tolist() == list(range(11))
    assert prefetch.take(good) is None  # consumed by read_idx
    with pytest.raises(DataError, match="bad-idx1-ubyte.gz"):
        read_idx(bad)


def test_run_command_prefetches_the_configs_fashion_mnist_and_nothing_else(tmp_path: Path) -> None:
    folder = write_fashion_like(tmp_path / "fm", n_train=30, n_test=10)
    config = tmp_path / "run.yaml"
    config.write_text(f"name: x\ndata:\n  path: {folder}\n")
    files = [folder / stem for stem in prefetch.FASHION_MNIST_STEMS]

    prefetch.for_command(["run", str(config), "--set", "data.dataset=digits"])
    prefetch.for_command(["resume", str(config)])
    prefetch.for_command(["run", str(tmp_path / "missing.yaml")])
    assert all(prefetch.take(f) is None for f in files)

    prefetch.for_command(["run", str(config), "--out", str(tmp_path / "out")])
    train, test = load_fashion_mnist(folder)  # takes the four prefetched files
    assert all(prefetch.take(f) is None for f in files)
    assert len(train) == 30 and len(test) == 10

    prefetch.for_command(["run", str(config)])
    assert [prefetch.take(f) for f in files] == [f.read_bytes() for f in files]


def test_default_folder_is_the_data_sets_and_no_torch_is_imported() -> None:
    assert prefetch.FASHION_MNIST_DIR == FASHION_MNIST_DIR
    code = "import sys, fedfit.prefetch, fedfit.entry; print('torch' in sys.modules or 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "False"
