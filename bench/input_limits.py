"""How fast fedfit refuses hostile configs: a YAML alias bomb and a 50 MB file (issue 12).

Before the limits, the 503-byte bomb exhausted memory and the 50 MB config parsed for 14.5 min
at 4.9 GB. Run: ``PYTHONPATH=src .venv/bin/python bench/input_limits.py``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from fedfit.config import load_config
from fedfit.errors import ConfigError


def _bomb() -> str:
    levels = "abcdefghi"
    text = "strategies:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    for prev, name in zip(levels, levels[1:], strict=False):
        text += f"  {name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    return text


def _big(path: Path, size_bytes: int) -> None:
    with path.open("w") as f:
        f.write("name: big\nstrategies:\n")
        i = 0
        while f.tell() < size_bytes:
            f.write(f"  s{i}: {{training.lr: 0.1}}\n")
            i += 1


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        bomb, big = Path(tmp) / "bomb.yaml", Path(tmp) / "big.yaml"
        bomb.write_text(_bomb())
        _big(big, 50 * 2**20)
        for path in (bomb, big):
            t0 = time.perf_counter()
            try:
                load_config(path)
                outcome = "ACCEPTED"
            except ConfigError as err:
                outcome = f"refused: {str(err).split(': ', 2)[-1]}"
            ms = 1000 * (time.perf_counter() - t0)
            print(f"{path.name}: {path.stat().st_size:,} bytes, {ms:.1f} ms, {outcome}")


if __name__ == "__main__":
    main()
