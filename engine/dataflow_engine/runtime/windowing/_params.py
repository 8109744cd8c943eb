"""Argument checks shared by assigners, triggers and evictors, so their errors read alike."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from dataflow_engine.runtime.time.durations import to_millis


def positive(owner: str, what: str, value: object) -> int:
    """``value`` in milliseconds (or a count), refused unless > 0 as Flink's constructors do."""
    millis = to_millis(value, what)
    if millis <= 0:
        raise ValueError(f"{owner} parameters must satisfy 0 < {what} (got {what}={millis})")
    return millis


def positive_count(owner: str, what: str, value: object) -> int:
    """A number of elements: an ``int`` > 0 (a Time would be a mistake here)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{owner}: {what} must be an int, not {type(value).__name__}")
    return positive(owner, what, value)


def optional_millis(value: object, what: str) -> int:
    """PyFlink passes ``None`` for an omitted offset; it means 0."""
    return 0 if value is None else to_millis(value, what)


def flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what} must be a bool, not {type(value).__name__}")
    return value


def read_description(data: object, what: str, keys: Collection[str]) -> Mapping[str, Any]:
    """``data`` as a mapping with exactly ``keys`` (plus ``type``): typos fail, not default."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a {what} description must be a mapping, not {type(data).__name__}")
    expected = {"type", *keys}
    missing = sorted(expected - data.keys())
    unknown = sorted(str(key) for key in data.keys() - expected)
    if missing or unknown:
        raise ValueError(f"{what} description {dict(data)!r}: missing keys {missing}, "
                         f"unknown keys {unknown}")
    return data


def description_type(data: object, what: str) -> str:
    """The ``type`` of a description, before its other keys are known."""
    if not isinstance(data, Mapping):
        raise TypeError(f"a {what} description must be a mapping, not {type(data).__name__}")
    kind = data.get("type")
    if not isinstance(kind, str):
        raise ValueError(f"a {what} description needs a string 'type': {data!r}")
    return kind
