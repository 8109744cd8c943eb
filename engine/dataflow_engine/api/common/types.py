"""PyFlink's ``pyflink.common.types``: ``RowKind``, the change a row stands for in a changelog;
``Row`` is refused until records can be rows."""

from enum import Enum

from dataflow_engine.api._unsupported import refused


class RowKind(Enum):
    """Insert, the two halves of an update, or delete; ``str()`` is Flink's short form."""

    INSERT = 0
    UPDATE_BEFORE = 1
    UPDATE_AFTER = 2
    DELETE = 3

    def __str__(self) -> str:
        return _SHORT[self]


_SHORT = {RowKind.INSERT: "+I", RowKind.UPDATE_BEFORE: "-U", RowKind.UPDATE_AFTER: "+U",
          RowKind.DELETE: "-D"}

Row = refused("pyflink.common.types.Row")

__all__ = ["Row", "RowKind"]
