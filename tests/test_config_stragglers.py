"""Config of the straggler features: defaults keep the baseline, bad values name their key,
and every strategy of examples/stragglers.yaml validates."""

from pathlib import Path

import pytest

from fedfit.config import load_config, parse_config
from fedfit.errors import ConfigError
from fedfit.strategies import apply_strategy

ROOT = Path(__file__).resolve().parents[1]


def test_defaults_are_the_synchronous_fedavg_baseline() -> None:
    c = parse_config({})

    assert c.orchestration.mode == "sync" and c.orchestration.late_updates == "drop"
    assert c.selection.kind == "uniform" and c.local_work.kind == "fixed"
    assert not c.aggregation.fednova and c.aggregation.server_lr == 1.0 and c.training.proximal_mu == 0.0


@pytest.mark.parametrize(("raw", "key"), [
    ({"orchestration": {"mode": "sometimes"}}, "orchestration.mode"),
    ({"orchestration": {"late_updates": "keep"}}, "orchestration.late_updates"),
    ({"asynchronous": {"buffer_size": 0}}, "asynchronous.buffer_size"),
    ({"aggregation": {"staleness": {"kind": "linear"}}}, "aggregation.staleness.kind"),
    ({"selection": {"oort": {"exploration": 2}}}, "selection.oort.exploration"),
    ({"local_work": {"min_epochs": 4, "max_epochs": 2}}, "local_work"),
    ({"training": {"proximal_mu": -1}}, "training.proximal_mu"),
    ({"aggregation": {"participation": {"cutoff": 0}}}, "aggregation.participation.cutoff"),
])
def test_bad_values_raise_one_line_naming_the_key(raw: dict, key: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError) as err:
        parse_config(raw)

    assert str(err.value).startswith(f"{key}:") and "\n" not in str(err.value)


def test_every_straggler_strategy_validates() -> None:
    base = load_config(ROOT / "examples" / "stragglers.yaml")

    modes = {name: apply_strategy(base, name).orchestration.mode for name in base.strategies}

    assert modes["fedbuff"] == modes["fedasync"] == modes["full-stack"] == "async"
    assert modes["sync-all"] == modes["sync-deadline"] == modes["fednova"] == "sync"


def test_the_full_stack_ablations_differ_only_in_their_fairness_weights() -> None:
    base = load_config(ROOT / "examples" / "stragglers.yaml")
    weights = {"aggregation.participation.kind", "aggregation.fairness_q"}
    plain = base.strategies["full-stack-unweighted"]

    for name, added in [("full-stack", weights), ("full-stack-participation", {"aggregation.participation.kind"}),
                        ("full-stack-qffl", {"aggregation.fairness_q"})]:
        strategy = base.strategies[name]
        assert {k: v for k, v in strategy.items() if k not in weights} == plain
        assert set(strategy) - set(plain) == added
