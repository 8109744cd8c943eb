"""What a value becomes after PyFlink writes it with its declared type and reads it back: the
facts of the coders that run (pyflink/fn_execution/coder_impl_fast.pyx and stream_fast.pyx of
apache-flink 2.3.0, with the C conversions Cython 3.2 generates for them in the .c files)."""

from __future__ import annotations

import datetime
import decimal
import math
from decimal import Decimal
from typing import Any

import pytest

from dataflow_engine.api.common.time import Instant
from dataflow_engine.types import Row, RowKind, TypeInformation, Types, converter
from dataflow_engine.types.typeinfo import ExternalTypeInfo

pytestmark = pytest.mark.unit

T = Types

# (type, value, what comes back)
ROUND_TRIPS: list[tuple[TypeInformation, Any, Any]] = [
    # TinyInt/SmallInt/Int/BigIntCoder write int8/16/32/64; BIG_INT uses the BigIntCoder too
    (T.BYTE(), 127, 127), (T.BYTE(), -128, -128), (T.SHORT(), 32767, 32767),
    (T.INT(), 2**31 - 1, 2**31 - 1), (T.LONG(), -(2**63), -(2**63)),
    (T.BIG_INT(), 2**63 - 1, 2**63 - 1),
    # Cython converts other numbers through their __int__ (C truncation)
    (T.INT(), 3.9, 3), (T.INT(), -3.9, -3), (T.LONG(), Decimal("7.5"), 7),
    # write_float takes a C float: 110.1 -> 110.0999984741211 (state_access prints it)
    (T.FLOAT(), 110.1, 110.0999984741211), (T.FLOAT(), 30.2, 30.200000762939453),
    (T.FLOAT(), 3, 3.0), (T.FLOAT(), 1e40, math.inf), (T.FLOAT(), -1e40, -math.inf),
    (T.DOUBLE(), 110.1, 110.1), (T.DOUBLE(), 3, 3.0),
    # BooleanCoder writes an unsigned byte and reads `not not byte`
    (T.BOOLEAN(), True, True), (T.BOOLEAN(), 0, False), (T.BOOLEAN(), 2, True),
    (T.STRING(), "héllo", "héllo"), (T.CHAR(), "a", "a"),
    # BigDecimalCoder writes str(value), reads Decimal(text)
    (T.BIG_DEC(), 1.1, Decimal("1.1")), (T.BIG_DEC(), 5, Decimal("5")),
    # DateCoder: days since the epoch
    (T.SQL_DATE(), datetime.datetime(2024, 1, 2, 3, 4), datetime.date(2024, 1, 2)),
    # TimeCoder: milliseconds of the day, microseconds truncated
    (T.SQL_TIME(), datetime.time(3, 4, 5, 123456), datetime.time(3, 4, 5, 123000)),
    (T.SQL_TIME(), datetime.time(3, 4, 5, tzinfo=datetime.UTC), datetime.time(3, 4, 5)),
    # TimestampCoder(3): wall clock taken as UTC, milliseconds, read back naive
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456),
     datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)),
    (T.SQL_TIMESTAMP(),
     datetime.datetime(2024, 1, 2, 3, 4, 5, tzinfo=datetime.timezone(datetime.timedelta(hours=2))),
     datetime.datetime(2024, 1, 2, 3, 4, 5)),
    # ... with the seconds truncated toward zero first: before 1970 a fraction moves it on
    (T.SQL_TIMESTAMP(), datetime.datetime(1969, 12, 31, 23, 59, 59, 250000),
     datetime.datetime(1970, 1, 1, 0, 0, 0, 250000)),
    (T.INSTANT(), Instant(1, 5), Instant(1, 5)),
    (T.INSTANT(), None, None),  # InstantCoder writes a null marker of its own
    # BinaryCoder for byte[]; Primitive/GenericArrayCoder decode lists
    (T.PRIMITIVE_ARRAY(T.BYTE()), bytearray(b"ab"), b"ab"),
    (T.PRIMITIVE_ARRAY(T.INT()), [1, 2.5], [1, 2]),
    (T.BASIC_ARRAY(T.INT()), [1, None], [1, None]),
    (T.OBJECT_ARRAY(T.TUPLE([T.INT()])), [(1,), None], [(1,), None]),
    (T.LIST(T.FLOAT()), [110.1], [110.0999984741211]),
    # TupleCoder writes the declared fields only
    (T.TUPLE([T.STRING(), T.INT()]), ("a", 1, "not written"), ("a", 1)),
    (T.TUPLE([T.INSTANT()]), (None,), (None,)),
    (T.MAP(T.STRING(), T.INT()), {"a": None}, {"a": None}),
    (T.PICKLED_BYTE_ARRAY(), {"any": ["thing"]}, {"any": ["thing"]}),
]


