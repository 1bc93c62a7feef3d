"""A checkpoint codec: fedfit's message dataclasses and tensors as JSON plus a tensor file.

``encode`` turns a value built from ``None``, bools, numbers, strings, lists, tuples, dicts (any
key type), enums, tensors and the registered frozen dataclasses into JSON-ready data; tensors
are replaced by a reference to a content-addressed key and collected separately, so a tensor
sent to fifty devices is stored once. ``decode`` rebuilds the value from that data and the
tensors, accepting only the registered types: a checkpoint can never instantiate anything else
(unlike a pickle), and a damaged one fails with one line naming what is wrong.

Markers are single-key objects: ``{"$t": [...]}`` tuple, ``{"$m": [[k, v], ...]}`` dict,
``{"$e": [type, value]}`` enum, ``{"$x": key}`` tensor, ``{"$d": [type, {field: value}]}``
dataclass. Plain JSON lists are lists.

Decoding trusts nothing: nesting deeper than :data:`MAX_DEPTH` levels, a marker with a short or
mistyped body, a dataclass field of the wrong type (checked against the field's annotation) or
any other malformation is a :class:`~fedfit.errors.CheckpointError` of one line.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import torch

from fedfit.errors import CheckpointError
from fedfit.simulation import columns

#: JSON-ready data.
Json = Any
#: Deepest nesting of values a checkpoint may hold (a real one nests about a dozen levels).
MAX_DEPTH = 64


class Codec:
    """Encodes and decodes values of an allow-list of dataclass and enum types.

    Args:
        types: the dataclasses and enums a checkpoint may hold (matched by class name).
    """

    def __init__(self, types: Iterable[type]) -> None:
        self._types: dict[str, type] = {}
        for cls in types:
            if not (dataclasses.is_dataclass(cls) or issubclass(cls, enum.Enum)):
                raise TypeError(f"{cls.__name__} is neither a dataclass nor an enum")
            self._types[cls.__name__] = cls

    def encode(self, value: Any, tensors: dict[str, torch.Tensor]) -> Json:
        """``value`` as JSON-ready data; its tensors are added to ``tensors`` by content key."""
        if isinstance(value, enum.Enum):  # before str and int: fedfit's enums are str enums
            return {"$e": [self._name(type(value)), value.value]}
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, torch.Tensor):
            return {"$x": store(value, tensors)}
        if columns.columnar(value) is not None:
            return columns.encode(self, value, tensors)
        if isinstance(value, tuple):
            return {"$t": [self.encode(v, tensors) for v in value]}
        if isinstance(value, list):
            return [self.encode(v, tensors) for v in value]
        if isinstance(value, dict):
            return {"$m": [[self.encode(k, tensors), self.encode(v, tensors)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            name = self._name(type(value))
            fields = {f.name: self.encode(getattr(value, f.name), tensors)
                      for f in dataclasses.fields(value) if f.init}
            return {"$d": [name, fields]}
        raise TypeError(f"cannot checkpoint a value of type {type(value).__name__}")

    def decode(self, data: Json, tensors: dict[str, torch.Tensor], depth: int = 0) -> Any:
        """The value ``data`` encodes.

        Raises:
            CheckpointError: an unknown type, a missing tensor, a field of the wrong type, nesting
                deeper than :data:`MAX_DEPTH` or otherwise malformed data.
        """
        if depth > MAX_DEPTH:
            raise CheckpointError(f"checkpoint values nested deeper than {MAX_DEPTH} levels")
        if data is None or isinstance(data, bool | int | float | str):
            return data
        if isinstance(data, list):
            return [self.decode(v, tensors, depth + 1) for v in data]
        if not isinstance(data, dict) or len(data) != 1:
            raise CheckpointError(f"malformed checkpoint value: {str(data)[:80]}")
        (marker, body), = data.items()
        try:
            return self._decode_marked(marker, body, tensors, depth + 1)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            raise CheckpointError(f"malformed checkpoint value {marker}: {str(exc)[:120]}") from exc

    def _decode_marked(self, marker: str, body: Json, tensors: dict[str, torch.Tensor], depth: int) -> Any:
        if marker == "$t":
            return tuple(self.decode(v, tensors, depth) for v in _list(body, 0))
        if marker == "$m":
            pairs = (_list(kv, 2) for kv in _list(body, 0))
            return {self.decode(k, tensors, depth): self.decode(v, tensors, depth) for k, v in pairs}
        if marker == "$x":
            if not isinstance(body, str) or body not in tensors:
                raise CheckpointError(f"checkpoint tensor {str(body)[:40]} is missing from the tensor file")
            return tensors[body]
        if marker == "$c":
            return columns.decode(self, body, tensors, depth)
        if marker == "$e":
            name, value = _list(body, 2)
            return self._type(name)(value)
        if marker == "$d":
            name, fields = _list(body, 2)
            if not isinstance(fields, dict):
                raise TypeError(f"{name}: fields must be an object, got {type(fields).__name__}")
            cls = self._type(name)
            values = {key: self.decode(v, tensors, depth) for key, v in fields.items()}
            _check_fields(cls, values)
            return cls(**values)
        raise CheckpointError(f"unknown checkpoint marker {str(marker)[:20]!r}")

    @property
    def max_depth(self) -> int:
        """Deepest nesting a decoded value may have."""
        return MAX_DEPTH

    def type_named(self, name: object) -> Any:
        """The registered type called ``name``; :class:`CheckpointError` for any other."""
        return self._type(name)

    def type_name(self, cls: type) -> str:
        """The name ``cls`` is stored under; ``TypeError`` unless it is registered."""
        return self._name(cls)

    def _type(self, name: object) -> Any:
        if not isinstance(name, str) or name not in self._types:
            raise CheckpointError(f"checkpoint names type {str(name)[:40]!r}, which fedfit does not restore")
        return self._types[name]

    def _name(self, cls: type) -> str:
        if self._types.get(cls.__name__) is not cls:
            raise TypeError(f"type {cls.__name__} is not registered with the checkpoint codec")
        return cls.__name__


def _list(body: Json, length: int) -> list[Any]:
    """``body`` as a list (of exactly ``length`` items unless 0)."""
    if not isinstance(body, list) or (length and len(body) != length):
        raise TypeError(f"expected a list{f' of {length}' if length else ''}, got {str(body)[:40]}")
    return body


def _check_fields(cls: Any, values: dict[str, Any]) -> None:
    """Raise :class:`CheckpointError` where a decoded field does not match its annotation."""
    try:
        hints = typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation only a type checker resolves: no check
        return
    for name, value in values.items():
        hint = hints.get(name)
        if hint is not None and not conforms(value, hint):
            raise CheckpointError(f"checkpoint field {cls.__name__}.{name}: expected {show(hint)}, "
                                  f"got {type(value).__name__}")


def conforms(value: Any, hint: Any) -> bool:
    """Whether ``value`` fits the type annotation ``hint`` (containers checked item by item).

    >>> conforms((1, 2.5), tuple[float, ...]), conforms({"a": True}, dict[str, int])
    (True, False)
    """
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return True
    if origin is typing.Annotated:
        return conforms(value, args[0])
    if origin in (typing.Union, types.UnionType):
        return any(conforms(value, a) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is type(None):
        return value is None
    if hint in (int, float):
        return isinstance(value, int | float) and not isinstance(value, bool) and (hint is float or isinstance(value, int))
    if origin is tuple:
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            if isinstance(args[0], type) and args[0] not in (int, float):  # a registry's entries: fast
                return all(isinstance(v, args[0]) for v in value)
            return all(conforms(v, args[0]) for v in value)
        return not args or (len(args) == len(value) and all(map(conforms, value, args)))
    if origin in (list, Sequence):
        return isinstance(value, list | tuple) and (not args or all(conforms(v, args[0]) for v in value))
    if origin in (dict, Mapping):
        return isinstance(value, dict) and (not args or all(
            conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items()))
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


def show(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def store(tensor: torch.Tensor, tensors: dict[str, torch.Tensor]) -> str:
    """Add ``tensor`` under its content key (dtype, shape and bytes) and return the key."""
    t = tensor.detach().cpu().contiguous()
    digest = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    key = digest.hexdigest()[:32]
    if key not in tensors:
        tensors[key] = t.clone()
    return key
