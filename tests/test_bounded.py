"""Bounded input: the YAML node budget counts aliases at their expanded size; files are capped."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from fedfit.bounded import expanded_size, load_yaml, read_text
from fedfit.errors import ConfigError


def _laughs(levels: int, fan: int = 9) -> str:
    names = [chr(ord("a") + i) for i in range(levels + 1)]
    text = f"{names[0]}: &{names[0]} [{', '.join(['x'] * fan)}]\n"
    for prev, name in zip(names, names[1:], strict=False):
        text += f"{name}: &{name} [{', '.join([f'*{prev}'] * fan)}]\n"
    return text


@pytest.mark.parametrize("levels", [1, 2, 3])
def test_the_count_is_the_closed_form_of_the_expansion(levels: int) -> None:
    # level 0 holds 1 + 9 nodes; level i holds 1 + 9 * size(i - 1); the mapping adds 1 + a key per level.
    sizes = [10]
    for _ in range(levels):
        sizes.append(1 + 9 * sizes[-1])
    expected = 1 + sum(1 + s for s in sizes)
    assert expanded_size(yaml.compose(_laughs(levels)), {}, 10**9) == expected


def test_a_billion_laughs_is_refused_before_it_is_built() -> None:
    bomb = _laughs(8)
    assert len(bomb) < 600
    with pytest.raises(ConfigError, match="more than 100000 YAML nodes"):
        load_yaml(bomb, "bomb.yaml")


def test_ordinary_anchors_still_load() -> None:
    text = "base: &b {lr: 0.1, batch: 8}\nfast: {<<: *b, lr: 0.5}\nslow: *b\n"
    assert load_yaml(text, "x") == {"base": {"lr": 0.1, "batch": 8}, "fast": {"lr": 0.5, "batch": 8},
                                    "slow": {"lr": 0.1, "batch": 8}}


def test_a_file_over_the_cap_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("x" * 101)
    with pytest.raises(ConfigError, match="larger than the 100-byte limit"):
        read_text(path, 100, "config")
    assert read_text(path, 101, "config") == "x" * 101
