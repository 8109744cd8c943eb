"""PyFlink's ``pyflink.datastream.formats.orc``: refused, as there is no ORC format yet (each name
says what to do instead)."""

from dataflow_engine.api._unsupported import refused

OrcBulkWriters = refused("pyflink.datastream.formats.orc.OrcBulkWriters")

__all__ = ["OrcBulkWriters"]
