"""Config validation: every bad input is one line naming the key."""

from pathlib import Path

import pytest

from fedfit.config import ExperimentConfig, load_config, parse_config, with_overrides
from fedfit.errors import ConfigError


@pytest.mark.parametrize("raw, fragment", [
    ({"trainig": {}}, "trainig: unknown key"),
    ({"training": {"batchsize": 8}}, "training.batchsize: unknown key"),
    ({"training": {"batch_size": 0}}, "training.batch_size"),
    ({"training": {"batch_size": "many"}}, "training.batch_size"),
    ({"training": {"lr": -0.1}}, "training.lr"),
    ({"orchestration": {"rounds": 0}}, "orchestration.rounds"),
    ({"orchestration": {"mode": "gossip"}}, "orchestration.mode"),
    ({"orchestration": {"deadline_s": -5}}, "orchestration.deadline_s"),
    ({"data": {"dataset": "cifar100"}}, "data.dataset"),
    ({"data": {"partition": {"alpha": 0}}}, "data.partition.alpha"),
    ({"model": {"width": 1.5}}, "model.width"),
    ({"fleet": {"tiers": {"older_phone": -1}}}, "fleet.tiers.older_phone"),
    ({"fleet": {"tiers": {}}}, "fleet"),
    ({"evaluation": {"target_accuracy": 2}}, "evaluation.target_accuracy"),
    ({"simulation": {"executor": "gpu"}}, "simulation.executor"),
])
def test_bad_config_names_the_key(raw: dict, fragment: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    assert fragment in str(err.value)
    assert "\n" not in str(err.value)


def test_defaults_are_valid() -> None:
    config = parse_config({})
    assert config == ExperimentConfig()
    assert config.num_devices == 30


def test_yaml_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("training: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(bad)
    top = tmp_path / "list.yaml"
    top.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_config(top)


def test_overrides_apply_and_validate() -> None:
    config = with_overrides(ExperimentConfig(), {"training.batch_size": 8, "orchestration.rounds": 3})
    assert config.training.batch_size == 8 and config.orchestration.rounds == 3
    with pytest.raises(ConfigError, match="training.nope: unknown key"):
        with_overrides(config, {"training.nope": 1})
    with pytest.raises(ConfigError, match="training.batch_size"):
        with_overrides(config, {"training.batch_size": -2})


def test_participation_weighting_is_checked_by_name() -> None:
    config = with_overrides(ExperimentConfig(), {"aggregation.participation.kind": "interval"})
    assert (config.aggregation.participation.kind, config.aggregation.participation.cutoff) == ("interval", 50)
    with pytest.raises(ConfigError, match="aggregation.participation.cutoff"):
        with_overrides(config, {"aggregation.participation.cutoff": 0})
    with pytest.raises(ConfigError, match="aggregation.participation.kind"):
        with_overrides(config, {"aggregation.participation.kind": "often"})


@pytest.mark.parametrize(("override", "key"), [
    ({"orchestration": {"stall_timeout_s": 0}}, "orchestration.stall_timeout_s"),
    ({"orchestration": {"max_wall_s": -1}}, "orchestration.max_wall_s"),
    ({"orchestration": {"backoff_cap_s": -5}}, "orchestration.backoff_cap_s"),
    ({"selection": {"tier_floor": 1.5}}, "selection.tier_floor"),
])
def test_liveness_and_floor_keys_are_validated(override: dict, key: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=key):
        parse_config(override)


def test_liveness_defaults_bound_every_run() -> None:
    config = parse_config({})
    assert config.orchestration.stall_timeout_s == 21600 and config.selection.tier_floor == 0.25
    assert parse_config({"orchestration": {"stall_timeout_s": None}}).orchestration.stall_timeout_s is None


@pytest.mark.parametrize("raw, message", [
    # keys of several types: the key alone (no pydantic member tag) and what each type wants
    ({"orchestration": {"candidates": 0}},
     "orchestration.candidates: Input should be 'auto' or 'all', or greater than or equal to 1 (got 0)"),
    ({"simulation": {"workers": "many"}}, "simulation.workers: Input should be a valid integer, "
                                          "unable to parse string as an integer, or 'auto' (got 'many')"),
    ({"simulation": {"batched_min_cohort": 1}},
     "simulation.batched_min_cohort: Input should be greater than or equal to 2, or 'auto' (got 1)"),
    # a boolean is no number there either (pydantic's lax mode made true one worker)
    ({"simulation": {"workers": True}}, "simulation.workers: expected a number or 'auto', not a boolean (got True)"),
    ({"orchestration": {"candidates": True}},
     "orchestration.candidates: expected 'auto' or 'all' or a number, not a boolean (got True)"),
    ({"simulation": {"torch_threads": False}},
     "simulation.torch_threads: expected a number or 'auto', not a boolean (got False)"),
    # a dict's keys are no member tags
    ({"data": {"stream": {"rate_by_tier": {"a": -1, "b": -2}}}},
     "data.stream.rate_by_tier.a: Input should be greater than or equal to 0 (got -1)"),
])
def test_keys_of_several_types_say_what_each_wants(raw: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    assert str(err.value) == message


def test_a_key_inside_a_null_section_says_to_give_the_section() -> None:
    # data.stream is null (static data): "unknown key" named a key the README documents
    with pytest.raises(ConfigError) as err:
        with_overrides(ExperimentConfig(), {"data.stream.rate_per_s": 1})
    assert str(err.value) == ("data.stream.rate_per_s: data.stream is null (off); give the whole section, "
                              "e.g. data.stream={rate_per_s: 1}")
    with pytest.raises(ConfigError, match="orchestration.deadline_s.x: unknown key"):  # a null number stays unknown
        with_overrides(ExperimentConfig(), {"orchestration.deadline_s.x": 1})


def test_a_section_given_whole_takes_keys_after_it() -> None:
    config = with_overrides(ExperimentConfig(), {"data.stream": {"rate_per_s": 1}, "data.stream.buffer_size": 5})
    assert config.data.stream is not None
    assert (config.data.stream.rate_per_s, config.data.stream.buffer_size, config.data.stream.initial) == (1.0, 5, 16)
