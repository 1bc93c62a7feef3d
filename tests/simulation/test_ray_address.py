"""A ``simulation.ray_address`` where nothing listens is a one-line error at once, not minutes of
Ray's own retries (measured: still retrying after 120 s); Ray's start-up tip stays off stderr."""

from __future__ import annotations

import socket
import warnings

import pytest

from fedfit.errors import ConfigError
from fedfit.simulation.ray_executor import check_answers, quiet_tips


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_address_where_nothing_listens_is_a_config_error() -> None:
    port = _closed_port()
    with pytest.raises(ConfigError, match=rf"simulation.ray_address: nothing answers at '127.0.0.1:{port}'") as err:
        check_answers(f"127.0.0.1:{port}")
    assert "\n" not in str(err.value)


def test_a_listening_head_passes() -> None:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        check_answers(f"127.0.0.1:{server.getsockname()[1]}")


@pytest.mark.parametrize("address", ["auto", "ray://127.0.0.1:1", "garbage"])
def test_other_forms_are_left_to_ray(address: str) -> None:
    check_answers(address)  # no connection tried: Ray reads or refuses these itself


def test_rays_start_up_tip_is_silenced() -> None:
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with quiet_tips():
            warnings.warn("Tip: In future versions of Ray, Ray will no longer override ...", FutureWarning)
        warnings.warn("another FutureWarning", FutureWarning)
    assert [str(w.message) for w in seen] == ["another FutureWarning"]
