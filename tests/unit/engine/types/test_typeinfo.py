"""PyFlink's type information: the classes ``Types`` makes, their reprs, equality, field names
and ``to_internal_type`` (facts from pyflink/common/typeinfo.py of apache-flink 2.3.0), and the
spec's text form read back by ``parse_type``."""

from __future__ import annotations

import datetime
import pickle
from types import SimpleNamespace
from typing import Any

import pytest

from dataflow_engine.api.common import Types as ApiTypes
from dataflow_engine.api.common.time import Instant
from dataflow_engine.api.common.typeinfo import RowTypeInfo as ApiRowTypeInfo
from dataflow_engine.types import Row, RowKind, TypeInformation, Types, parse_type, type_text
from dataflow_engine.types.typeinfo import (
    BasicArrayTypeInfo,
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    ExternalTypeInfo,
    InstantTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TupleTypeInfo,
)

pytestmark = pytest.mark.unit

T = Types

# (type, its class, PyFlink's repr of it)
REPRS: list[tuple[TypeInformation, type, str]] = [
    (T.STRING(), BasicTypeInfo, "String"),
    (T.BYTE(), BasicTypeInfo, "Byte"),
    (T.BOOLEAN(), BasicTypeInfo, "Boolean"),
    (T.SHORT(), BasicTypeInfo, "Short"),
    (T.INT(), BasicTypeInfo, "Integer"),
    (T.LONG(), BasicTypeInfo, "Long"),
    (T.FLOAT(), BasicTypeInfo, "Float"),
    (T.DOUBLE(), BasicTypeInfo, "Double"),
    (T.CHAR(), BasicTypeInfo, "Char"),
    (T.BIG_INT(), BasicTypeInfo, "BigInteger"),
    (T.BIG_DEC(), BasicTypeInfo, "BigDecimal"),
    (T.INSTANT(), InstantTypeInfo, "Instant"),
    (T.SQL_DATE(), DateTypeInfo, "DateTypeInfo"),
    (T.SQL_TIME(), TimeTypeInfo, "TimeTypeInfo"),
    (T.SQL_TIMESTAMP(), TimestampTypeInfo, "TimestampTypeInfo"),
    (T.PICKLED_BYTE_ARRAY(), PickledBytesTypeInfo, "PickledByteArrayTypeInfo"),
    (T.PRIMITIVE_ARRAY(T.INT()), PrimitiveArrayTypeInfo, "PrimitiveArrayTypeInfo<Integer>"),
    (T.BASIC_ARRAY(T.STRING()), BasicArrayTypeInfo, "BasicArrayTypeInfo<String>"),
    (T.OBJECT_ARRAY(T.ROW([T.INT()])), ObjectArrayTypeInfo,
     "ObjectArrayTypeInfo<RowTypeInfo(Integer)>"),
    (T.ROW([T.INT(), T.STRING()]), RowTypeInfo, "RowTypeInfo(Integer, String)"),
    (T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()]), RowTypeInfo,
     "RowTypeInfo(id: Integer, info: String)"),
    (T.TUPLE([T.STRING(), T.INT()]), TupleTypeInfo, "TupleTypeInfo(String, Integer)"),
    (T.LIST(T.LONG()), ListTypeInfo, "ListTypeInfo<Long>"),
    (T.MAP(T.STRING(), T.DOUBLE()), MapTypeInfo, "MapTypeInfo<String, Double>"),
    (ExternalTypeInfo(T.ROW([T.INT()])), ExternalTypeInfo,
     "ExternalTypeInfo<RowTypeInfo(Integer)>"),
    (SqlTimeTypeInfo.TIMESTAMP(), TimestampTypeInfo, "TimestampTypeInfo"),
]


@pytest.mark.parametrize(("type_info", "cls", "shown"), REPRS, ids=[r[2] for r in REPRS])
def test_types_are_pyflinks_classes_with_pyflinks_reprs(type_info: TypeInformation, cls: type,
                                                         shown: str) -> None:
    assert type(type_info) is cls
    assert repr(type_info) == shown
    assert pickle.loads(pickle.dumps(type_info)) == type_info  # OutputTag pickles its type


# (a, b, equal?) -- PyFlink's __eq__: a row compares its field types only, not its names
EQUALITY = [
    (T.ROW([T.INT()]), T.ROW_NAMED(["id"], [T.INT()]), True),
    (T.ROW_NAMED(["a"], [T.INT()]), T.ROW_NAMED(["b"], [T.INT()]), True),
    (T.ROW([T.INT()]), T.ROW([T.LONG()]), False),
    (T.ROW([T.INT()]), T.TUPLE([T.INT()]), False),
    (T.BASIC_ARRAY(T.INT()), T.OBJECT_ARRAY(T.INT()), False),
    (T.PRIMITIVE_ARRAY(T.INT()), T.PRIMITIVE_ARRAY(T.INT()), True),
    (T.LIST(T.INT()), T.LIST(T.LONG()), False),
    (T.MAP(T.STRING(), T.INT()), T.MAP(T.STRING(), T.INT()), True),
    (T.MAP(T.STRING(), T.INT()), T.MAP(T.INT(), T.STRING()), False),
    (T.INSTANT(), BasicTypeInfo(BasicType.INSTANT), True),
    (T.SQL_DATE(), T.SQL_TIME(), False),
    (T.PICKLED_BYTE_ARRAY(), T.PICKLED_BYTE_ARRAY(), True),
]


