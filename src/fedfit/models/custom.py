"""The user's own ``nn.Module``: built from a factory, its stages derived from its children.

A :class:`ModelFactory` names a function (``"package.module:function"`` in YAML, or any
callable in Python) that returns an ``nn.Module``. fedfit passes it ``input_shape``,
``num_classes`` and ``width`` when (and only when) its signature names them, plus the user's
keyword arguments. Nothing else about the module is assumed: its FLOPs and activation bytes are
measured (:mod:`fedfit.cost.profile`), its stages come from :func:`derived_stages`, and its width
groups only from its own ``width_groups()`` method.

Stages (the unit of checkpointing, selective updating, progressive training and split learning)
are the module's children in order, nested ``nn.Sequential`` containers unrolled, each
parametrised child taking the parameter-free ones after it (activations, pooling, flatten).
A module whose forward is not its children in order declares ``fedfit_stages()``: a list whose
items are a child name or a list of child names, run in order as one stage.
:func:`check_stages` verifies on a probe batch that the stages reproduce ``forward()``.

>>> net = nn.Sequential(nn.Flatten(), nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
>>> [s.layers for s in derived_stages(net)]
[('0', '1', '2'), ('3',)]
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from fedfit.errors import ConfigError, PlanError

if TYPE_CHECKING:
    from fedfit.models.stages import Stage

#: Arguments fedfit fills in when the factory's signature names them.
AUTO_ARGUMENTS = ("input_shape", "num_classes", "width")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def callable_label(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of a callable (the wrapped function of a ``functools.partial``)."""
    inner = getattr(fn, "func", fn)
    return f"{getattr(inner, '__module__', '?')}:{getattr(inner, '__qualname__', type(inner).__name__)}"


def import_target(target: str, key: str) -> Callable[..., Any]:
    """The callable named ``package.module:function`` (attributes may be dotted).

    Raises:
        ConfigError: a malformed name, a module that does not import, or a missing attribute.
    """
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigError(f"{key}: '{target}' must look like 'package.module:function'")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"{key}: cannot import '{target}' ({_first_line(exc)})") from None
    if not callable(obj):
        raise ConfigError(f"{key}: '{target}' is not callable")
    return obj


@dataclass(frozen=True, slots=True)
class ModelFactory:
    """A user's model builder and its keyword arguments (hashable and, for named targets, picklable).

    Attributes:
        target: ``"package.module:function"`` or the callable itself.
        kwargs_json: the keyword arguments as canonical JSON (so the spec stays hashable).
    """

    target: str | Callable[..., nn.Module]
    kwargs_json: str = "{}"

    @classmethod
    def of(cls, target: str | Callable[..., nn.Module], kwargs: dict[str, Any] | None = None) -> ModelFactory:
        """A factory from a target and plain keyword arguments (JSON values).

        Raises:
            ConfigError: kwargs that are not JSON values.
        """
        try:
            encoded = json.dumps(kwargs or {}, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"model.kwargs: must be JSON values (numbers, strings, lists, maps): {exc}") from None
        return cls(target, encoded)

    @property
    def label(self) -> str:
        """The name errors and ``model.json`` use."""
        return self.target if isinstance(self.target, str) else callable_label(self.target)

    @property
    def kwargs(self) -> dict[str, Any]:
        """The user's keyword arguments."""
        decoded: dict[str, Any] = json.loads(self.kwargs_json)
        return decoded

    def build(self, input_shape: tuple[int, ...], num_classes: int, width: float = 1.0) -> nn.Module:
        """Call the factory; ``width`` below 1 needs a factory that takes ``width``.

        Raises:
            ConfigError: the target does not import, rejects its arguments, or returns no module.
            PlanError: a sub-model width asked of a factory without a ``width`` argument.
        """
        fn = import_target(self.target, "model.factory") if isinstance(self.target, str) else self.target
        accepted = _parameter_names(fn)
        auto = {"input_shape": tuple(input_shape), "num_classes": num_classes, "width": width}
        kwargs = {k: v for k, v in auto.items() if k in accepted} | self.kwargs
        if width != 1.0 and "width" not in accepted:
            raise PlanError(f"model {self.label}: takes no 'width' argument, so it has no sub-model at width {width}")
        try:
            module = fn(**kwargs)
        except TypeError as exc:
            raise ConfigError(f"model.factory: {self.label} rejected its arguments ({_first_line(exc)})") from None
        if not isinstance(module, nn.Module):
            raise ConfigError(f"model.factory: {self.label} returned {type(module).__name__}, not a torch nn.Module")
        return module


