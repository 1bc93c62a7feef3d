"""The base of every config section: strict types, no bool/number mix-ups, no inf or NaN."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator


PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(ge=0.0, le=1.0)]


def _check_bools(annotation: Any, value: Any) -> None:
    """Raise ``ValueError`` where ``value`` is a bool and ``annotation`` wants a number, or the reverse."""
    if annotation is Any or isinstance(annotation, typing.TypeVar):
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        _check_bools(args[0], value)
    elif origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        if value is not None and not any(_bools_fit(a, value) for a in options):
            if isinstance(value, bool):
                raise ValueError(f"expected {' or '.join(_wanted(a) for a in options)}, not a boolean")
            _check_bools(options[0], value)
    elif origin in (dict,) and isinstance(value, dict):
        for item in value.values():
            _check_bools(args[1], item)
    elif origin in (list, tuple) and isinstance(value, list | tuple):
        for item in value:
            _check_bools(args[0], item)
    elif origin is typing.Literal and isinstance(value, bool) and not any(a is value for a in args):
        raise ValueError(f"expected {_wanted(annotation)}, not a boolean")
    elif annotation is bool and not isinstance(value, bool):
        raise ValueError("expected true or false")
    elif annotation in (int, float) and isinstance(value, bool):
        raise ValueError("expected a number, not a boolean")


def _wanted(annotation: Any) -> str:
    """What ``annotation`` accepts, in words: ``'auto' or 'all'``, ``a number``."""
    while typing.get_origin(annotation) is Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) is typing.Literal:
        return " or ".join(repr(a) for a in typing.get_args(annotation))
    return "a number" if annotation in (int, float) else getattr(annotation, "__name__", str(annotation))


def _bools_fit(annotation: Any, value: Any) -> bool:
    try:
        _check_bools(annotation, value)
    except ValueError:
        return False
    return True


class Section(BaseModel):
    """A config section: unknown keys, inf/NaN and bool/number mix-ups are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_int_mixups(cls, value: Any, info: ValidationInfo) -> Any:
        """``true`` is no number and ``1`` no boolean: pydantic's lax mode would convert both."""
        field = cls.model_fields.get(info.field_name or "")
        if field is not None:
            _check_bools(field.annotation, value)
        return value