@pytest.mark.parametrize(("a", "b", "equal"), EQUALITY)
def test_equality_is_pyflinks(a: TypeInformation, b: TypeInformation, equal: bool) -> None:
    assert (a == b) is equal and (b == a) is equal
    if equal:
        assert hash(a) == hash(b)


def test_a_type_is_not_equal_to_its_repr() -> None:
    assert T.STRING() != "String"


def test_a_row_type_names_its_fields_as_javas_row_type_info_does() -> None:
    unnamed = T.ROW([T.INT(), T.STRING()])
    # Java's RowTypeInfo names unnamed fields f0, f1, ...; PyFlink's get_field_index answers
    # -1 for a row declared without names.
    assert unnamed.get_field_names() == ["f0", "f1"]
    assert unnamed.get_field_index("f0") == -1
    named = T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()])
    assert isinstance(named, RowTypeInfo)
    assert named.get_field_names() == ["id", "info"]
    assert named.get_field_index("info") == 1
    assert named.get_field_types() == [T.INT(), T.STRING()]
    with pytest.raises(ValueError):
        named.get_field_index("tel")


@pytest.mark.parametrize(("make", "error", "words"), [
    (lambda: T.PRIMITIVE_ARRAY(T.STRING()), TypeError, "primitive array holds"),
    (lambda: T.BASIC_ARRAY(T.ROW([T.INT()])), TypeError, "basic array holds"),
    (lambda: T.ROW_NAMED(["a"], [T.INT(), T.INT()]), ValueError, "1 names"),
    (lambda: T.ROW_NAMED(["a", "a"], [T.INT(), T.INT()]), ValueError, "unique"),
    (lambda: T.ROW([int]), TypeError, "TypeInformation"),
    (lambda: T.LIST("STRING"), TypeError, "TypeInformation"),
])
def test_types_java_cannot_build_are_refused(make: Any, error: type[Exception],
                                              words: str) -> None:
    with pytest.raises(error, match=words):
        make()


# (type, converts?) -- need_conversion() as PyFlink's classes override it
NEED_CONVERSION = [
    (T.INT(), False), (T.STRING(), False), (T.PICKLED_BYTE_ARRAY(), False),
    (T.INSTANT(), True), (T.SQL_DATE(), True), (T.SQL_TIME(), True), (T.SQL_TIMESTAMP(), True),
    (T.ROW([T.INT()]), True), (T.TUPLE([T.INT()]), True),
    (T.LIST(T.SQL_DATE()), False), (T.MAP(T.STRING(), T.SQL_DATE()), False),
    (T.OBJECT_ARRAY(T.SQL_DATE()), False),
]


@pytest.mark.parametrize(("type_info", "converts"), NEED_CONVERSION)
def test_need_conversion_is_pyflinks(type_info: TypeInformation, converts: bool) -> None:
    assert type_info.need_conversion() is converts


ID_INFO = T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()])
ID_DAY = T.ROW_NAMED(["id", "day"], [T.INT(), T.SQL_DATE()])

# (type, value, internal form) -- what from_collection hands to Java: a row is (kind, *fields),
# a date days since the epoch, an instant microseconds
TO_INTERNAL: list[tuple[TypeInformation, Any, Any]] = [
    (T.INT(), 5, 5),
    (T.SQL_DATE(), datetime.date(1970, 1, 2), 1),
    (T.SQL_DATE(), None, None),
    (T.INSTANT(), Instant.of_epoch_milli(1500), 1_500_000),
    (ID_INFO, {"info": "x", "id": 1}, (0, 1, "x")),
    (ID_INFO, Row(info="x", id=1), (0, 1, "x")),
    (ID_INFO, Row.of_kind(RowKind.UPDATE_AFTER, 1, "x"), (2, 1, "x")),
    (ID_INFO, [1, "x"], (0, 1, "x")),
    (ID_INFO, SimpleNamespace(id=1, info="x"), (0, 1, "x")),
    (ID_INFO, None, None),
    (ID_DAY, (1, datetime.date(1970, 1, 3)), (0, 1, 2)),
    (T.TUPLE([T.STRING(), T.INT()]), ["a", 1], ("a", 1)),
    (T.TUPLE([T.STRING(), T.SQL_DATE()]), Row("a", datetime.date(1970, 1, 1)), ("a", 0)),
]


@pytest.mark.parametrize(("type_info", "value", "internal"), TO_INTERNAL)
def test_to_internal_type_is_pyflinks(type_info: TypeInformation, value: Any,
                                      internal: Any) -> None:
    assert type_info.to_internal_type(value) == internal


@pytest.mark.parametrize("type_info", [ID_INFO, T.TUPLE([T.INT()])])
def test_to_internal_type_refuses_what_is_no_record(type_info: TypeInformation) -> None:
    with pytest.raises(ValueError, match="Unexpected tuple 5"):
        type_info.to_internal_type(5)


