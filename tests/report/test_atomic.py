"""Atomic writes: the old file or the new one, whole; no temporary file left behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from fedfit.report import atomic


def test_a_write_replaces_the_file(tmp_path: Path) -> None:
    target = tmp_path / "summary.json"
    target.write_text("old")
    atomic.write_text(target, "new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_a_writer_that_dies_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "model.safetensors"
    target.write_bytes(b"old")

    def half_then_die(tmp: Path) -> None:
        tmp.write_bytes(b"ne")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic.write_with(target, half_then_die)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]


def test_the_temporary_keeps_the_suffix_plotters_read(tmp_path: Path) -> None:
    seen: list[str] = []
    atomic.write_with(tmp_path / "accuracy.png", lambda p: (seen.append(p.name), p.write_bytes(b"png")))
    assert seen == [".accuracy.tmp.png"] and (tmp_path / "accuracy.png").read_bytes() == b"png"
