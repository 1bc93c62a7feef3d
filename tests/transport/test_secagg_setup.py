"""Deployed SecAgg refuses settings it cannot run with, in one line naming the key."""

from __future__ import annotations

import pytest

from fedfit.config import parse_config
from fedfit.errors import ConfigError
from fedfit.transport.secagg_setup import check_deployable

ON = {"privacy": {"secure_aggregation": {"enabled": True}}}


@pytest.mark.parametrize(("extra", "says"), [
    ({"orchestration": {"mode": "async"}, "asynchronous": {"buffer_size": 5}}, "orchestration.mode: sync"),
    ({"aggregation": {"participation": {"kind": "interval"}}}, "aggregation.participation"),
    ({"aggregation": {"fednova": True}}, "aggregation.fednova"),
    ({"aggregation": {"robust": {"rule": "median"}}}, "robust rules need each device's update"),
])
def test_unsupported_settings_are_one_line_config_errors(extra: dict[str, object], says: str) -> None:
    with pytest.raises(ConfigError, match=says) as err:
        check_deployable(parse_config(ON | extra))
    assert "\n" not in str(err.value)


def test_sync_secagg_with_central_dp_is_deployable() -> None:
    check_deployable(parse_config(ON | {"privacy": {"secure_aggregation": {"enabled": True},
                                                    "central": {"enabled": True, "noise_multiplier": 1.0}}}))
