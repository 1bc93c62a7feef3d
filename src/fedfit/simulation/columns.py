"""Long sequences of one dataclass as columns: the codec's form for a fleet's registry.

A checkpoint of a 100,000-device fleet holds 100,000 registry entries. As per-value JSON that is
about 1.3 KB and 0.2 ms per device; as columns it is a few tensors and a few small tables. A tuple
or list of at least :data:`MIN_ROWS` values of one registered dataclass is encoded as
``{"$c": [kind, type, rows, {field: column}]}`` (``kind``: ``"t"`` tuple, ``"l"`` list), each
field's values as one column:

- ``{"b": key}``, ``{"i": key}``, ``{"f": key}``: every value a bool, an int within int64, or a
  finite float — one bool, int64 or float64 tensor, exact both ways;
- ``..., "n": key``: as above, with a bool tensor marking the rows that hold ``None``;
- ``{"c": [type, rows, fields]}`` (``"n"`` as above): every value (but ``None``) of one registered
  dataclass — nested columns over the rows that hold one;
- ``{"u": [value, ...], "x": key}``: anything else, and dataclasses shared by many rows — the
  distinct values (codec JSON, so a tier's profile or a radio set is stored once) and a uint8,
  int32 or int64 tensor of indices into them.

Decoding trusts nothing: a column's tensor must exist with its dtype and one entry per row,
indices must fall in the table, and each column is checked once against the field's annotation
(a tensor column by its dtype, a table value by value). Anything else is one
:class:`~fedfit.errors.CheckpointError` line.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import typing
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from fedfit.errors import CheckpointError

if TYPE_CHECKING:
    from fedfit.simulation.codec import Codec, Json

#: Shortest sequence encoded as columns (shorter ones stay plain JSON, readable in the file).
MIN_ROWS = 64
_INT64 = (-(1 << 63), (1 << 63) - 1)
_DTYPES = {"b": torch.bool, "i": torch.int64, "f": torch.float64}
_INDEX = (torch.uint8, torch.int32, torch.int64)
_SAMPLES: dict[str, Any] = {"b": False, "i": 0, "f": 0.0}


def columnar(value: object) -> type | None:
    """The dataclass every item of ``value`` is, when ``value`` is a tuple or list long enough
    to store as columns; ``None`` otherwise."""
    if not isinstance(value, tuple | list) or len(value) < MIN_ROWS:
        return None
    cls = type(value[0])
    if not dataclasses.is_dataclass(cls) or any(type(v) is not cls for v in value):
        return None
    return cls


def encode(codec: Codec, rows: Sequence[Any], tensors: dict[str, torch.Tensor]) -> Json:
    """``rows`` (of one dataclass, see :func:`columnar`) as a ``$c`` marker."""
    return {"$c": ["t" if isinstance(rows, tuple) else "l", *_encode_rows(codec, rows, tensors)]}


def _encode_rows(codec: Codec, rows: Sequence[Any], tensors: dict[str, torch.Tensor]) -> list[Json]:
    cls = type(rows[0])
    fields = {f.name: _column(codec, [getattr(r, f.name) for r in rows], tensors)
              for f in dataclasses.fields(cls) if f.init}
    return [codec.type_name(cls), len(rows), fields]


def _column(codec: Codec, values: list[Any], tensors: dict[str, torch.Tensor]) -> Json:
    from fedfit.simulation.codec import store  # the codec imports this module

    present = [v for v in values if v is not None]
    kind = _scalar_kind(present)
    if kind is None and (not _one_dataclass(present) or len({id(v) for v in present}) * 8 <= len(present)):
        return _table(codec, values, tensors)  # a dataclass shared by many rows (a tier's profile): once
    column: dict[str, Json] = {}
    if len(present) < len(values):
        column["n"] = store(torch.tensor([v is None for v in values], dtype=torch.bool), tensors)
    if kind is not None:
        filled = [_SAMPLES[kind] if v is None else v for v in values]
        column[kind] = store(torch.tensor(filled, dtype=_DTYPES[kind]), tensors)
    else:
        column["c"] = _encode_rows(codec, present, tensors)
    return column


def _one_dataclass(values: list[Any]) -> bool:
    """Whether ``values`` are one or more instances of one dataclass."""
    cls = type(values[0]) if values else None
    return dataclasses.is_dataclass(cls) and all(type(v) is cls for v in values)


def _scalar_kind(values: list[Any]) -> str | None:
    """``"b"``, ``"i"`` or ``"f"`` when every value is exactly that kind (and fits a tensor)."""
    if not values:
        return None
    types = {type(v) for v in values}
    if types == {bool}:
        return "b"
    if types == {int} and _INT64[0] <= min(values) and max(values) <= _INT64[1]:
        return "i"
    if types == {float} and bool(torch.tensor(values, dtype=torch.float64).isfinite().all()):
        return "f"
    return None


def _table(codec: Codec, values: list[Any], tensors: dict[str, torch.Tensor]) -> Json:
    from fedfit.simulation.codec import store

    table: list[Json] = []
    seen: dict[Any, int] = {}
    by_id: dict[int, int] = {}  # the rows are alive throughout, so their ids are theirs
    index = []
    for v in values:
        if id(v) not in by_id:
            key = _key(v)
            if key not in seen:
                seen[key] = len(table)
                table.append(codec.encode(v, tensors))
            by_id[id(v)] = seen[key]
        index.append(by_id[id(v)])
    dtype = torch.uint8 if len(table) <= 256 else torch.int32 if len(table) < 2**31 else torch.int64
    return {"u": table, "x": store(torch.tensor(index, dtype=dtype), tensors)}


def _key(value: Any) -> Any:
    """A hashable key equal only for values the codec encodes alike (``1``, ``1.0`` and ``True``
    differ); a tensor or other value with no such key: its identity."""
    if isinstance(value, float):
        return float, value.hex()  # -0.0 and 0.0 differ, a NaN equals itself
    if value is None or isinstance(value, bool | int | str | enum.Enum):
        return type(value), value
    if isinstance(value, tuple | list):
        return type(value), tuple(_key(v) for v in value)
    if isinstance(value, dict):
        return dict, tuple((_key(k), _key(v)) for k, v in value.items())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return type(value), tuple(_key(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init)
    return object, id(value)


def decode(codec: Codec, body: Json, tensors: dict[str, torch.Tensor], depth: int) -> Any:
    """The tuple or list a ``$c`` marker's ``body`` encodes."""
    if not isinstance(body, list) or len(body) != 4 or body[0] not in ("t", "l"):
        raise TypeError(f"expected [kind, type, rows, fields], got {str(body)[:40]}")
    rows = _decode_rows(codec, body[1:], tensors, depth)
    return tuple(rows) if body[0] == "t" else rows


