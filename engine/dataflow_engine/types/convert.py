"""What a value becomes when PyFlink serializes it with a declared type and reads it back: the
round trip through its coders (``pyflink/fn_execution/coder_impl_fast.pyx``, the ones that
run), made once per type by ``converter``.

Integers are C integers of the type's width: an int outside it raises OverflowError as the
coder's conversion does, and other numbers are truncated as C's ``int()`` of them is. FLOAT is
a C float (``110.1`` comes back ``110.0999984741211``), times lose what is finer than a
millisecond, containers come back as the Python type PyFlink decodes them to, and a map
iterates in the order of the Java ``HashMap`` it was. Errors name the type and the value.
"""

from __future__ import annotations

import datetime
import math
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

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

Converter = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def converter(type_info: TypeInformation | None) -> Converter:
    """The round trip of one type's values; identity without a type or for PICKLED_BYTE_ARRAY
    (pickling gives an equal object back)."""
    if type_info is None:
        return _identity
    return _converter(type_info)


def needs_conversion(type_info: TypeInformation | None) -> bool:
    """Whether records of this type change (or may be refused) when they are serialized."""
    return type_info is not None and not isinstance(type_info, PickledBytesTypeInfo)


def keeps_objects(type_info: TypeInformation | None) -> bool:
    """Whether converting a record to this type hands on some of its objects as they are: all
    of it without a type, and the values of PICKLED_BYTE_ARRAY fields at any depth (anything
    else is made anew)."""
    match type_info:
        case None | PickledBytesTypeInfo():
            return True
        case RowTypeInfo() | TupleTypeInfo():
            return any(keeps_objects(field) for field in type_info.field_types)
        case MapTypeInfo():
            return keeps_objects(type_info.key_type) or keeps_objects(type_info.value_type)
        case ExternalTypeInfo():
            return keeps_objects(type_info.type_info)
        case ObjectArrayTypeInfo() | ListTypeInfo():  # arrays of basics hold atoms
            return keeps_objects(type_info.element_type)
    return False


def element_converter(type_info: TypeInformation | None) -> Converter:
    """What a Python operator reads for an element a program gives ``from_collection`` with
    this type: PyFlink's ``to_internal_type`` takes a row as a Row, a dict, an object or a
    sequence and a tuple as any sequence, then the coder's round trip applies."""
    if type_info is None:
        return _identity
    convert = _converter(type_info)
    return lambda value: convert(_shaped(value, type_info))


def _shaped(value: Any, type_info: TypeInformation) -> Any:
    """Containers as the type's coder takes them, field by field."""
    if value is None:
        return None
    match type_info:
        case ExternalTypeInfo():
            return _shaped(value, type_info.type_info)
        case RowTypeInfo():
            return _row_shaped(value, type_info)
        case TupleTypeInfo() if isinstance(value, tuple | list | Row):
            return tuple(_shaped(item, field)
                         for item, field in zip(value, type_info.field_types, strict=False))
        case PrimitiveArrayTypeInfo() if type_info.element_type == BasicTypeInfo(BasicType.BYTE):
            return value
        case (PrimitiveArrayTypeInfo() | BasicArrayTypeInfo() | ObjectArrayTypeInfo()
              | ListTypeInfo()) if isinstance(value, tuple | list):
            return [_shaped(item, type_info.element_type) for item in value]
        case MapTypeInfo() if isinstance(value, Mapping):
            return {_shaped(key, type_info.key_type): _shaped(item, type_info.value_type)
                    for key, item in value.items()}
    return value


def _row_shaped(value: Any, type_info: RowTypeInfo) -> Any:
    names = type_info.get_field_names()
    if isinstance(value, Row):
        values = (value.get_fields_by_names(names) if value.get_field_names() is not None
                  else list(value))
        kind = value.get_row_kind()
    elif isinstance(value, Mapping):
        values, kind = [value.get(name) for name in names], RowKind.INSERT
    elif isinstance(value, tuple | list):
        values, kind = list(value), RowKind.INSERT
    elif hasattr(value, "__dict__"):
        values, kind = [vars(value).get(name) for name in names], RowKind.INSERT
    else:
        return value
    row = Row(*(_shaped(item, field)
                for item, field in zip(values, type_info.field_types, strict=False)))
    if len(row) == len(names):  # else the conversion says how many fields are missing
        row.set_field_names(names)
    row.set_row_kind(kind)
    return row


