"""PyFlink's ``pyflink.common.serialization``: refused, as connectors here take formats
(``raw``, ``text``, ``json``) instead of (de)serialization schemas and encoders."""

from dataflow_engine.api._unsupported import refused

SerializationSchema = refused("pyflink.common.serialization.SerializationSchema")
DeserializationSchema = refused("pyflink.common.serialization.DeserializationSchema")
SimpleStringSchema = refused("pyflink.common.serialization.SimpleStringSchema")
ByteArraySchema = refused("pyflink.common.serialization.ByteArraySchema")
Encoder = refused("pyflink.common.serialization.Encoder")
BulkWriterFactory = refused("pyflink.common.serialization.BulkWriterFactory")
RowFieldExtractorSchema = refused("pyflink.common.serialization.RowFieldExtractorSchema")

__all__ = ["BulkWriterFactory", "ByteArraySchema", "DeserializationSchema", "Encoder",
           "RowFieldExtractorSchema", "SerializationSchema", "SimpleStringSchema"]