def _decode_rows(codec: Codec, body: Json, tensors: dict[str, torch.Tensor], depth: int) -> list[Any]:
    if depth > codec.max_depth:
        raise CheckpointError(f"checkpoint values nested deeper than {codec.max_depth} levels")
    if not isinstance(body, list) or len(body) != 3:
        raise TypeError(f"expected [type, rows, fields], got {str(body)[:40]}")
    name, n, fields = body
    cls = codec.type_named(name)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or type(n) is not int or n < 0 \
            or not isinstance(fields, dict):
        raise TypeError(f"{str(name)[:40]}: not a dataclass with a row count and fields")
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    if set(fields) != set(names):
        wrong = sorted(set(fields) ^ set(names), key=str)
        raise CheckpointError(f"checkpoint columns of {cls.__name__}: fields {str(wrong)[:80]} missing or unknown")
    columns = [_decode_column(codec, fields[f], n, tensors, depth + 1, (cls, f, hints[f])) for f in names]
    return [cls(*row) for row in zip(*columns, strict=True)] if names else [cls() for _ in range(n)]


def _decode_column(codec: Codec, column: Json, n: int, tensors: dict[str, torch.Tensor], depth: int,
                   where: tuple[Any, str, Any]) -> list[Any]:
    if not isinstance(column, dict):
        raise TypeError(f"column {where[1]} is not an object")
    if "u" in column:
        table = [codec.decode(v, tensors, depth) for v in _list(column["u"])]
        index = _tensor(column, "x", _INDEX, n, tensors).tolist()
        if index and not (0 <= min(index) and max(index) < len(table)):
            raise CheckpointError(f"checkpoint column {where[1]}: index outside its table of {len(table)}")
        for v in table:
            _conforms(v, where)
        return [table[i] for i in index]
    missing = _tensor(column, "n", torch.bool, n, tensors).tolist() if "n" in column else [False] * n
    if "c" in column:
        present = _decode_rows(codec, column["c"], tensors, depth)
        if len(present) != n - sum(missing):
            raise CheckpointError(f"checkpoint column {where[1]}: {len(present)} values for {n - sum(missing)} rows")
        if present:
            _conforms(present[0], where)
        it = iter(present)
        values = [None if m else next(it) for m in missing]
    else:
        kinds = [k for k in _DTYPES if k in column]
        if len(kinds) != 1:
            raise TypeError(f"column {where[1]} has no single kind")
        _conforms(_SAMPLES[kinds[0]], where)
        data = _tensor(column, kinds[0], _DTYPES[kinds[0]], n, tensors).tolist()
        values = [None if m else v for v, m in zip(data, missing, strict=True)]
    if any(missing):
        _conforms(None, where)
    return values


def _tensor(column: dict[str, Json], key: str, dtype: torch.dtype | tuple[torch.dtype, ...], n: int,
            tensors: dict[str, torch.Tensor]) -> torch.Tensor:
    ref = column[key]
    if not isinstance(ref, str) or ref not in tensors:
        raise CheckpointError(f"checkpoint tensor {str(ref)[:40]} is missing from the tensor file")
    t = tensors[ref]
    if (t.dtype not in dtype if isinstance(dtype, tuple) else t.dtype != dtype) or tuple(t.shape) != (n,):
        raise CheckpointError(f"checkpoint column tensor {ref[:16]}: {t.dtype} {tuple(t.shape)}, "
                              f"expected {dtype} ({n},)")
    return t


def _conforms(value: Any, where: tuple[Any, str, Any]) -> None:
    from fedfit.simulation.codec import conforms, show

    cls, field, hint = where
    if not conforms(value, hint):
        raise CheckpointError(f"checkpoint field {cls.__name__}.{field}: expected {show(hint)}, "
                              f"got {type(value).__name__}")


def _list(body: Json) -> list[Any]:
    if not isinstance(body, list):
        raise TypeError(f"expected a list, got {str(body)[:40]}")
    return body
