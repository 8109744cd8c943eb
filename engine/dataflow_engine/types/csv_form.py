"""Rows as CSV lines: Flink's CsvRowSerializationSchema and CsvRowDeserializationSchema, the
Kafka connectors' ``csv`` format.

A message is one line of the row's fields, each written as Java writes the field's type
(``1``, ``hi``, ``2.5``, ``true``, ``2024-01-02``); a field holding the delimiter, the quote
character or a line break is quoted. Reading parses each field as its declared type, so a row
type is needed both ways, and its fields must be of types a CSV field can hold: the basic
types and the SQL times (Flink's CSV format writes nested rows and arrays with a second
delimiter; this one refuses them).
"""

from __future__ import annotations

import csv
import datetime
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from dataflow_engine.types.java_string import java_printer
from dataflow_engine.types.row import Row
from dataflow_engine.types.typeinfo import (
    BasicType,
    BasicTypeInfo,
    DateTypeInfo,
    RowTypeInfo,
    TimestampTypeInfo,
    TimeTypeInfo,
    TypeInformation,
    type_text,
)

_INTEGERS = frozenset({BasicType.BYTE, BasicType.SHORT, BasicType.INT, BasicType.LONG,
                       BasicType.BIG_INT})
_TEXT = frozenset({BasicType.STRING, BasicType.CHAR})


@dataclass(frozen=True)
class CsvOptions:
    """Flink's CSV row schema settings, with its defaults."""

    field_delimiter: str = ","
    #: "" for none: no field is quoted, and a quote character is an ordinary one.
    quote_character: str = '"'
    #: "" for none.
    escape_character: str = ""
    #: The text of a null field, both ways; None (Flink's default): a null is written as an
    #: empty field, and an empty field reads as an empty STRING, or as null for other types.
    null_literal: str | None = None
    #: What ends each written message ("" for nothing); reading ignores a trailing one.
    line_delimiter: str = "\n"


def unwritable_field(type_info: TypeInformation | None) -> str | None:
    """Why records of this type cannot be CSV lines, or None when they can."""
    if not isinstance(type_info, RowTypeInfo):
        return (f"the csv format reads and writes rows (Types.ROW or Types.ROW_NAMED), not "
                f"{'records of no declared type' if type_info is None else type_text(type_info)}")
    for name, field in zip(type_info.get_field_names(), type_info.field_types, strict=True):
        if not _is_csv_field(field):
            return (f"field {name!r} is {type_text(field)}: a CSV field holds a basic type or "
                    "a SQL date, time or timestamp")
    return None


def _is_csv_field(type_info: TypeInformation) -> bool:
    if isinstance(type_info, DateTypeInfo | TimeTypeInfo | TimestampTypeInfo):
        return True
    return (isinstance(type_info, BasicTypeInfo)
            and type_info.basic_type is not BasicType.INSTANT)


def row_writer(row_type: RowTypeInfo, options: CsvOptions) -> Callable[[Any], str]:
    """A row as one CSV message (its fields converted to their types first)."""
    fields = [java_printer(field) for field in row_type.field_types]
    dialect = _dialect(options, options.line_delimiter)
    null = options.null_literal or ""

    def write(row: Any) -> str:
        if len(row) != len(fields):
            raise ValueError(f"the csv format's row type has {len(fields)} fields, the record "
                             f"{row!r} has {len(row)}")
        texts = [null if value is None else text(value)
                 for text, value in zip(fields, row, strict=True)]
        line = _Line()
        csv.writer(line, **dialect).writerow(texts)
        return line.text

    return write


def row_reader(row_type: RowTypeInfo, options: CsvOptions) -> Callable[[str], Row]:
    """One CSV message as a row of the type; a field that does not parse as its type fails,
    naming it."""
    names = row_type.get_field_names()
    parsers = [_parser(field) for field in row_type.field_types]
    dialect = _dialect(options, "\n")

    def read(message: str) -> Row:
        try:
            lines = list(csv.reader([message.rstrip("\r\n")], **dialect))
        except csv.Error as error:
            raise ValueError(f"the csv message {message!r} is not a line of fields: "
                             f"{error}") from None
        texts = lines[0] if lines else []
        if len(texts) != len(parsers):
            raise ValueError(f"the csv message {message!r} has {len(texts)} fields, its row "
                             f"type {len(parsers)}")
        values: list[Any] = []
        for name, parse, field, text in zip(names, parsers, row_type.field_types, texts,
                                            strict=True):
            if text == options.null_literal or (text == "" and parse is not str):
                values.append(None)
                continue
            try:
                values.append(parse(text))
            except (ValueError, InvalidOperation):
                raise ValueError(f"csv field {name!r} ({type_text(field)}): {text!r} is not "
                                 "a value of its type") from None
        row = Row(*values)
        row.set_field_names(names)
        return row

    return read


class _Line:
    """What csv.writer writes one line into."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> None:
        self.text += text


def _dialect(options: CsvOptions, line_terminator: str) -> dict[str, Any]:
    quoted = bool(options.quote_character)
    return {
        "delimiter": options.field_delimiter,
        "quotechar": options.quote_character or None,
        "escapechar": options.escape_character or None,
        "doublequote": not options.escape_character,
        "quoting": csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        "lineterminator": line_terminator,
        "strict": True,
    }


def _parser(type_info: TypeInformation) -> Callable[[str], Any]:
    """Java's parsing of a field's text (surrounding spaces ignored, except in text)."""
    if isinstance(type_info, DateTypeInfo):
        return lambda text: datetime.date.fromisoformat(text.strip())
    if isinstance(type_info, TimeTypeInfo):
        return lambda text: datetime.time.fromisoformat(text.strip())
    if isinstance(type_info, TimestampTypeInfo):  # java.sql.Timestamp.valueOf's form
        return lambda text: datetime.datetime.fromisoformat(text.strip())
    assert isinstance(type_info, BasicTypeInfo)
    basic = type_info.basic_type
    if basic in _TEXT:
        return str
    if basic in _INTEGERS:
        return lambda text: int(_java_number(text))
    if basic is BasicType.BOOLEAN:  # Boolean.parseBoolean
        return lambda text: text.strip().lower() == "true"
    if basic is BasicType.BIG_DEC:
        return lambda text: Decimal(_java_number(text))
    return lambda text: float(_java_number(text))


def _java_number(text: str) -> str:
    """The text of a number as Java parses it: no '_' between digits, which Python allows."""
    if "_" in text:
        raise ValueError(f"{text!r} is not a number")
    return text.strip()
