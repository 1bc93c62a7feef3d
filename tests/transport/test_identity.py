"""A device's saved identity: round trip, owner-only mode, atomic replace, a clear error on a bad file."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from fedfit.errors import ConfigError
from fedfit.transport.identity import Identity, load_identity, save_identity


def test_identity_round_trips_and_only_its_owner_can_read_it(tmp_path: Path) -> None:
    path = tmp_path / "dev" / "device.json"
    assert load_identity(path) is None
    save_identity(path, Identity("http://127.0.0.1:8080", 3, "tok-a"))
    assert load_identity(path) == Identity("http://127.0.0.1:8080", 3, "tok-a")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_saving_again_replaces_the_file_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "device.json"
    save_identity(path, Identity("http://a", 0, "old"))
    save_identity(path, Identity("http://a", 1, "new"))
    assert load_identity(path) == Identity("http://a", 1, "new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["device.json"]


@pytest.mark.parametrize("text", ["not json", "{}", '{"server": "x", "device_id": "one", "token": "t"}', "[1]"])
def test_a_file_that_is_not_an_identity_is_a_one_line_config_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "device.json"
    path.write_text(text)
    with pytest.raises(ConfigError, match="not a fedfit device state file"):
        load_identity(path)
