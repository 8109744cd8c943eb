"""What PyFlink's print() shows: Python's str without a type, PyFlink's Python-side form of a
ROW record (DataStream._align_output_type in pyflink/datastream/data_stream.py, 2.3.0), and
Java's toString of the converted value for any other declared type."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

import pytest

from dataflow_engine.api.common.time import Instant
from dataflow_engine.types import (
    Row,
    RowKind,
    TypeInformation,
    Types,
    java_string,
    print_form,
    printer,
    row_string,
)

pytestmark = pytest.mark.unit

T = Types

# (double, Double.toString) -- Java's Double.toString as JDK 17 prints it: shortest digits
# that read back, at least one after the point, scientific outside [1e-3, 1e7); whole numbers
# below 2^63 from their exact digits
DOUBLES = [
    (1.0, "1.0"), (100.0, "100.0"), (0.1, "0.1"), (12345.678, "12345.678"),
    (0.30000000000000004, "0.30000000000000004"), (0.001, "0.001"), (0.002, "0.002"),
    (9999999.0, "9999999.0"), (1e7, "1.0E7"), (1e-4, "1.0E-4"), (123456789.0, "1.23456789E8"),
    (1e21, "1.0E21"), (-2.5, "-2.5"), (-0.0, "-0.0"), (0.0, "0.0"),
    (math.nan, "NaN"), (math.inf, "Infinity"), (-math.inf, "-Infinity"),
    (5e-324, "4.9E-324"),  # Double.MIN_VALUE: two digits when one would do, the closer
    (1.7976931348623157e308, "1.7976931348623157E308"),  # Double.MAX_VALUE
    (float(2**63), "9.223372036854776E18"),
]


@pytest.mark.parametrize(("value", "shown"), DOUBLES)
def test_a_double_prints_as_javas_double_to_string(value: float, shown: str) -> None:
    assert java_string(value, T.DOUBLE()) == shown


# (value of a FLOAT, Float.toString) -- Java's Float.toString of the C float
FLOATS = [
    (110.1, "110.1"), (30.2, "30.2"), (110.0999984741211, "110.1"), (0.1, "0.1"),
    (1e10, "1.0E10"), (16777216.0, "1.6777216E7"), (1e-5, "1.0E-5"),
    (3.4028234663852886e38, "3.4028235E38"),  # Float.MAX_VALUE
    (1.401298464324817e-45, "1.4E-45"),  # Float.MIN_VALUE
    (1e40, "Infinity"),
    # a whole number beyond 24 bits shows its exact digits (JDK 17's FloatingDecimal; recorded
    # from PyFlink: tests/spark/pyflink_recordings/2.3.0/probes/type_printing.json), where the
    # shortest would be 1.2345679E8; with more bits beyond, low digits are dropped, rounded
    (123456789.0, "1.23456792E8"), (float(2**60), "1.1529215E18"),
]


@pytest.mark.parametrize(("value", "shown"), FLOATS)
def test_a_float_prints_as_javas_float_to_string(value: float, shown: str) -> None:
    assert print_form(value, T.FLOAT()) == shown


ISO = 1704164645  # 2024-01-02T03:04:05Z

# (type, converted value, Java's toString)
JAVA_STRINGS: list[tuple[TypeInformation, Any, str]] = [
    # Tuple2.toString: "(" + f0 + "," + f1 + ")", no spaces, strings unquoted
    (T.TUPLE([T.STRING(), T.INT()]), ("hi", 4), "(hi,4)"),
    (T.TUPLE([T.STRING(), T.INT(), T.INT(), T.INT()]), ("hi", 0, 5, 4), "(hi,0,5,4)"),
    (T.TUPLE([T.BOOLEAN(), T.LONG()]), (True, 5), "(true,5)"),
    (T.TUPLE([]), (), "()"),
    (T.TUPLE([T.STRING(), T.INSTANT()]), ("a", None), "(a,null)"),
    # Row.toString (RowUtils.deepToStringRow): kind, then fields with ", "
    (T.TUPLE([T.INT(), T.ROW([T.INT(), T.STRING()])]), (1, Row(2, "a")), "(1,+I[2, a])"),
    (T.ROW([T.INT(), T.STRING()]), Row.of_kind(RowKind.UPDATE_BEFORE, None, "a"), "-U[null, a]"),
    # List and arrays: AbstractCollection.toString / Arrays.toString, ", " between
    (T.LIST(T.STRING()), ["a", None], "[a, null]"),
    (T.PRIMITIVE_ARRAY(T.INT()), [1, 2], "[1, 2]"),
    (T.PRIMITIVE_ARRAY(T.BYTE()), b"\x01\xff", "[1, -1]"),  # Java's byte is signed
    (T.PRIMITIVE_ARRAY(T.BOOLEAN()), [True, False], "[true, false]"),
    (T.PRIMITIVE_ARRAY(T.CHAR()), ["a", "b"], "[a, b]"),
    (T.BASIC_ARRAY(T.DOUBLE()), [1.0, None], "[1.0, null]"),
    (T.OBJECT_ARRAY(T.TUPLE([T.STRING()])), [("x",)], "[(x)]"),
    # AbstractMap.toString: {k=v, ...}
    (T.MAP(T.STRING(), T.INT()), {"a": None, "b": 1}, "{a=null, b=1}"),
    # java.sql.Date / Time / Timestamp
    (T.SQL_DATE(), datetime.date(2024, 1, 2), "2024-01-02"),
    (T.SQL_TIME(), datetime.time(3, 4, 5, 123000), "03:04:05"),
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02 03:04:05.0"),
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 120000), "2024-01-02 03:04:05.12"),
    # BigDecimal.toString (scientific when the scale is negative or the exponent < -6)
    (T.BIG_DEC(), Decimal("1.50"), "1.50"), (T.BIG_DEC(), Decimal("1E+3"), "1E+3"),
    (T.BIG_DEC(), Decimal("0.0000001"), "1E-7"), (T.BIG_DEC(), Decimal("-0"), "0"),
    # Instant.toString: ISO-8601, the fraction in groups of three digits
    (T.INSTANT(), Instant(0, 0), "1970-01-01T00:00:00Z"),
    (T.INSTANT(), Instant(ISO, 500_000_000), "2024-01-02T03:04:05.500Z"),
    (T.INSTANT(), Instant(ISO, 123_456_000), "2024-01-02T03:04:05.123456Z"),
    (T.INSTANT(), Instant(ISO, 1), "2024-01-02T03:04:05.000000001Z"),
    (T.STRING(), "hi", "hi"), (T.CHAR(), "c", "c"), (T.BIG_INT(), -7, "-7"),
]


@pytest.mark.parametrize(("type_info", "value", "shown"), JAVA_STRINGS)
def test_a_value_prints_as_javas_to_string(type_info: TypeInformation, value: Any,
                                           shown: str) -> None:
    assert java_string(value, type_info) == shown


def test_pickled_bytes_inside_a_tuple_print_as_the_pickles_byte_array() -> None:
    # Tuple2.toString prints a byte[] field with Arrays.toString (StringUtils.arrayAwareToString)
    shown = java_string(("a", 1), T.TUPLE([T.STRING(), T.PICKLED_BYTE_ARRAY()]))
    assert shown.startswith("(a,[-128, ") and shown.endswith(", 46])")  # PROTO ... STOP


# (declared type, record, the line print() writes)
PRINTED: list[tuple[TypeInformation | None, Any, str]] = [
    # no type: PICKLED_BYTE_ARRAY records are mapped to str() in Python
    (None, (1, '{"name": "Flink"}'), "(1, '{\"name\": \"Flink\"}')"),
    (None, {"x": 1}, "{'x': 1}"),
    (T.PICKLED_BYTE_ARRAY(), ("Alice", 110.1), "('Alice', 110.1)"),
    (None, Row(id=1), "Row(id=1)"),
    # ROW: '{}[{}]'.format(kind, ','.join(str(item))) in Python, as the record comes
    (T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()]), Row(id=1, info="hello"),
     "+I[1,hello]"),
    (T.ROW([T.INT(), T.STRING()]), Row(1, None), "+I[1,None]"),
    (T.ROW([T.FLOAT()]), Row(110.1), "+I[110.1]"),
    (T.ROW([T.STRING(), T.TUPLE([T.INT()])]), Row.of_kind(RowKind.DELETE, "a", (1,)),
     "-D[a,(1,)]"),
    # other types: Java's toString of the converted record
    (T.TUPLE([T.STRING(), T.INT()]), ("be", 2), "(be,2)"),
    (T.TUPLE([T.STRING(), T.FLOAT()]), ("Alice", 110.1), "(Alice,110.1)"),
    (T.TUPLE([T.STRING(), T.FLOAT()]), ("Bob", 83.30000000000001), "(Bob,83.3)"),
    (T.MAP(T.STRING(), T.INT()), {"apple": 1, "banana": 2, "cherry": 3},
     "{banana=2, apple=1, cherry=3}"),
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 123456), "2024-01-02 03:04:05.123"),
    (T.BOOLEAN(), 1, "true"), (T.STRING(), "hi", "hi"), (T.LONG(), 5, "5"),
]


@pytest.mark.parametrize(("type_info", "record", "line"), PRINTED)
def test_print_writes_what_pyflink_prints(type_info: TypeInformation | None, record: Any,
                                          line: str) -> None:
    assert print_form(record, type_info) == line
    assert printer(type_info)(record) == line


def test_a_row_stream_prints_rows_only() -> None:
    # PyFlink asserts isinstance(value, Row) in the formatting map
    with pytest.raises(TypeError, match="a ROW stream prints Rows, not tuple"):
        print_form((1, "a"), T.ROW([T.INT(), T.STRING()]))
    assert row_string(Row()) == "+I[]"


def test_a_record_its_type_cannot_hold_fails_to_print_as_in_pyflink() -> None:
    with pytest.raises(OverflowError, match="INT"):
        print_form(2**31, T.INT())
