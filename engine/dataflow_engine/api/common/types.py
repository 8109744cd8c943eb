"""PyFlink's ``pyflink.common.types``: ``Row`` and ``RowKind`` (dataflow_engine.types, where
the runtime reaches them too)."""

from dataflow_engine.types.row import Row, RowKind

__all__ = ["Row", "RowKind"]