@pytest.mark.parametrize(("type_info", "value"), [
    (T.SQL_DATE(), datetime.date(2024, 1, 2)),
    (T.SQL_TIME(), datetime.time(3, 4, 5, 6)),
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5, 6)),
    (T.INSTANT(), Instant.of_epoch_milli(1_700_000_000_123)),
])
def test_from_internal_type_reverses_to_internal_type(type_info: TypeInformation,
                                                      value: Any) -> None:
    internal = type_info.to_internal_type(value)
    assert internal != value
    assert type_info.from_internal_type(internal) == value


def test_a_row_type_passes_what_the_pickler_already_made() -> None:
    # PyFlink's RowTypeInfo.from_internal_type returns tuples and lists as they are
    assert ID_DAY.from_internal_type((1, 19724)) == (1, 19724)
    assert ID_INFO.from_internal_type([1, "x"]) == [1, "x"]


# (type, its text form in the spec)
TEXTS: list[tuple[TypeInformation, str]] = [
    (T.STRING(), "STRING"), (T.BIG_DEC(), "BIG_DEC"), (T.INSTANT(), "INSTANT"),
    (T.SQL_TIMESTAMP(), "SQL_TIMESTAMP"), (T.PICKLED_BYTE_ARRAY(), "PICKLED_BYTE_ARRAY"),
    (T.TUPLE([T.STRING(), T.INT()]), "TUPLE<STRING, INT>"),
    (T.ROW([T.INT(), T.STRING()]), "ROW<INT, STRING>"),
    (T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()]), "ROW<id INT, info STRING>"),
    (T.ROW_NAMED(["INT"], [T.INT()]), "ROW<INT INT>"),
    (T.ROW_NAMED(["a b", "c`d"], [T.LONG(), T.LONG()]), "ROW<`a b` LONG, `c``d` LONG>"),
    (T.ROW([]), "ROW<>"), (T.TUPLE([]), "TUPLE<>"),
    (T.LIST(T.LONG()), "LIST<LONG>"), (T.MAP(T.STRING(), T.DOUBLE()), "MAP<STRING, DOUBLE>"),
    (T.PRIMITIVE_ARRAY(T.BYTE()), "PRIMITIVE_ARRAY<BYTE>"),
    (T.BASIC_ARRAY(T.STRING()), "BASIC_ARRAY<STRING>"),
    (T.OBJECT_ARRAY(T.TUPLE([T.SQL_DATE()])), "OBJECT_ARRAY<TUPLE<SQL_DATE>>"),
    (ExternalTypeInfo(T.ROW([T.INT()])), "EXTERNAL<ROW<INT>>"),
    (T.MAP(T.STRING(), T.LIST(T.ROW_NAMED(["x"], [T.FLOAT()]))),
     "MAP<STRING, LIST<ROW<x FLOAT>>>"),
]


@pytest.mark.parametrize(("type_info", "text"), TEXTS, ids=[t for _, t in TEXTS])
def test_the_text_form_round_trips(type_info: TypeInformation, text: str) -> None:
    assert type_text(type_info) == text
    parsed = parse_type(text)
    assert parsed == type_info and type(parsed) is type(type_info)
    assert type_text(parsed) == text  # names too, which equality leaves out


def test_parsing_ignores_spaces() -> None:
    assert type_text(parse_type(" ROW< id  INT ,info STRING > ")) == "ROW<id INT, info STRING>"


def test_a_type_outside_pyflinks_has_no_text_form() -> None:
    with pytest.raises(TypeError, match="no text form"):
        type_text(TypeInformation())


# (bad text, what the error says)
BAD_TEXTS = [
    ("TUPLE<INTEGER>", "unknown type 'INTEGER' at offset 6"),
    ("LIST<INT, INT>", "LIST: takes 1 type, not 2"),
    ("MAP<STRING>", "MAP: takes 2 types, not 1"),
    ("ROW<a INT, STRING>", "names all its fields or none"),
    ("ROW<a INT, a INT>", "unique"),
    ("PRIMITIVE_ARRAY<STRING>", "PRIMITIVE_ARRAY: a primitive array holds .*not STRING"),
    ("TUPLE<INT", "expected ',' but found the end at offset 9"),
    ("TUPLE<INT;>", "unexpected ';' at offset 9"),
    ("INT>", "unexpected '>' after the type at offset 3"),
    ("TUPLE<,INT>", "expected a type but found ',' at offset 6"),
    ("", "expected a type but found the end"),
    ("INT<STRING>", "unexpected '<' after the type"),
]


@pytest.mark.parametrize(("text", "says"), BAD_TEXTS)
def test_a_bad_text_is_refused_naming_the_bad_part(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_type(text)


def test_the_api_names_the_engines_types() -> None:
    assert ApiTypes is Types and ApiRowTypeInfo is RowTypeInfo
    assert ApiTypes.TUPLE([ApiTypes.STRING()]) == TupleTypeInfo([BasicTypeInfo(BasicType.STRING)])
