"""Typed dataclass configs <-> JSON, so a run folder's resolved config rebuilds the exact same objects."""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def to_jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def from_jsonable(cls: type[T], data: Any, where: str = "config") -> T:
    """Rebuild ``cls`` from ``to_jsonable`` output; unknown keys raise naming their path."""
    return _build(cls, data, where)


def _build(tp: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping for {tp.__name__}, got {type(data).__name__}")
        hints = typing.get_type_hints(tp)
        fields = [f for f in dataclasses.fields(tp) if f.init]
        unknown = set(data) - {f.name for f in fields}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)} for {tp.__name__}")
        required = [f.name for f in fields
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
        missing = [name for name in required if name not in data]
        if missing:
            raise ValueError(f"{where}: missing field(s) {missing} for {tp.__name__}")
        kwargs = {k: _build(hints[k], v, f"{where}.{k}") for k, v in data.items()}
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as err:
            raise ValueError(f"{where}: {err}") from err
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
        concrete = [a for a in args if a is not type(None)]
        if len(concrete) == 1:  # Optional[X]: X's own error is the clearest
            return _build(concrete[0], data, where)
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _build(arg, data, where)
            except (TypeError, ValueError):
                continue
        raise ValueError(f"{where}: {data!r} matches none of {args}")
    if origin is tuple:
        args = typing.get_args(tp)
        if not isinstance(data, (list, tuple)):
            raise ValueError(f"{where}: expected a list, got {data!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        if len(data) != len(args):
            raise ValueError(f"{where}: expected {len(args)} entries, got {len(data)} ({list(data)})")
        return tuple(_build(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data)))
    if origin is dict:
        if not isinstance(data, dict):
            raise ValueError(f"{where}: expected a mapping, got {data!r}")
        key_t, val_t = typing.get_args(tp)
        return {_build(key_t, k, where): _build(val_t, v, f"{where}.{k}") for k, v in data.items()}
    if origin is typing.Literal:
        if data not in typing.get_args(tp):
            raise ValueError(f"{where}: {data!r} is not one of {typing.get_args(tp)}")
        return data
    if tp is Path:
        return Path(data)
    if tp in (int, float) and isinstance(data, bool):  # YAML reads yes/no/on/off as booleans
        raise ValueError(f"{where}: expected a number, got {data!r} (a YAML boolean)")
    if tp is float and isinstance(data, int):
        return float(data)
    if tp in (int, float, str, bool) and not isinstance(data, tp):
        raise ValueError(f"{where}: expected {tp.__name__}, got {data!r}")
    return data