@pytest.mark.parametrize(("type_info", "value", "back"), ROUND_TRIPS)
def test_a_value_comes_back_as_pyflinks_coder_reads_it(type_info: TypeInformation, value: Any,
                                                       back: Any) -> None:
    converted = converter(type_info)(value)
    assert converted == back and type(converted) is type(back)


def test_a_decimal_keeps_its_digits() -> None:
    assert str(converter(T.BIG_DEC())(Decimal("1.10"))) == "1.10"


# (type, value, error, what it says) -- Cython raises OverflowError out of a C integer's range
# and TypeError for what has no integer; the message names the type and the value
REFUSED: list[tuple[TypeInformation, Any, type[Exception], str]] = [
    (T.BYTE(), 128, OverflowError, "128 is out of BYTE's range.*8-bit"),
    (T.BYTE(), -129, OverflowError, "-129 is out of BYTE's range"),
    (T.SHORT(), 32768, OverflowError, "SHORT.*16-bit"),
    (T.INT(), 2**31, OverflowError, "2147483648 is out of INT's range.*32-bit"),
    (T.INT(), -(2**31) - 1, OverflowError, "INT"),
    (T.LONG(), 2**63, OverflowError, "LONG.*64-bit"),
    (T.BIG_INT(), 2**63, OverflowError, "BIG_INT.*64-bit"),
    (T.BOOLEAN(), 256, OverflowError, "BOOLEAN"),
    (T.INT(), "1", TypeError, "INT cannot hold str '1'"),
    (T.INT(), None, TypeError, "INT cannot hold NoneType"),
    (T.DOUBLE(), "1.5", TypeError, "DOUBLE cannot hold str"),
    (T.STRING(), 1, TypeError, "STRING cannot hold int 1"),
    (T.STRING(), None, TypeError, "STRING cannot hold NoneType"),
    (T.STRING(), "\ud800", UnicodeEncodeError, "surrogate"),
    (T.BIG_DEC(), "abc", decimal.InvalidOperation, "ConversionSyntax"),
    (T.SQL_DATE(), "2024-01-02", TypeError, "SQL_DATE cannot hold str"),
    (T.SQL_TIMESTAMP(), datetime.date(2024, 1, 2), TypeError, "SQL_TIMESTAMP cannot hold date"),
    (T.INSTANT(), 5, TypeError, "INSTANT cannot hold int"),
    (T.PRIMITIVE_ARRAY(T.BYTE()), [1, 2], TypeError, r"PRIMITIVE_ARRAY<BYTE> cannot hold list"),
    (T.PRIMITIVE_ARRAY(T.INT()), [1, None], TypeError, "INT cannot hold NoneType"),
    (T.LIST(T.INT()), (1, 2), TypeError, r"LIST<INT> cannot hold tuple"),
    (T.TUPLE([T.STRING(), T.INT()]), ["a", 1], TypeError, r"TUPLE<STRING, INT> cannot hold list"),
    (T.TUPLE([T.STRING(), T.INT()]), ("a",), ValueError, "has 2 fields, .* has 1"),
    (T.TUPLE([T.STRING(), T.INT()]), ("a", None), TypeError, "INT cannot hold NoneType"),
    (T.MAP(T.STRING(), T.INT()), {None: 1}, TypeError, "STRING cannot hold NoneType"),
    (T.MAP(T.STRING(), T.INT()), [("a", 1)], TypeError, "MAP<STRING, INT> cannot hold list"),
    (T.ROW([T.INT()]), (1,), TypeError, r"ROW<INT> cannot hold tuple"),
    (T.ROW([T.INT(), T.INT()]), Row(1), ValueError, "has 2 fields"),
    (T.ROW_NAMED(["b"], [T.INT()]), Row(a=1), KeyError, "not among"),
]


@pytest.mark.parametrize(("type_info", "value", "error", "says"), REFUSED)
def test_what_pyflinks_coder_cannot_write_is_refused(type_info: TypeInformation, value: Any,
                                                      error: type[Exception], says: str) -> None:
    with pytest.raises(error, match=says):
        converter(type_info)(value)


def test_no_type_and_pickled_bytes_leave_the_value_itself() -> None:
    value = {"a": [1]}
    assert converter(None)(value) is value
    assert converter(T.PICKLED_BYTE_ARRAY())(value) is value


