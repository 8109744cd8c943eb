"""PyFlink's ``pyflink.common.serialization``: the FileSink's string encoder; connectors here
take formats (``raw``, ``text``, ``json``) instead of (de)serialization schemas."""

from __future__ import annotations

from dataflow_engine.api._unsupported import refused


class Encoder:
    """How a row-format FileSink writes a record: Flink's SimpleStringEncoder writes its
    ``toString`` (Java's form of a typed record, Python's ``str`` of an untyped one) and a
    newline, in UTF-8."""

    def __init__(self, charset_name: str) -> None:
        self.charset_name = charset_name

    @staticmethod
    def simple_string_encoder(charset_name: str = "UTF-8") -> Encoder:
        if charset_name.replace("-", "").upper() != "UTF8":
            raise ValueError(f"the FileSink writes UTF-8, not {charset_name!r}")
        return Encoder(charset_name)


SerializationSchema = refused("pyflink.common.serialization.SerializationSchema")
DeserializationSchema = refused("pyflink.common.serialization.DeserializationSchema")
SimpleStringSchema = refused("pyflink.common.serialization.SimpleStringSchema")
ByteArraySchema = refused("pyflink.common.serialization.ByteArraySchema")
BulkWriterFactory = refused("pyflink.common.serialization.BulkWriterFactory")
RowFieldExtractorSchema = refused("pyflink.common.serialization.RowFieldExtractorSchema")

__all__ = ["BulkWriterFactory", "ByteArraySchema", "DeserializationSchema", "Encoder",
           "RowFieldExtractorSchema", "SerializationSchema", "SimpleStringSchema"]
