"""The JSON form of typed values (a typed collection's elements in a manifest), and what a
program's elements become under a declared type (PyFlink's to_internal_type, then its coder)."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal
from typing import Any

import pytest

from dataflow_engine.types import Row, RowKind, TypeInformation, Types
from dataflow_engine.types.convert import element_converter
from dataflow_engine.types.instant import Instant
from dataflow_engine.types.json_form import JsonFormError, element_decoder, from_json, to_json

pytestmark = pytest.mark.unit

T = Types
NAMED = T.ROW_NAMED(["id", "info"], [T.INT(), T.STRING()])

# (type, value of it, its JSON form)
FORMS: list[tuple[TypeInformation, Any, Any]] = [
    (T.INT(), 7, 7), (T.BOOLEAN(), True, True), (T.STRING(), "héllo", "héllo"),
    (T.DOUBLE(), 110.1, 110.1), (T.FLOAT(), math.inf, "Infinity"),
    (T.DOUBLE(), -math.inf, "-Infinity"),
    (T.BIG_DEC(), Decimal("12.50"), "12.50"),
    (T.SQL_DATE(), datetime.date(2024, 1, 2), "2024-01-02"),
    (T.SQL_TIME(), datetime.time(3, 4, 5, 123000), "03:04:05.123000"),
    (T.SQL_TIMESTAMP(), datetime.datetime(2024, 1, 2, 3, 4, 5), "2024-01-02T03:04:05"),
    (T.INSTANT(), Instant(1700000000, 123456789), "2023-11-14T22:13:20.123456789Z"),
    (T.PRIMITIVE_ARRAY(T.BYTE()), b"\x00\xff", "AP8="),
    (T.LIST(T.INT()), [1, None, 3], [1, None, 3]),
    (T.MAP(T.STRING(), T.INT()), {"a": 1}, {"a": 1}),
    (T.MAP(T.INT(), T.SQL_DATE()), {1: datetime.date(2024, 1, 2)}, [[1, "2024-01-02"]]),
    (T.TUPLE([T.STRING(), T.INT()]), ("a", 1), ["a", 1]),
    (NAMED, Row(id=1, info="x"), [1, "x"]),
    (NAMED, Row.of_kind(RowKind.UPDATE_BEFORE, id=1, info="x"),
     {"rowKind": "-U", "fields": [1, "x"]}),
    (T.PICKLED_BYTE_ARRAY(), ("a", {"b": (1, 2)}), ["a", {"b": [1, 2]}]),
]


@pytest.mark.parametrize(("type_info", "value", "form"), FORMS)
def test_each_type_has_one_json_form_that_reads_back(type_info: TypeInformation, value: Any,
                                                     form: Any) -> None:
    assert to_json(value, type_info) == form
    if not isinstance(type_info, type(T.PICKLED_BYTE_ARRAY())):
        back = from_json(form, type_info)
        assert back == value and type(back) is type(value)


def test_nan_reads_back_as_nan() -> None:
    assert to_json(math.nan, T.DOUBLE()) == "NaN"
    assert math.isnan(from_json("NaN", T.DOUBLE()))


def test_a_row_read_back_has_its_types_names_and_kind() -> None:
    row = from_json({"rowKind": "-D", "fields": [2, None]}, NAMED)
    assert (row.id, row.info, row.get_row_kind()) == (2, None, RowKind.DELETE)
    unnamed = from_json([1, "x"], T.ROW([T.INT(), T.STRING()]))
    assert unnamed.get_field_names() == ["f0", "f1"]


@pytest.mark.parametrize(("type_info", "form", "path", "problem"), [
    (T.INT(), "7", "e", "INT is written as an integer, not '7'"),
    (T.INT(), True, "e", "INT is written as an integer, not True"),
    (T.BOOLEAN(), 1, "e", "BOOLEAN is written as true or false"),
    (T.BIG_DEC(), 1.5, "e", "written as a string of digits"),
    (T.BIG_DEC(), "x", "e", "expected a decimal number"),
    (T.SQL_DATE(), "2024-13-01", "e", "expected an ISO date"),
    (T.INSTANT(), "2024-01-02T03:04:05", "e", "expected an ISO instant"),
    (T.PRIMITIVE_ARRAY(T.BYTE()), "not base64!", "e", "expected base64 text"),
    (T.TUPLE([T.STRING(), T.INT()]), ["a"], "e", "TUPLE<STRING, INT> has 2 fields"),
    (T.TUPLE([T.STRING(), T.INT()]), ["a", "b"], "e[1]", "INT is written as an integer"),
    (T.MAP(T.INT(), T.INT()), {"1": 2}, "e", "an array of [key, value] pairs"),
    (T.LIST(T.LIST(T.INT())), [[1], ["x"]], "e[1][0]", "INT is written as an integer"),
    (NAMED, {"rowKind": "+X", "fields": [1, "x"]}, "e.rowKind", "a row kind is one of"),
    (NAMED, {"id": 1, "info": "x"}, "e", "is written as an array"),
])
def test_a_form_that_does_not_fit_names_where(type_info: TypeInformation, form: Any, path: str,
                                              problem: str) -> None:
    with pytest.raises(JsonFormError) as caught:
        from_json(form, type_info, "e")
    assert caught.value.path == path and problem in caught.value.problem


def test_the_decoder_converts_and_reports_conversion_errors_at_the_element() -> None:
    decode = element_decoder(T.TUPLE([T.STRING(), T.FLOAT()]))
    assert decode(["a", 110.1], "e") == ("a", 110.0999984741211)
    with pytest.raises(JsonFormError, match=r"^e: .*out of BYTE's range"):
        element_decoder(T.BYTE())(300, "e")


class _Person:
    def __init__(self) -> None:
        self.id, self.info = 5, "p"


@pytest.mark.parametrize("element", [
    (1, "x"), [1, "x"], {"info": "x", "id": 1}, Row(info="x", id=1), Row(1, "x"),
])
def test_a_row_element_may_be_any_shape_pyflink_takes(element: Any) -> None:
    row = element_converter(NAMED)(element)
    assert isinstance(row, Row) and (row.id, row.info) == (1, "x")
    assert row.get_field_names() == ["id", "info"]


def test_elements_are_shaped_inside_containers_too() -> None:
    assert element_converter(NAMED)(_Person()) == Row(id=5, info="p")
    nested = T.TUPLE([T.LIST(T.TUPLE([T.INT(), T.FLOAT()])), NAMED])
    assert element_converter(nested)([[[1, 0.1]], (2, "y")]) == (
        [(1, 0.10000000149011612)], Row(id=2, info="y"))
    kept = element_converter(NAMED)(Row.of_kind(RowKind.DELETE, 1, "x"))
    assert kept.get_row_kind() is RowKind.DELETE


def test_an_element_with_too_few_fields_is_refused() -> None:
    with pytest.raises(ValueError, match="has 2 fields"):
        element_converter(NAMED)((1,))
