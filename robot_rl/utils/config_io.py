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
        names = {f.name for f in dataclasses.fields(tp) if f.init}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)} for {tp.__name__}")
        return tp(**{k: _build(hints[k], v, f"{where}.{k}") for k, v in data.items()})
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if data is None and type(None) in args:
            return None
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
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v, where) for v in data)
        return tuple(_build(a, v, where) for a, v in zip(args, data))
    if origin is dict:
        key_t, val_t = typing.get_args(tp)
        return {_build(key_t, k, where): _build(val_t, v, f"{where}.{k}") for k, v in data.items()}
    if origin is typing.Literal:
        if data not in typing.get_args(tp):
            raise ValueError(f"{where}: {data!r} is not one of {typing.get_args(tp)}")
        return data
    if tp is Path:
        return Path(data)
    if tp is float and isinstance(data, int):
        return float(data)
    if tp in (int, float, str, bool) and not isinstance(data, tp):
        raise ValueError(f"{where}: expected {tp.__name__}, got {data!r}")
    return data
