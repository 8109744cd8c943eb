"""Flink's ``Row`` as PyFlink has it: a record of fields reached by position, or by name when
it has names, marked with the change it stands for in a changelog (its ``RowKind``).

Rows compare as PyFlink's do: named rows by their names' values whatever the order (and only
to named rows), unnamed ones by position; the kind is part of equality, and not of the hash.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from enum import Enum
from typing import Any


class RowKind(Enum):
    """Insert, the two halves of an update, or delete; ``str()`` is Flink's short form."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return _SHORT[self]


_SHORT = {RowKind.INSERT: "+I", RowKind.UPDATE_BEFORE: "-U", RowKind.UPDATE_AFTER: "+U",
          RowKind.DELETE: "-D"}
_INTERNAL = frozenset({"_names", "_values", "_kind"})


class Row:
    """``Row(1, "a")`` (by position) or ``Row(id=1, name="a")`` (named, in that order). A row of
    names makes rows: ``Row("id", "name")(1, "a")``."""

    __slots__ = ("_kind", "_names", "_values")

    _names: list[str] | None
    _values: list[Any]
    _kind: RowKind

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if args and kwargs:
            raise ValueError("a Row takes its fields by position or by name, not both")
        object.__setattr__(self, "_names", list(kwargs) if kwargs else None)
        object.__setattr__(self, "_values", list(kwargs.values()) if kwargs else list(args))
        object.__setattr__(self, "_kind", RowKind.INSERT)

    @staticmethod
    def of_kind(row_kind: RowKind, *args: Any, **kwargs: Any) -> Row:
        row = Row(*args, **kwargs)
        row.set_row_kind(row_kind)
        return row

    @staticmethod
    def _made(names: Sequence[str] | None, values: Sequence[Any], kind: RowKind) -> Row:
        row = Row(*values)
        if names is not None:
            row.set_field_names(list(names))
        row.set_row_kind(kind)
        return row

    def get_row_kind(self) -> RowKind:
        return self._kind

    def set_row_kind(self, row_kind: RowKind) -> None:
        object.__setattr__(self, "_kind", row_kind)

    def set_field_names(self, field_names: list[str]) -> None:
        object.__setattr__(self, "_names", list(field_names))

    def get_field_names(self) -> list[str] | None:
        return None if self._names is None else list(self._names)

    def get_fields_by_names(self, names: list[str]) -> list[Any]:
        if self._names is None or names == self._names:
            return list(self._values)
        unknown = sorted(set(names) - set(self._names))
        if unknown:
            raise KeyError(f"fields {unknown} are not among {self._names}")
        return [self._values[self._names.index(name)] for name in names]

    def as_dict(self, recursive: bool = False) -> dict[str, Any]:
        """The named fields as a dict; ``recursive`` turns nested rows (in lists and dicts too)
        into dicts as well."""
        if self._names is None:
            raise TypeError("a Row without field names has no dict form")
        values = (_as_plain(value) for value in self._values) if recursive else self._values
        return dict(zip(self._names, values, strict=True))

    def __call__(self, *values: Any) -> Row:
        """A row whose names are this row's values."""
        if len(values) > len(self._values):
            raise ValueError(f"{self!r} names {len(self._values)} fields, not {len(values)}")
        return Row._made([str(name) for name in self._values[:len(values)]], values,
                         self._kind)

    def _index(self, name: str) -> int:
        if self._names is None or name not in self._names:
            raise KeyError(name)
        return self._names.index(name)

    def __getitem__(self, item: int | slice | str) -> Any:
        if isinstance(item, (int, slice)):
            return self._values[item]
        return self._values[self._index(item)]

    def __setitem__(self, item: int | slice | str, value: Any) -> None:
        if isinstance(item, (int, slice)):
            self._values[item] = value
        else:
            self._values[self._index(item)] = value

    def __getattr__(self, name: str) -> Any:
        names = object.__getattribute__(self, "_names") if name not in _INTERNAL else None
        if names is None or name not in names:
            raise AttributeError(name)
        return self._values[names.index(name)]

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a Row's fields are set by index or name: row[{name!r}] = ...")

    def __contains__(self, item: object) -> bool:
        return item in (self._names if self._names is not None else self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Row) or self._kind != other._kind:
            return False
        if self._names is None or other._names is None:
            return self._names is None and other._names is None and self._values == other._values
        return (sorted(self._names) == sorted(other._names)
                and all(value == other[name] for name, value in zip(self._names, self._values,
                                                                    strict=True)))

    def __hash__(self) -> int:
        return hash(tuple(self._values))

    def __reduce__(self) -> tuple[Any, ...]:
        return Row._made, (self._names, tuple(self._values), self._kind)

    def __repr__(self) -> str:
        if self._names is None:
            return f"<Row({', '.join(repr(value) for value in self._values)})>"
        return "Row(" + ", ".join(f"{name}={value!r}" for name, value
                                  in zip(self._names, self._values, strict=True)) + ")"


def _as_plain(value: Any) -> Any:
    if isinstance(value, Row):
        return value.as_dict(recursive=True)
    if isinstance(value, list):
        return [_as_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _as_plain(item) for key, item in value.items()}
    return value
