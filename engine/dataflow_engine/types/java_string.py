"""What PyFlink's ``print()`` shows for a record, by the stream's declared type.

PyFlink turns a stream into text before its Java print sink (``DataStream._align_output_type``):
without a type (pickled records) a record prints as Python's ``str``; a ROW stream prints in
Python as ``+I[1,hello]`` (comma without space, fields by ``str``); any other type reaches
Java as a Java object and prints as its ``toString``: ``(hello,1)`` for a tuple, ``110.1`` for
the float 110.1, ``[1, 2]``, ``{k=v}``, ``2024-01-02 03:04:05.0``, and ``+I[a, b]`` for a row
inside such a record.
"""

from __future__ import annotations

import datetime
import math
import pickle
import struct
from collections.abc import Callable
from decimal import ROUND_FLOOR, Context, Decimal, localcontext
from typing import Any

from dataflow_engine.types.convert import converter
from dataflow_engine.types.row import Row
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
)

Formatter = Callable[[Any], str]
_FLOAT = converter(BasicTypeInfo(BasicType.FLOAT))


def printer(type_info: TypeInformation | None) -> Formatter:
    """How a print sink writes the records of a stream of this type, made once per stream."""
    if isinstance(type_info, (RowTypeInfo, ExternalTypeInfo)):
        # Formatted in Python, by a map PyFlink fuses with the operator before it: the record
        # is formatted as that operator made it (the runtime converts at real boundaries).
        return row_string
    return java_printer(type_info)


def java_printer(type_info: TypeInformation | None) -> Formatter:
    """Java's ``toString`` of each record converted to this type (what a Java sink, such as
    the FileSink's string encoder, writes); records of no type by Python's ``str``."""
    if type_info is None or isinstance(type_info, PickledBytesTypeInfo):
        return str
    convert, java = converter(type_info), _formatter(type_info)
    return lambda value: java(convert(value))


def print_form(value: Any, type_info: TypeInformation | None) -> str:
    """The line ``print()`` writes for ``value`` (without its ``N> `` prefix)."""
    return printer(type_info)(value)


def row_string(row: Any) -> str:
    """PyFlink's Python-side form of a ROW record: kind, then fields by ``str``, no spaces."""
    if not isinstance(row, Row):
        raise TypeError(f"a ROW stream prints Rows, not {type(row).__name__} {row!r}")
    return f"{row.get_row_kind()}[{','.join(str(item) for item in row)}]"


def java_string(value: Any, type_info: TypeInformation) -> str:
    """Java's ``toString`` of a value already converted to ``type_info`` (``converter``)."""
    return _formatter(type_info)(value)


def _formatter(type_info: TypeInformation) -> Formatter:
    inner = _non_null(type_info)
    return lambda value: "null" if value is None else inner(value)


def _non_null(type_info: TypeInformation) -> Formatter:
    match type_info:
        case BasicTypeInfo():
            return _BASIC[type_info.basic_type]
        case DateTypeInfo():
            return lambda value: f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
        case TimeTypeInfo():
            return lambda value: f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
        case TimestampTypeInfo():
            return _timestamp
        case PickledBytesTypeInfo():
            # A byte[] inside a tuple or row prints as Arrays.toString of the pickle.
            return lambda value: _signed_bytes(pickle.dumps(value))
        case PrimitiveArrayTypeInfo() if type_info.element_type == BasicTypeInfo(BasicType.BYTE):
            return _signed_bytes
        case (PrimitiveArrayTypeInfo() | BasicArrayTypeInfo() | ObjectArrayTypeInfo()
              | ListTypeInfo()):
            # Arrays print as Arrays.toString wherever they are: Java's print of a top-level
            # array is its identity ([I@1b6d3586), which no run can reproduce.
            element = _formatter(type_info.element_type)
            return lambda value: "[" + ", ".join(map(element, value)) + "]"
        case MapTypeInfo():
            key, item = _formatter(type_info.key_type), _formatter(type_info.value_type)
            return lambda value: "{" + ", ".join(
                f"{key(k)}={item(v)}" for k, v in value.items()) + "}"
        case TupleTypeInfo():
            fields = [_formatter(field) for field in type_info.field_types]
            return lambda value: "(" + ",".join(
                field(item) for field, item in zip(fields, value, strict=False)) + ")"
        case RowTypeInfo():
            fields = [_formatter(field) for field in type_info.field_types]
            return lambda value: f"{value.get_row_kind()}[" + ", ".join(
                field(item) for field, item in zip(fields, value, strict=False)) + "]"
        case ExternalTypeInfo():
            return _formatter(type_info.type_info)
    raise TypeError(f"no Java form for {type_info!r}")


def _signed_bytes(value: bytes) -> str:
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"


def _timestamp(value: datetime.datetime) -> str:
    """``java.sql.Timestamp.toString``: nanoseconds without trailing zeros, at least ``.0``."""
    fraction = f"{value.microsecond * 1000:09d}".rstrip("0") or "0"
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d} " \
           f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{fraction}"


def _instant(value: Any) -> str:
    """``Instant.toString`` (ISO-8601 in UTC): the fraction in groups of three digits."""
    moment = datetime.datetime(1970, 1, 1) + datetime.timedelta(seconds=value.seconds)
    nanos: int = value.nanos
    if nanos == 0:
        fraction = ""
    elif nanos % 1_000_000 == 0:
        fraction = f".{nanos // 1_000_000:03d}"
    elif nanos % 1000 == 0:
        fraction = f".{nanos // 1000:06d}"
    else:
        fraction = f".{nanos:09d}"
    return f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T" \
           f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}{fraction}Z"


