"""PyFlink's ``pyflink.datastream.formats.json``: refused; ``value_format='json'`` on a Kafka
connector (or ``FileSink(path, format='json')``) reads and writes JSON."""

from dataflow_engine.api._unsupported import refused

JsonRowDeserializationSchema = refused(
    "pyflink.datastream.formats.json.JsonRowDeserializationSchema")
JsonRowSerializationSchema = refused("pyflink.datastream.formats.json.JsonRowSerializationSchema")

__all__ = ["JsonRowDeserializationSchema", "JsonRowSerializationSchema"]
