"""Rows as CSV lines, as Flink's CSV row schemas write and read them."""

from __future__ import annotations

import datetime
from decimal import Decimal

import pytest

from dataflow_engine.types import Types as T
from dataflow_engine.types.csv_form import CsvOptions, row_reader, row_writer, unwritable_field
from dataflow_engine.types.row import Row

pytestmark = pytest.mark.unit

ROW = T.ROW_NAMED(["id", "name", "price", "on", "day"],
                  [T.INT(), T.STRING(), T.DOUBLE(), T.BOOLEAN(), T.SQL_DATE()])


def test_a_row_is_a_line_of_its_fields_in_java_form() -> None:
    write = row_writer(ROW, CsvOptions())
    assert write(Row(1, "hi", 1e7, True, datetime.date(2024, 1, 2))) == \
        "1,hi,1.0E7,true,2024-01-02\n"
    assert write(Row(2, None, 0.5, False, None)) == "2,,0.5,false,\n"


def test_fields_holding_special_characters_are_quoted_and_read_back() -> None:
    options = CsvOptions()
    row = Row(3, 'a,"b"\nc', 2.5, True, datetime.date(2024, 1, 2))
    line = row_writer(ROW, options)(row)
    assert line == '3,"a,""b""\nc",2.5,true,2024-01-02\n'
    read = row_reader(ROW, options)(line)
    assert list(read) == list(row) and read.as_dict()["name"] == 'a,"b"\nc'


def test_settings_change_delimiters_quoting_and_nulls() -> None:
    options = CsvOptions(field_delimiter=";", quote_character="", escape_character="\\",
                         null_literal="NULL", line_delimiter="")
    pair = T.ROW([T.STRING(), T.BIG_DEC()])
    assert row_writer(pair, options)(Row("a;b", None)) == "a\\;b;NULL"
    assert list(row_reader(pair, options)("a\\;b;12.50")) == ["a;b", Decimal("12.50")]
    assert list(row_reader(pair, options)("x;NULL")) == ["x", None]


def test_a_field_that_is_not_of_its_type_fails_naming_it() -> None:
    read = row_reader(ROW, CsvOptions())
    with pytest.raises(ValueError, match=r"csv field 'price' \(DOUBLE\): 'cheap'"):
        read("1,hi,cheap,true,2024-01-02")
    with pytest.raises(ValueError, match="has 2 fields, its row type 5"):
        read("1,hi")
    with pytest.raises(ValueError, match="row type has 5 fields"):
        row_writer(ROW, CsvOptions())(Row(1, "hi"))


def test_only_rows_of_basic_fields_are_csv_lines() -> None:
    assert unwritable_field(ROW) is None
    assert "not TUPLE<STRING, INT>" in (unwritable_field(T.TUPLE([T.STRING(), T.INT()])) or "")
    assert "records of no declared type" in (unwritable_field(None) or "")
    nested = unwritable_field(T.ROW_NAMED(["tags"], [T.LIST(T.STRING())]))
    assert nested is not None and "field 'tags' is LIST<STRING>" in nested


def test_without_a_null_literal_an_empty_field_is_an_empty_string_or_a_null_number() -> None:
    read = row_reader(T.ROW([T.STRING(), T.INT(), T.DOUBLE()]), CsvOptions())
    assert list(read(",,")) == ["", None, None]
    with pytest.raises(ValueError, match="'1_000' is not a value of its type"):
        read("a,1_000,1")  # Java's parsers take no '_' in numbers
    with pytest.raises(ValueError, match="is not a line of fields"):
        row_reader(T.ROW([T.STRING()]), CsvOptions(quote_character=""))('a"b\rc')
