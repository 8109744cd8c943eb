"""PyFlink's ``pyflink.datastream.formats.avro``: the Avro row schemas of the Kafka connectors
(their ``avro`` format: a message is an Avro datum of a record schema, a row by position). The
Avro file formats are refused (each name says what to do instead)."""

from __future__ import annotations

from typing import Any

from dataflow_engine.api._unsupported import NotSupportedError, refused
from dataflow_engine.types.avro_form import avro_codec
from dataflow_engine.types.typeinfo import RowTypeInfo


class _AvroRowSchema:
    """A record schema (JSON text): the spec's ``avroSchema``; its rows' type is the schema's."""

    kafka_format = "avro"

    def __init__(self, record_class: str | None = None,
                 avro_schema_string: str | None = None) -> None:
        if record_class is not None:
            raise NotSupportedError(f"{type(self).__name__}: a Java record class cannot be "
                                    "read here; give avro_schema_string, the record's schema")
        if avro_schema_string is None:
            raise ValueError(f"{type(self).__name__} needs avro_schema_string")
        self.record_type: RowTypeInfo = avro_codec(avro_schema_string).row_type
        self.format_args: dict[str, Any] = {"avro_schema": avro_schema_string}


class AvroRowDeserializationSchema(_AvroRowSchema):
    """Each message an Avro datum of the schema, read as a Row of the schema's type."""


class AvroRowSerializationSchema(_AvroRowSchema):
    """Each row (by position) as an Avro datum of the schema."""


AvroSchema = refused("pyflink.datastream.formats.avro.AvroSchema")
GenericRecordAvroTypeInfo = refused("pyflink.datastream.formats.avro.GenericRecordAvroTypeInfo")
AvroInputFormat = refused("pyflink.datastream.formats.avro.AvroInputFormat")
AvroBulkWriters = refused("pyflink.datastream.formats.avro.AvroBulkWriters")

__all__ = ["AvroBulkWriters", "AvroInputFormat", "AvroRowDeserializationSchema",
           "AvroRowSerializationSchema", "AvroSchema", "GenericRecordAvroTypeInfo"]