def _big_decimal(value: Decimal) -> str:
    """``BigDecimal.toString`` writes as Python's ``str`` does, but has no negative zero."""
    return str(value.copy_abs() if value.is_zero() else value)


_BASIC: dict[BasicType, Formatter] = {
    BasicType.STRING: str, BasicType.CHAR: str,
    BasicType.BOOLEAN: lambda value: "true" if value else "false",
    BasicType.BYTE: str, BasicType.SHORT: str, BasicType.INT: str, BasicType.LONG: str,
    BasicType.BIG_INT: str,
    BasicType.FLOAT: lambda value: _floating(value, single=True),
    BasicType.DOUBLE: lambda value: _floating(value, single=False),
    BasicType.BIG_DEC: _big_decimal, BasicType.INSTANT: _instant,
}


# Float.toString and Double.toString --------------------------------------------------------

def _floating(value: float, single: bool) -> str:
    """Java's ``Float.toString``/``Double.toString`` as JDK 17 (Spark's and PyFlink's Java)
    prints them: the shortest decimal that reads back as the value, except a whole number
    below 2^63, whose digits are all shown (see ``_whole``); plain within [10^-3, 10^7), else
    ``d.dddE<n>``; always a digit after the point."""
    if math.isnan(value):
        return "NaN"
    if single:
        value = _FLOAT(value)
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    whole = magnitude.is_integer() and magnitude < 2.0**63
    digits, exponent = _whole(magnitude, single) if whole else _shortest(magnitude, single)
    text = _layout(digits, exponent)
    return "-" + text if value < 0 else text


def _whole(value: float, single: bool) -> tuple[str, int]:
    """JDK 17's FloatingDecimal writes a whole number below 2^63 from its exact digits, not the
    shortest ones (``1.23456792E8`` for the float 123456789): beyond the type's significand
    (24 or 53 bits) it only drops as many low digits as a power of two of the bits beyond it
    has, less one, rounding half up."""
    significand_bits = 24 if single else 53
    exact = int(value)
    beyond = exact.bit_length() - 1 - significand_bits - 1
    dropped = len(str(1 << beyond)) - 1 if beyond > 1 else 0
    if dropped:
        power = 10**dropped
        exact, residue = divmod(exact, power)
        exact += residue >= power // 2
    return _stripped(exact, dropped)


def _shortest(value: float, single: bool) -> tuple[str, int]:
    """The digits and exponent (value ~ digits x 10^exponent) Java picks. Python's ``repr`` of
    a double makes the same choice when it has two digits or more, or is exact."""
    if not single:
        shown = Decimal(repr(value))
        _, digits, exponent = shown.as_tuple()
        assert isinstance(exponent, int)
        stripped = _stripped(int("".join(map(str, digits))), exponent)
        if len(stripped[0]) > 1 or shown == Decimal(value):
            return stripped
    return _shortest_exactly(value, single)


def _shortest_exactly(value: float, single: bool) -> tuple[str, int]:
    """Java's rule, exactly: among the decimals that round to the value, those of the fewest
    digits (of one or two digits when one suffices), the closest, the even one on a tie."""
    below, above, even = _neighbours(value, single)
    with localcontext(Context(prec=1200)):
        exact, low = Decimal(value), Decimal(below)
        high = Decimal(above) if math.isfinite(above) else exact + (exact - low)
        low, high = (low + exact) / 2, (exact + high) / 2

        def rounds_to_value(candidate: Decimal) -> bool:
            return low < candidate < high or (even and candidate in (low, high))

        def candidates(length: int) -> list[tuple[int, int]]:
            exponent = exact.adjusted() - length + 1
            floor = int(exact.scaleb(-exponent).to_integral_value(rounding=ROUND_FLOOR))
            return [(coefficient, exponent) for coefficient in (floor, floor + 1)
                    if rounds_to_value(Decimal(coefficient).scaleb(exponent))]

        length = 1
        while not candidates(length):
            length += 1
        coefficient, exponent = min(
            candidates(max(length, 2)),
            key=lambda c: (abs(Decimal(c[0]).scaleb(c[1]) - exact), c[0] % 2))
    return _stripped(coefficient, exponent)


def _neighbours(value: float, single: bool) -> tuple[float, float, bool]:
    """The next smaller and larger values of the type (inf past the largest), and whether
    the value's significand is even (then a tie rounds to it)."""
    if single:
        (bits,) = struct.unpack("<I", struct.pack("<f", value))
        below, above = (struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits - 1, bits + 1))
        return below, above, bits % 2 == 0
    (bits,) = struct.unpack("<Q", struct.pack("<d", value))
    return math.nextafter(value, 0.0), math.nextafter(value, math.inf), bits % 2 == 0


def _stripped(coefficient: int, exponent: int) -> tuple[str, int]:
    while coefficient % 10 == 0:
        coefficient //= 10
        exponent += 1
    return str(coefficient), exponent


def _layout(digits: str, exponent: int) -> str:
    scientific = len(digits) - 1 + exponent
    if -3 <= scientific < 7:
        point = len(digits) + exponent  # digits before the decimal point
        if point <= 0:
            return "0." + "0" * -point + digits
        if point >= len(digits):
            return digits + "0" * (point - len(digits)) + ".0"
        return digits[:point] + "." + digits[point:]
    return f"{digits[0]}.{digits[1:] or '0'}E{scientific}"
