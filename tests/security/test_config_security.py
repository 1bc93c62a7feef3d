"""The security sections of the config: defaults off, bad values named by their dotted key."""

from __future__ import annotations

import pytest

from fedfit.config import parse_config
from fedfit.errors import ConfigError


def test_security_is_off_by_default() -> None:
    config = parse_config({})
    assert config.attack.kind == "none" and config.aggregation.robust.rule == "mean"
    assert not config.privacy.central.enabled and not config.privacy.secure_aggregation.enabled


@pytest.mark.parametrize(("raw", "key"), [
    ({"aggregation": {"robust": {"rule": "mode"}}}, "aggregation.robust.rule"),
    ({"aggregation": {"robust": {"trim_fraction": 0.5}}}, "aggregation.robust.trim_fraction"),
    ({"attack": {"fraction": 1.5}}, "attack.fraction"),
    ({"privacy": {"central": {"delta": 0}}}, "privacy.central.delta"),
    ({"privacy": {"secure_aggregation": {"dropout": 1.0}}}, "privacy.secure_aggregation.dropout"),
])
def test_bad_security_values_name_their_key(raw: dict, key: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_config(raw)


def test_attack_and_defence_strategies_combine_with_a_plus() -> None:
    from fedfit.strategies import apply_strategy

    config = apply_strategy(parse_config({}), "attack-signflip+median")
    assert config.attack.kind == "sign_flip" and config.attack.fraction == 0.1
    assert config.aggregation.robust.rule == "median"
    with pytest.raises(ConfigError, match="unknown strategy"):
        apply_strategy(parse_config({}), "attack-signflip+nonsense")


def test_every_security_strategy_fits_the_example_config() -> None:
    from pathlib import Path

    from fedfit.config import load_config
    from fedfit.security.builders import check_security
    from fedfit.strategies import apply_strategy

    base = load_config(Path(__file__).resolve().parents[2] / "examples" / "security.yaml")
    defences = ["fedavg", "clip", "median", "trimmed-mean", "krum", "multi-krum", "fltrust", "geomed", "dp", "secagg"]
    for attack in ["attack-scale", "attack-signflip", "attack-random", "attack-labelflip", "attack-backdoor"]:
        for defence in defences:
            check_security(apply_strategy(base, f"{attack}+{defence}"))
