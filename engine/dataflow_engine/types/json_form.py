"""Typed values as JSON, so a ``from_collection`` with a declared type fits in a manifest.

A manifest carries the elements of a collection source as JSON; with the operator's
``outputType`` they may be any value of that type. Each type has one JSON form, the one a person
would write: numbers and strings as themselves, DECIMAL as a string (exact), dates and times in
ISO 8601, bytes in base64, tuples and rows as arrays (a row of another kind than +I as
``{"rowKind": "-U", "fields": [...]}``), maps as objects when their keys are strings and as
``[key, value]`` pairs otherwise. Decoding checks the form and names the element that breaks it.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import math
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any

from dataflow_engine.types.convert import converter
from dataflow_engine.types.instant import Instant
from dataflow_engine.types.row import Row, RowKind
from dataflow_engine.types.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ExternalTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    type_text,
)

Json = Any
_BYTES = BasicTypeInfo(BasicType.BYTE)
_TEXT_KEYS = frozenset({BasicType.STRING, BasicType.CHAR})
_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JsonFormError(ValueError):
    """A JSON value that is not the form of the declared type; ``path`` says where inside."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem


def to_json(value: Any, type_info: TypeInformation | None) -> Json:
    """The JSON form of a value of ``type_info`` (already converted to it); None: plain JSON,
    tuples as arrays."""
    if value is None:
        return None
    match type_info:
        case None | PickledBytesTypeInfo():
            return _plain(value)
        case ExternalTypeInfo():
            return to_json(value, type_info.type_info)
        case BasicTypeInfo():
            return _basic_to_json(value, type_info.basic_type)
        case DateTypeInfo() | TimeTypeInfo() | TimestampTypeInfo():
            return value.isoformat()
        case PrimitiveArrayTypeInfo() if type_info.element_type == _BYTES:
            return base64.b64encode(value).decode("ascii")
        case (PrimitiveArrayTypeInfo() | BasicArrayTypeInfo() | ObjectArrayTypeInfo()
              | ListTypeInfo()):
            return [to_json(item, type_info.element_type) for item in value]
        case MapTypeInfo():
            if _text_keys(type_info):
                return {key: to_json(item, type_info.value_type) for key, item in value.items()}
            return [[to_json(key, type_info.key_type), to_json(item, type_info.value_type)]
                    for key, item in value.items()]
        case TupleTypeInfo():
            return [to_json(item, field) for item, field in zip(value, type_info.field_types,
                                                               strict=False)]
        case RowTypeInfo():
            fields = [to_json(item, field) for item, field in zip(value, type_info.field_types,
                                                                 strict=False)]
            kind = value.get_row_kind()
            return fields if kind is RowKind.INSERT else {"rowKind": str(kind), "fields": fields}
    raise TypeError(f"no JSON form for {type_info!r}")


def from_json(data: Json, type_info: TypeInformation | None, path: str = "") -> Any:
    """The value a JSON form stands for (not yet converted: see ``converter``); raises
    JsonFormError naming the path inside the element."""
    if data is None:
        return None
    match type_info:
        case None | PickledBytesTypeInfo():
            return data
        case ExternalTypeInfo():
            return from_json(data, type_info.type_info, path)
        case BasicTypeInfo():
            return _basic_from_json(data, type_info, path)
        case DateTypeInfo():
            return _parsed(datetime.date.fromisoformat, data, "an ISO date such as "
                           "'2024-01-02'", path)
        case TimeTypeInfo():
            return _parsed(datetime.time.fromisoformat, data, "an ISO time such as "
                           "'03:04:05.123'", path)
        case TimestampTypeInfo():
            return _parsed(datetime.datetime.fromisoformat, data, "an ISO date and time such "
                           "as '2024-01-02T03:04:05.123'", path)
        case PrimitiveArrayTypeInfo() if type_info.element_type == _BYTES:
            return _parsed(_base64, data, "base64 text", path)
        case (PrimitiveArrayTypeInfo() | BasicArrayTypeInfo() | ObjectArrayTypeInfo()
              | ListTypeInfo()):
            items = _array(data, type_info, path)
            return [from_json(item, type_info.element_type, f"{path}[{i}]")
                    for i, item in enumerate(items)]
        case MapTypeInfo():
            return _map_from_json(data, type_info, path)
        case TupleTypeInfo():
            items = _array(data, type_info, path, len(type_info.field_types))
            return tuple(from_json(item, field, f"{path}[{i}]") for i, (item, field)
                         in enumerate(zip(items, type_info.field_types, strict=True)))
        case RowTypeInfo():
            return _row_from_json(data, type_info, path)
    raise TypeError(f"no JSON form for {type_info!r}")


