"""Flink's record types as Python values: below the runtime, which makes and prints them, and
the API, which names them (PyFlink's ``pyflink.common.types``)."""

from dataflow_engine.types.row import Row, RowKind

__all__ = ["Row", "RowKind"]
