"""Field access and the built-in aggregations (sum, min, max) shared by producers and consumers.

Aggregated records are tuples, lists, Rows or mappings; ``field`` is an index, a Row's field
name or a mapping key.
As in Flink's ``sum``/``min``/``max`` (not ``minBy``), the result is the key's first record with
the aggregated field replaced.
"""

from __future__ import annotations

import copy
import operator
from collections.abc import Callable, Mapping
from typing import Any

from dataflow_engine.spec.model import OperatorType
from dataflow_engine.types.row import Row


def _min(a: Any, b: Any) -> Any:
    return b if b < a else a


def _max(a: Any, b: Any) -> Any:
    return b if b > a else a


AGGREGATORS: dict[OperatorType, Callable[[Any, Any], Any]] = {
    OperatorType.SUM: operator.add,
    OperatorType.MIN: _min,
    OperatorType.MAX: _max,
}

COMBINABLE = frozenset({OperatorType.SUM, OperatorType.MIN, OperatorType.MAX,
                        OperatorType.REDUCE})


def set_field(record: Any, field: int | str, value: Any) -> Any:
    """A copy of ``record`` with ``field`` replaced (the input is never mutated)."""
    kind = type(record)
    if kind is tuple:
        assert isinstance(field, int)
        return (*record[:field], value, *record[field + 1:])
    if kind is list:
        out = list(record)
        out[field] = value  # type: ignore[index]
        return out
    if kind is dict:
        out_dict = dict(record)
        out_dict[field] = value
        return out_dict
    if kind is Row:
        row = copy.copy(record)  # its names and kind, fields in a list of its own
        row[field] = value
        return row
    if isinstance(record, tuple) and hasattr(record, "_replace"):  # a namedtuple
        items = list(record)
        items[field] = value  # type: ignore[index]
        return type(record)(*items)
    if isinstance(record, Mapping):
        return {**record, field: value}
    raise TypeError(f"cannot aggregate field {field!r} of a {kind.__name__} record; "
                    "aggregate tuples, lists, Rows or mappings")
