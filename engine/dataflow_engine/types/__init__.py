"""Flink's record types as Python values: below the runtime, which makes, converts and prints
them, and the API, which names them (PyFlink's ``pyflink.common.types`` and ``typeinfo``)."""

from dataflow_engine.types.convert import converter
from dataflow_engine.types.java_string import java_string, print_form, printer, row_string
from dataflow_engine.types.row import Row, RowKind
from dataflow_engine.types.typeinfo import TypeInformation, Types, parse_type, type_text

__all__ = [
    "Row",
    "RowKind",
    "TypeInformation",
    "Types",
    "converter",
    "java_string",
    "parse_type",
    "print_form",
    "printer",
    "row_string",
    "type_text",
]