def element_decoder(type_info: TypeInformation) -> Callable[[Json, str], Any]:
    """``decode(data, path)``: the record a collection source of this type emits for one
    element in JSON form, converted as PyFlink converts it; JsonFormError names the path."""
    convert = converter(type_info)

    def decode(data: Json, path: str) -> Any:
        value = from_json(data, type_info, path)
        try:
            return convert(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise JsonFormError(path, str(exc)) from None

    return decode


def _plain(value: Any) -> Json:
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def _basic_to_json(value: Any, basic: BasicType) -> Json:
    if basic is BasicType.BIG_DEC:
        return str(value)
    if basic is BasicType.INSTANT:
        moment = datetime.datetime.fromtimestamp(value.seconds, datetime.UTC)
        return f"{moment.replace(tzinfo=None).isoformat()}.{value.nanos:09d}Z"
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _basic_from_json(data: Json, type_info: BasicTypeInfo, path: str) -> Any:
    basic = type_info.basic_type
    expected: tuple[type, ...]
    match basic:
        case BasicType.STRING | BasicType.CHAR:
            expected, what = (str,), "a string"
        case BasicType.BOOLEAN:
            expected, what = (bool,), "true or false"
        case BasicType.FLOAT | BasicType.DOUBLE:
            if isinstance(data, str) and data in _NON_FINITE:
                return _NON_FINITE[data]
            expected, what = (int, float), "a number (or 'NaN', 'Infinity', '-Infinity')"
        case BasicType.BIG_DEC:
            if isinstance(data, bool) or not isinstance(data, str | int):
                raise JsonFormError(path, f"{type_text(type_info)} is written as a string of "
                                    f"digits such as '12.50', not {data!r}")
            return _parsed(Decimal, str(data), "a decimal number such as '12.50'", path)
        case BasicType.INSTANT:
            return _parsed(_instant, data, "an ISO instant such as "
                           "'2024-01-02T03:04:05.123456789Z'", path)
        case _:
            expected, what = (int,), "an integer"
    if isinstance(data, bool) and bool not in expected:
        expected = ()
    if not isinstance(data, expected):
        raise JsonFormError(path, f"{type_text(type_info)} is written as {what}, not {data!r}")
    return data


def _instant(text: str) -> Instant:
    if not text.endswith("Z"):
        raise ValueError("no 'Z'")
    whole, _, fraction = text[:-1].partition(".")
    moment = datetime.datetime.fromisoformat(whole).replace(tzinfo=datetime.UTC)
    if fraction and not (fraction.isdigit() and len(fraction) <= 9):
        raise ValueError("bad fraction")
    return Instant(int(moment.timestamp()), int(fraction.ljust(9, "0")) if fraction else 0)


def _base64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def _parsed(parse: Callable[[str], Any], data: Json, what: str, path: str) -> Any:
    if isinstance(data, str):
        try:
            return parse(data)
        except (ValueError, InvalidOperation, binascii.Error):
            pass
    raise JsonFormError(path, f"expected {what}, not {data!r}")


def _array(data: Json, type_info: TypeInformation, path: str,
           length: int | None = None) -> list[Any]:
    if not isinstance(data, list):
        raise JsonFormError(path, f"{type_text(type_info)} is written as an array, "
                            f"not {data!r}")
    if length is not None and len(data) != length:
        raise JsonFormError(path, f"{type_text(type_info)} has {length} fields, the array "
                            f"{data!r} has {len(data)}")
    return data


def _text_keys(type_info: MapTypeInfo) -> bool:
    key = type_info.key_type
    return isinstance(key, BasicTypeInfo) and key.basic_type in _TEXT_KEYS


def _map_from_json(data: Json, type_info: MapTypeInfo, path: str) -> dict[Any, Any]:
    if isinstance(data, dict) and _text_keys(type_info):
        pairs = list(data.items())
    elif isinstance(data, list) and all(isinstance(p, list) and len(p) == 2 for p in data):
        pairs = [(key, item) for key, item in data]
    else:
        form = "an object or " if _text_keys(type_info) else ""
        raise JsonFormError(path, f"{type_text(type_info)} is written as {form}an array of "
                            f"[key, value] pairs, not {data!r}")
    return {from_json(key, type_info.key_type, f"{path}[{i}][0]"):
            from_json(item, type_info.value_type, f"{path}[{key!r}]")
            for i, (key, item) in enumerate(pairs)}


def _row_from_json(data: Json, type_info: RowTypeInfo, path: str) -> Row:
    kind = RowKind.INSERT
    if isinstance(data, dict) and set(data) == {"rowKind", "fields"}:
        kinds = {str(k): k for k in RowKind}
        if data["rowKind"] not in kinds:
            raise JsonFormError(f"{path}.rowKind", f"a row kind is one of {sorted(kinds)}, "
                                f"not {data['rowKind']!r}")
        kind, data = kinds[data["rowKind"]], data["fields"]
    fields = _array(data, type_info, path, len(type_info.field_types))
    row = Row(*(from_json(item, field, f"{path}[{i}]") for i, (item, field)
                in enumerate(zip(fields, type_info.field_types, strict=True))))
    row.set_field_names(type_info.get_field_names())
    row.set_row_kind(kind)
    return row