def _converter(type_info: TypeInformation) -> Converter:
    name = type_text(type_info)
    match type_info:
        case PickledBytesTypeInfo():
            return _identity
        case BasicTypeInfo():
            return _BASIC[type_info.basic_type](name)
        case DateTypeInfo():
            return _date
        case TimeTypeInfo():
            return _time
        case TimestampTypeInfo():
            return _timestamp
        case PrimitiveArrayTypeInfo() if type_info.element_type == BasicTypeInfo(BasicType.BYTE):
            return _bytes
        case PrimitiveArrayTypeInfo():
            return _list(name, _converter(type_info.element_type), nulls=False)
        case BasicArrayTypeInfo() | ObjectArrayTypeInfo() | ListTypeInfo():
            return _list(name, _converter(type_info.element_type), nulls=True)
        case MapTypeInfo():
            return _map(name, type_info)
        case TupleTypeInfo():
            return _tuple(name, [_nullable(field) if _java_nullable(field) else _converter(field)
                                 for field in type_info.field_types])
        case RowTypeInfo():
            return _row(name, type_info)
        case ExternalTypeInfo():
            return _converter(type_info.type_info)
    raise TypeError(f"no conversion for {type_info!r}")


def _mismatch(name: str, value: Any) -> TypeError:
    return TypeError(f"{name} cannot hold {type(value).__name__} {value!r}")


# Numbers -----------------------------------------------------------------------------------

def _as_int(name: str, value: Any) -> int:
    """Python's int of the value where C's integer conversion takes it: ints and bools as they
    are, other numbers (floats, Decimals) truncated through their ``__int__``."""
    if isinstance(value, int):
        return int(value)
    if hasattr(type(value), "__int__"):
        return int(value)
    raise _mismatch(name, value)


def _integer(bits: int, signed: bool = True) -> Callable[[str], Converter]:
    low = -(1 << (bits - 1)) if signed else 0
    high = (1 << (bits - 1)) - 1 if signed else (1 << bits) - 1

    def make(name: str) -> Converter:
        def convert(value: Any) -> int:
            number = _as_int(name, value)
            if not low <= number <= high:
                raise OverflowError(f"{value!r} is out of {name}'s range: PyFlink writes it "
                                    f"as a {bits}-bit integer, {low} to {high}")
            return number

        return convert

    return make


def _boolean(name: str) -> Converter:
    """Written as one unsigned byte, read back as whether it is non-zero."""
    byte = _integer(8, signed=False)(name)
    return lambda value: bool(byte(value))


def _as_double(name: str, value: Any) -> float:
    """A Python float itself (not a subclass such as numpy's float64): what a coder reads back."""
    if type(value) is float:
        return value
    if hasattr(type(value), "__float__") or hasattr(type(value), "__index__"):
        return float(value)
    raise _mismatch(name, value)


def _float(name: str) -> Converter:
    """A C float: the nearest one, infinite beyond its range as C's cast makes it."""
    def convert(value: Any) -> float:
        double = _as_double(name, value)
        try:
            (single,) = struct.unpack("<f", struct.pack("<f", double))
        except OverflowError:
            return math.copysign(math.inf, double)
        return float(single)

    return convert


def _double(name: str) -> Converter:
    return lambda value: _as_double(name, value)


def _string(name: str) -> Converter:
    """Written as UTF-8: a str (no lone surrogates), read back as a plain str."""
    def convert(value: Any) -> str:
        if not isinstance(value, str):
            raise _mismatch(name, value)
        if not value.isascii():
            value.encode("utf-8")
        return str(value)

    return convert


def _decimal(name: str) -> Converter:
    """Written as its ``str``, read back as a Decimal of it (InvalidOperation if none)."""
    return lambda value: value if type(value) is Decimal else Decimal(str(value))


def _instant(name: str) -> Converter:
    """Written as its seconds (64-bit) and nanoseconds (32-bit); None has a marker of its own,
    so it may stand anywhere. The Instant read back equals the one written."""
    seconds, nanos = _integer(64)(f"{name} seconds"), _integer(32)(f"{name} nanos")

    def convert(value: Any) -> Any:
        if value is not None:
            if not (hasattr(value, "seconds") and hasattr(value, "nanos")):
                raise _mismatch(name, value)
            seconds(value.seconds)
            nanos(value.nanos)
        return value

    return convert