def test_an_unnamed_row_comes_back_with_javas_field_names() -> None:
    # RowCoderImpl decodes a Row with the type's names: Java's RowTypeInfo says f0, f1...
    row = converter(T.ROW([T.INT(), T.FLOAT()]))(Row(1, 110.1))
    assert row == Row(f0=1, f1=110.0999984741211)
    assert (row.f0, row[1]) == (1, 110.0999984741211)


def test_a_named_row_is_written_by_the_types_names_and_keeps_its_kind() -> None:
    # RowCoderImpl.encode_to_stream takes row.get_fields_by_names(type's names) and the kind
    row = Row(info='{"name": "Flink"}', id=1)
    row.set_row_kind(RowKind.DELETE)
    back = converter(T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()]))(row)
    assert list(back) == [1, '{"name": "Flink"}'] and back.info == '{"name": "Flink"}'
    assert back.get_field_names() == ["id", "info"]
    assert back.get_row_kind() is RowKind.DELETE


def test_a_rows_null_fields_stay_null_whatever_their_type() -> None:
    # the row's null mask carries them: no field coder sees None
    back = converter(T.ROW([T.INT(), T.STRING()]))(Row(None, None))
    assert list(back) == [None, None]


def test_an_external_type_converts_as_the_type_it_wraps() -> None:
    back = converter(ExternalTypeInfo(T.ROW([T.FLOAT()])))(Row(110.1))
    assert list(back) == [110.0999984741211] and back.get_field_names() == ["f0"]


# (key type, map, key order Java's HashMap iterates) -- MapSerializer reads into
# new HashMap<>(size); buckets by (h ^ h >>> 16) & (capacity - 1), insertion order within one
HASH_ORDERS: list[tuple[TypeInformation, dict[Any, Any], list[Any]]] = [
    # "apple".hashCode() is 93029210; Java prints {banana=.., apple=.., cherry=..}
    (T.STRING(), {"apple": 1, "banana": 2, "cherry": 3}, ["banana", "apple", "cherry"]),
    (T.STRING(), {"c": 1, "b": 2, "a": 3}, ["a", "b", "c"]),
    (T.INT(), {3: 0, 1: 0, 2: 0}, [1, 2, 3]),  # Integer.hashCode is the value
    (T.LONG(), {2**32: 0, 0: 0}, [0, 2**32]),  # Long.hashCode(2^32) is 1
    # Boolean.hashCode: true 1231, false 1237; in 4 buckets 1231 is in 3, 1237 in 1
    (T.BOOLEAN(), {True: 1, False: 0}, [False, True]),
    (T.SQL_DATE(), {datetime.date(2024, 1, 2): 1, datetime.date(2024, 1, 1): 2},
     [datetime.date(2024, 1, 2), datetime.date(2024, 1, 1)]),  # no Java hash here: kept
]


@pytest.mark.parametrize(("key_type", "value", "keys"), HASH_ORDERS)
def test_a_map_comes_back_in_javas_hashmap_order(key_type: TypeInformation,
                                                 value: dict[Any, Any], keys: list[Any]) -> None:
    assert list(converter(T.MAP(key_type, T.INT()))(value)) == keys


def test_map_keys_equal_after_conversion_are_one_key_as_in_a_java_map() -> None:
    # both round to the same C float; HashMap.put keeps the first key and the last value
    back = converter(T.MAP(T.FLOAT(), T.INT()))({0.1: 1, 0.10000000001: 2})
    assert back == {0.10000000149011612: 2}


def test_conversion_is_idempotent() -> None:
    convert = converter(T.TUPLE([T.FLOAT(), T.MAP(T.STRING(), T.SQL_TIMESTAMP())]))
    once = convert((110.1, {"b": datetime.datetime(2024, 1, 2, 0, 0, 0, 1500), "a": None}))
    assert convert(once) == once and list(convert(once)[1]) == list(once[1])


def test_a_tuple_field_is_null_only_where_its_java_serializer_takes_null() -> None:
    # PyFlink prints (null,2) for a None STRING field and fails on a None INT field
    # (NullFieldException): recorded in tests/spark/pyflink_recordings/2.3.0/probes
    nullable = T.TUPLE([T.STRING(), T.BIG_DEC(), T.SQL_DATE(), T.INSTANT(), T.INT()])
    assert converter(nullable)((None, None, None, None, 2)) == (None, None, None, None, 2)
    for primitive in (T.INT(), T.DOUBLE(), T.BOOLEAN(), T.CHAR()):
        with pytest.raises(TypeError, match="cannot hold NoneType None"):
            converter(T.TUPLE([T.STRING(), primitive]))(("a", None))
