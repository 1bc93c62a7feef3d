"""A user's module: built from a factory, stages derived and checked, costs measured."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fedfit.cost import measure
from fedfit.errors import ConfigError, PlanError
from fedfit.models import ModelSpec
from fedfit.models.custom import ModelFactory, check_stages, derived_stages
from fedfit.models.stages import run_stages, stages_of


def with_width(input_shape: tuple[int, ...], num_classes: int, width: float, hidden: int) -> nn.Module:
    return nn.Sequential(nn.Flatten(), nn.Linear(input_shape[0], int(hidden * width)), nn.ReLU(),
                         nn.Linear(int(hidden * width), num_classes))


def test_factory_passes_the_arguments_its_signature_names_and_the_users() -> None:
    module = ModelFactory.of(with_width, {"hidden": 10}).build((4,), 3, 0.5)
    assert [tuple(p.shape) for p in module.parameters()] == [(5, 4), (5,), (3, 5), (3,)]


def test_factory_named_by_string_imports_the_function() -> None:
    factory = ModelFactory.of("tests.custom_modules:tiny_mlp", {"hidden": 4})
    module = factory.build((6,), 3)
    assert sum(p.numel() for p in module.parameters()) == (6 * 4 + 4) + (4 * 4 + 4) + (4 * 3 + 3)
    assert factory.label == "tests.custom_modules:tiny_mlp"


@pytest.mark.parametrize("target", ["nomodule_xyz:f", "tests.custom_modules:missing", "no_colon"])
def test_a_factory_that_does_not_import_is_a_one_line_config_error(target: str) -> None:
    with pytest.raises(ConfigError, match="model.factory") as err:
        ModelFactory.of(target).build((6,), 3)
    assert "\n" not in str(err.value)


def test_a_factory_that_returns_no_module_is_refused() -> None:
    with pytest.raises(ConfigError, match="not a torch nn.Module"):
        ModelFactory.of(lambda: 3).build((6,), 3)


def test_a_sub_model_width_needs_a_width_argument() -> None:
    with pytest.raises(PlanError, match="no 'width' argument"):
        ModelFactory.of("tests.custom_modules:tiny_mlp").build((6,), 3, 0.5)


def test_stages_are_parametrised_children_with_the_parameter_free_ones_after_them() -> None:
    net = nn.Sequential(nn.Flatten(), nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 8), nn.Tanh()),
                        nn.Linear(8, 3))
    assert [s.layers for s in derived_stages(net)] == [("0", "1", "2"), ("3.0", "3.1"), ("4",)]
    x = torch.rand(5, 4)
    assert torch.equal(run_stages(net, stages_of(net), x), net(x))


def test_stages_own_parameters_by_name_prefix() -> None:
    net = nn.Sequential(nn.Linear(2, 2), *[nn.ReLU()] * 9, nn.Linear(2, 2))
    stages = stages_of(net)
    assert [n for n, _ in net.named_parameters() if stages[0].owns(n)] == ["0.weight", "0.bias"]
    assert [n for n, _ in net.named_parameters() if stages[1].owns(n)] == ["10.weight", "10.bias"]


def test_fedfit_stages_overrides_the_children() -> None:
    class Declared(nn.Sequential):
        def fedfit_stages(self) -> list[str | list[str]]:
            return [["0", "1"], "2"]
    net = Declared(nn.Linear(3, 3), nn.Linear(3, 3), nn.Linear(3, 2))
    assert [s.layers for s in stages_of(net)] == [("0", "1"), ("2",)]


def test_a_module_whose_children_do_not_reproduce_forward_is_named_in_one_line() -> None:
    from tests.custom_modules import skip_across
    with pytest.raises(ConfigError, match="fedfit_stages") as err:
        check_stages(skip_across((4,), 3), (4,), "mine:skip")
    assert "mine:skip" in str(err.value) and "\n" not in str(err.value)


def test_measured_flops_of_a_user_module_match_the_hand_count() -> None:
    spec = ModelSpec("user", (4,), 3, factory=ModelFactory.of(with_width, {"hidden": 5}))
    cost = measure(spec)
    forward = 2 * 4 * 5 + 2 * 5 * 3  # multiply-adds of the two matmuls, per sample
    backward = 2 * 4 * 5 + 2 * (2 * 5 * 3)  # weight grads of both, input grad of the second only
    assert cost.forward_flops_per_sample == forward
    assert cost.train_flops_per_sample == forward + backward
    assert cost.num_params == 4 * 5 + 5 + 5 * 3 + 3
    assert [s.num_params for s in cost.stages] == [25, 18]


def test_a_non_sequential_module_is_measured_without_stages() -> None:
    spec = ModelSpec("user", (4,), 3, factory=ModelFactory.of("tests.custom_modules:skip_across"))
    cost = measure(spec)
    assert cost.stages == () and cost.forward_flops_per_sample == 2 * 4 * 4 + 2 * 4 * 3