_BASIC: dict[BasicType, Callable[[str], Converter]] = {
    BasicType.BYTE: _integer(8), BasicType.SHORT: _integer(16), BasicType.INT: _integer(32),
    BasicType.LONG: _integer(64), BasicType.BIG_INT: _integer(64),  # PyFlink's BigIntCoder
    BasicType.BOOLEAN: _boolean, BasicType.FLOAT: _float, BasicType.DOUBLE: _double,
    BasicType.STRING: _string, BasicType.CHAR: _string, BasicType.BIG_DEC: _decimal,
    BasicType.INSTANT: _instant,
}


# Times -------------------------------------------------------------------------------------

_EPOCH = datetime.datetime(1970, 1, 1)


def _date(value: Any) -> datetime.date:
    """Days since the epoch: a datetime keeps its date."""
    if not isinstance(value, datetime.date):
        raise _mismatch("SQL_DATE", value)
    return value if type(value) is datetime.date else datetime.date.fromordinal(
        value.toordinal())


def _time(value: Any) -> datetime.time:
    """Milliseconds of the day: microseconds and the zone are dropped."""
    if not isinstance(value, (datetime.time, datetime.datetime)):
        raise _mismatch("SQL_TIME", value)
    return datetime.time(value.hour, value.minute, value.second,
                         value.microsecond // 1000 * 1000)


def _timestamp(value: Any) -> datetime.datetime:
    """Milliseconds since the epoch of the wall-clock time taken as UTC, read back naive. The
    whole seconds are truncated toward zero first, as PyFlink does: a time before 1970 with a
    fraction of a second comes back one second later."""
    if not isinstance(value, datetime.datetime):
        raise _mismatch("SQL_TIMESTAMP", value)
    seconds = int(value.replace(tzinfo=datetime.UTC).timestamp())
    return _EPOCH + datetime.timedelta(milliseconds=seconds * 1000 + value.microsecond // 1000)


# Containers --------------------------------------------------------------------------------

def _bytes(value: Any) -> bytes:
    """``byte[]`` is Python bytes both ways."""
    if not isinstance(value, (bytes, bytearray)):
        raise _mismatch("PRIMITIVE_ARRAY<BYTE>", value)
    return bytes(value)


def _list(name: str, element: Converter, nulls: bool) -> Converter:
    """A Python list (PyFlink's coder takes nothing else); a primitive array has no nulls."""
    def convert(value: Any) -> list[Any]:
        if not isinstance(value, list):
            raise _mismatch(name, value)
        if nulls:
            return [None if item is None else element(item) for item in value]
        return [element(item) for item in value]

    return convert


#: Basic types whose Java serializer writes null (Flink's String, BigInteger, BigDecimal and
#: Instant serializers); the others are Java primitives' boxes and refuse it.
_NULLABLE_BASICS = frozenset({BasicType.STRING, BasicType.BIG_INT, BasicType.BIG_DEC,
                              BasicType.INSTANT})


def _java_nullable(type_info: TypeInformation) -> bool:
    """Whether a tuple field of this type may be null (its Java serializer writes null)."""
    if isinstance(type_info, BasicTypeInfo):
        return type_info.basic_type in _NULLABLE_BASICS
    return isinstance(type_info, DateTypeInfo | TimeTypeInfo | TimestampTypeInfo)


def _nullable(type_info: TypeInformation) -> Converter:
    convert = _converter(type_info)
    return lambda value: None if value is None else convert(value)


def _tuple(name: str, fields: list[Converter]) -> Converter:
    """A Python tuple with at least the declared fields (the rest are not written); a field is
    null only where its Java serializer takes null (a STRING, a DECIMAL, a date...)."""
    def convert(value: Any) -> tuple[Any, ...]:
        if not isinstance(value, tuple):
            raise _mismatch(name, value)
        if len(value) < len(fields):
            raise ValueError(f"{name} has {len(fields)} fields, {value!r} has {len(value)}")
        return tuple(field(item) for field, item in zip(fields, value, strict=False))

    return convert


def _row(name: str, type_info: RowTypeInfo) -> Converter:
    """A Row, its fields taken by the type's names when it has names of its own, read back
    with the type's names (Java's ``f0``... for an unnamed type) and the row's kind."""
    names = type_info.get_field_names()
    fields = [_converter(field) for field in type_info.field_types]

    def convert(value: Any) -> Row:
        if not isinstance(value, Row):
            raise _mismatch(name, value)
        values = value.get_fields_by_names(names)
        if len(values) < len(fields):
            raise ValueError(f"{name} has {len(fields)} fields, {value!r} has {len(values)}")
        row = Row(*(None if item is None else field(item)
                    for field, item in zip(fields, values, strict=False)))
        row.set_field_names(names)
        row.set_row_kind(value.get_row_kind())
        return row

    return convert


def _map(name: str, type_info: MapTypeInfo) -> Converter:
    """A dict (keys never null), in the order Java's HashMap of it iterates."""
    key, item = _converter(type_info.key_type), _converter(type_info.value_type)
    order = _hash_order(type_info.key_type)

    def convert(value: Any) -> dict[Any, Any]:
        if not isinstance(value, Mapping):
            raise _mismatch(name, value)
        converted: dict[Any, Any] = {}
        for k, v in value.items():
            converted[key(k)] = None if v is None else item(v)
        return order(converted)

    return convert


# Java's HashMap order ----------------------------------------------------------------------

def _int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def _string_hash(value: str) -> int:
    """``String.hashCode``, over UTF-16 code units."""
    h = 0
    encoded = value.encode("utf-16-be", "surrogatepass")
    for index in range(0, len(encoded), 2):
        h = (31 * h + (encoded[index] << 8 | encoded[index + 1])) & 0xFFFFFFFF
    return _int32(h)


def _long_hash(value: int) -> int:
    bits = value & 0xFFFFFFFFFFFFFFFF
    return _int32(bits ^ (bits >> 32))


def _float_hash(value: float) -> int:
    """``Float.hashCode``: the bits, NaN's canonical."""
    if math.isnan(value):
        return 0x7FC00000
    return _int32(struct.unpack("<I", struct.pack("<f", value))[0])


def _double_hash(value: float) -> int:
    """``Double.hashCode``: the bits' halves xor-ed, NaN's canonical."""
    bits = 0x7FF8000000000000 if math.isnan(value) else struct.unpack(
        "<Q", struct.pack("<d", value))[0]
    return _int32(bits ^ (bits >> 32))


_JAVA_HASHES: dict[BasicType, Callable[[Any], int]] = {
    BasicType.STRING: _string_hash, BasicType.CHAR: _string_hash,
    BasicType.BOOLEAN: lambda value: 1231 if value else 1237,
    BasicType.BYTE: int, BasicType.SHORT: int, BasicType.INT: int,
    BasicType.LONG: _long_hash, BasicType.FLOAT: _float_hash, BasicType.DOUBLE: _double_hash,
}


def _hash_order(key_type: TypeInformation) -> Callable[[dict[Any, Any]], dict[Any, Any]]:
    """Java's ``HashMap`` (what Flink's MapSerializer reads a map into, sized for its entries)
    iterates by bucket, then in insertion order. Keys of other types keep the dict's order."""
    if not isinstance(key_type, BasicTypeInfo) or key_type.basic_type not in _JAVA_HASHES:
        return _identity
    java_hash = _JAVA_HASHES[key_type.basic_type]

    def order(entries: dict[Any, Any]) -> dict[Any, Any]:
        if len(entries) < 2:
            return entries
        mask = _capacity(len(entries)) - 1

        def bucket(key: Any) -> int:
            h = java_hash(key) & 0xFFFFFFFF
            return (h ^ (h >> 16)) & mask

        return {key: entries[key] for key in sorted(entries, key=bucket)}

    return order


def _capacity(size: int) -> int:
    """The table size of ``new HashMap<>(size)`` after ``size`` puts: the power of two at
    least ``size``, doubled while ``size`` exceeds three quarters of it."""
    capacity = 1 << (size - 1).bit_length()
    while size > capacity * 3 // 4:
        capacity <<= 1
    return capacity
