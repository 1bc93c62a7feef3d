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
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
from collections.abc import Iterable
from typing import Any

import torch

from fedfit.errors import CheckpointError

#: JSON-ready data.
Json = Any


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
            return {"$x": _store(value, tensors)}
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

    def decode(self, data: Json, tensors: dict[str, torch.Tensor]) -> Any:
        """The value ``data`` encodes.

        Raises:
            CheckpointError: an unknown type, a missing tensor or malformed data.
        """
        if data is None or isinstance(data, bool | int | float | str):
            return data
        if isinstance(data, list):
            return [self.decode(v, tensors) for v in data]
        if not isinstance(data, dict) or len(data) != 1:
            raise CheckpointError(f"malformed checkpoint value: {str(data)[:80]}")
        (marker, body), = data.items()
        try:
            return self._decode_marked(marker, body, tensors)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"malformed checkpoint value {marker}: {exc}") from exc

    def _decode_marked(self, marker: str, body: Json, tensors: dict[str, torch.Tensor]) -> Any:
        if marker == "$t":
            return tuple(self.decode(v, tensors) for v in body)
        if marker == "$m":
            return {self.decode(k, tensors): self.decode(v, tensors) for k, v in body}
        if marker == "$x":
            if body not in tensors:
                raise CheckpointError(f"checkpoint tensor {body} is missing from the tensor file")
            return tensors[body]
        if marker == "$e":
            return self._type(body[0])(body[1])
        if marker == "$d":
            cls = self._type(body[0])
            return cls(**{name: self.decode(v, tensors) for name, v in body[1].items()})
        raise CheckpointError(f"unknown checkpoint marker {marker!r}")

    def _type(self, name: str) -> Any:
        if name not in self._types:
            raise CheckpointError(f"checkpoint names type {name!r}, which fedfit does not restore")
        return self._types[name]

    def _name(self, cls: type) -> str:
        if self._types.get(cls.__name__) is not cls:
            raise TypeError(f"type {cls.__name__} is not registered with the checkpoint codec")
        return cls.__name__


def _store(tensor: torch.Tensor, tensors: dict[str, torch.Tensor]) -> str:
    """Add ``tensor`` under its content key (dtype, shape and bytes) and return the key."""
    t = tensor.detach().cpu().contiguous()
    digest = hashlib.sha256(f"{t.dtype}{tuple(t.shape)}".encode())
    digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    key = digest.hexdigest()[:32]
    if key not in tensors:
        tensors[key] = t.clone()
    return key
