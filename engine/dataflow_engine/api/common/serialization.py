"""PyFlink's ``pyflink.common.serialization``: the FileSink's string encoder, and the string,
byte and row-field schemas of the Kafka connectors (each stands for one of their formats)."""

from __future__ import annotations

from dataflow_engine.api._unsupported import refused
from dataflow_engine.types.typeinfo import TypeInformation, Types


class SimpleStringSchema:
    """Records are UTF-8 text (the Kafka connectors' ``text`` format): a source's are of
    Types.STRING(), a sink writes each record's text."""

    kafka_format = "text"

    def __init__(self, charset: str = "UTF-8") -> None:
        if charset.replace("-", "").upper() != "UTF8":
            raise ValueError(f"the Kafka connectors read and write UTF-8, not {charset!r}")

    @property
    def record_type(self) -> TypeInformation:
        return Types.STRING()


class ByteArraySchema:
    """Records are the messages' bytes (the Kafka connectors' ``raw`` format), of
    Types.PRIMITIVE_ARRAY(Types.BYTE())."""

    kafka_format = "raw"

    @property
    def record_type(self) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())


class RowFieldExtractorSchema:
    """A KafkaSink's key or value is one field of each row, a byte array (PyFlink 2.3's
    RowFieldExtractorSchema; the sink's ``keyField``/``valueField`` in the ``raw`` format)."""

    kafka_format = "raw"

    def __init__(self, field_index: int) -> None:
        if field_index < 0:
            raise ValueError(f"Field index must be non-negative, got: {field_index}")
        self.field_index = field_index

    @property
    def record_type(self) -> TypeInformation:
        return Types.PRIMITIVE_ARRAY(Types.BYTE())


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
BulkWriterFactory = refused("pyflink.common.serialization.BulkWriterFactory")

__all__ = ["BulkWriterFactory", "ByteArraySchema", "DeserializationSchema", "Encoder",
           "RowFieldExtractorSchema", "SerializationSchema", "SimpleStringSchema"]
