"""PyFlink's ``pyflink.datastream.formats.csv``: the CSV row schemas of the Kafka connectors
(their ``csv`` format: a message is a line of a row's fields). The CSV file formats are
refused, as the file connectors read and write text lines."""

from __future__ import annotations

from typing import Any

from dataflow_engine.api._unsupported import NotSupportedError, refused
from dataflow_engine.api.transformations import declared_type
from dataflow_engine.types.csv_form import unwritable_field
from dataflow_engine.types.typeinfo import TypeInformation


class _CsvRowSchema:
    """A row type and the csv format's settings (the spec's ``csv``, camelCase keys)."""

    kafka_format = "csv"

    def __init__(self, type_info: TypeInformation, settings: dict[str, Any]) -> None:
        self.record_type = type_info
        self.format_args: dict[str, Any] = {"csv": settings or None}


class _CsvBuilder:
    def __init__(self, type_info: TypeInformation) -> None:
        declared = declared_type(type_info, "type_info")
        problem = unwritable_field(declared)
        if declared is None or problem is not None:
            raise TypeError(f"{type(self).__qualname__.split('.')[0]}: {problem}")
        self._type_info = declared
        self._settings: dict[str, Any] = {}

    def _set(self, key: str, character: str) -> Any:
        if len(character) != 1:
            raise ValueError(f"{key} is one character, not {character!r}")
        self._settings[key] = character
        return self

    def set_field_delimiter(self, delimiter: str) -> Any:
        return self._set("fieldDelimiter", delimiter)

    def set_quote_character(self, c: str) -> Any:
        return self._set("quoteCharacter", c)

    def set_escape_character(self, c: str) -> Any:
        return self._set("escapeCharacter", c)

    def set_null_literal(self, null_literal: str) -> Any:
        self._settings["nullLiteral"] = null_literal
        return self

    def set_array_element_delimiter(self, delimiter: str) -> Any:
        raise NotSupportedError("the csv format's rows have basic fields only: no array "
                                "element delimiter")


class CsvRowDeserializationSchema(_CsvRowSchema):
    """Each message a line of fields, read as a row of the type."""

    class Builder(_CsvBuilder):
        def set_allow_comments(self, allow_comments: bool) -> CsvRowDeserializationSchema.Builder:
            if allow_comments:
                raise NotSupportedError("the csv format reads every message as a row: no "
                                        "comment lines; drop them with a filter() on a text "
                                        "source (SimpleStringSchema) instead")
            return self

        def set_ignore_parse_errors(self, ignore_parse_errors: bool
                                    ) -> CsvRowDeserializationSchema.Builder:
            if ignore_parse_errors:
                raise NotSupportedError("the csv format fails the job on a message that is "
                                        "not a row of its type; to skip such messages, read "
                                        "text (SimpleStringSchema) and parse in a flat_map()")
            return self

        def build(self) -> CsvRowDeserializationSchema:
            return CsvRowDeserializationSchema(self._type_info, dict(self._settings))


class CsvRowSerializationSchema(_CsvRowSchema):
    """Each record of the row type as a line of its fields."""

    class Builder(_CsvBuilder):
        def set_line_delimiter(self, delimiter: str) -> CsvRowSerializationSchema.Builder:
            if delimiter not in ("\n", "\r", "\r\n", ""):
                raise ValueError(f"a line delimiter is '\\n', '\\r', '\\r\\n' or '', not "
                                 f"{delimiter!r}")
            self._settings["lineDelimiter"] = delimiter
            return self

        def disable_quote_character(self) -> CsvRowSerializationSchema.Builder:
            self._settings["quoteCharacter"] = ""
            return self

        def build(self) -> CsvRowSerializationSchema:
            return CsvRowSerializationSchema(self._type_info, dict(self._settings))


CsvSchema = refused("pyflink.datastream.formats.csv.CsvSchema")
CsvSchemaBuilder = refused("pyflink.datastream.formats.csv.CsvSchemaBuilder")
CsvReaderFormat = refused("pyflink.datastream.formats.csv.CsvReaderFormat")
CsvBulkWriters = refused("pyflink.datastream.formats.csv.CsvBulkWriters")

__all__ = ["CsvBulkWriters", "CsvReaderFormat", "CsvRowDeserializationSchema",
           "CsvRowSerializationSchema", "CsvSchema", "CsvSchemaBuilder"]