def _parameter_names(fn: Callable[..., Any]) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


def _unrolled(model: nn.Module, prefix: str = "") -> list[tuple[str, nn.Module]]:
    """Children in order, ``nn.Sequential`` containers replaced by their own children."""
    out: list[tuple[str, nn.Module]] = []
    for name, child in model.named_children():
        if isinstance(child, nn.Sequential):
            out.extend(_unrolled(child, f"{prefix}{name}."))
        else:
            out.append((f"{prefix}{name}", child))
    return out


def _grouped_children(model: nn.Module) -> list[tuple[str, ...]]:
    """Each parametrised child with the parameter-free children after it (leading ones join the first)."""
    groups: list[list[str]] = []
    leading: list[str] = []
    for name, child in _unrolled(model):
        if any(True for _ in child.parameters()):
            groups.append([*leading, name])
            leading = []
        elif groups:
            groups[-1].append(name)
        else:
            leading.append(name)
    return [tuple(g) for g in groups] or ([tuple(leading)] if leading else [])


def _declared(model: nn.Module, declare: Callable[[], Sequence[str | Sequence[str]]]) -> list[tuple[str, ...]]:
    label = type(model).__name__
    groups: list[tuple[str, ...]] = []
    for item in declare():
        layers = (item,) if isinstance(item, str) else tuple(item)
        for layer in layers:
            try:
                model.get_submodule(layer)
            except AttributeError:
                raise PlanError(f"model {label}: fedfit_stages() names '{layer}', which is no submodule") from None
        groups.append(layers)
    return groups


def _sequence(layers: tuple[str, ...]) -> Callable[[nn.Module, torch.Tensor], torch.Tensor]:
    def forward(m: nn.Module, x: torch.Tensor) -> torch.Tensor:
        for layer in layers:
            x = m.get_submodule(layer)(x)
        return x
    return forward


def derived_stages(model: nn.Module) -> tuple[Stage, ...]:
    """The stages of a module that is not in the zoo: ``fedfit_stages()`` or its children.

    Raises:
        PlanError: the module has no children and declares no stages, or declares unknown ones.
    """
    from fedfit.models.stages import Stage  # noqa: F811  (stages imports this module for its fallback)

    declare = getattr(model, "fedfit_stages", None)
    groups = _declared(model, declare) if callable(declare) else _grouped_children(model)
    if not groups:
        raise PlanError(f"model {type(model).__name__} has no child modules to split into stages; "
                        "define fedfit_stages()")
    return tuple(Stage(layers[0], layers, _sequence(layers)) for layers in groups)


def check_stages(model: nn.Module, input_shape: tuple[int, ...], label: str) -> int:
    """Verify that ``model``'s stages own every parameter and reproduce its forward; their count.

    Runs both on a probe batch in evaluation mode (dropout off), restoring the mode after.

    Raises:
        ConfigError: one line naming the module and what to define instead.
    """
    from fedfit.models.stages import run_stages, stages_of

    hint = "define fedfit_stages() on it (see README, 'Your own model and data')"
    try:
        stages = stages_of(model)
    except PlanError as exc:
        raise ConfigError(f"memory: model {label}: {exc}") from None
    orphans = [n for n, _ in model.named_parameters() if not any(s.owns(n) for s in stages)]
    if orphans:
        raise ConfigError(f"memory: model {label}: parameter '{orphans[0]}' belongs to no stage; {hint}")
    was_training = model.training
    model.eval()
    try:
        x = probe_inputs(input_shape, 2)
        with torch.no_grad():
            same = torch.allclose(run_stages(model, stages, x), model(x), atol=1e-5)
    except (RuntimeError, TypeError, ValueError) as exc:
        raise ConfigError(f"memory: model {label}: its stages fail on a probe batch ({_first_line(exc)}); {hint}") from None
    finally:
        model.train(was_training)
    if not same:
        raise ConfigError(f"memory: model {label}: its children in order do not reproduce forward(); {hint}")
    return len(stages)


def probe_inputs(input_shape: tuple[int, ...], batch: int, seed: int = 0) -> torch.Tensor:
    """A probe batch, uniform on [0, 1): valid for image-like inputs and (cast to ``long``) token ids."""
    return torch.rand((batch, *input_shape), generator=torch.Generator().manual_seed(seed))
