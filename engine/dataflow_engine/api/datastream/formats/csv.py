"""PyFlink's ``pyflink.datastream.formats.csv``: refused, as there is no CSV format yet."""

from dataflow_engine.api._unsupported import refused

CsvSchema = refused("pyflink.datastream.formats.csv.CsvSchema")
CsvSchemaBuilder = refused("pyflink.datastream.formats.csv.CsvSchemaBuilder")
CsvReaderFormat = refused("pyflink.datastream.formats.csv.CsvReaderFormat")
CsvBulkWriters = refused("pyflink.datastream.formats.csv.CsvBulkWriters")
CsvRowDeserializationSchema = refused("pyflink.datastream.formats.csv.CsvRowDeserializationSchema")
CsvRowSerializationSchema = refused("pyflink.datastream.formats.csv.CsvRowSerializationSchema")

__all__ = ["CsvBulkWriters", "CsvReaderFormat", "CsvRowDeserializationSchema",
           "CsvRowSerializationSchema", "CsvSchema", "CsvSchemaBuilder"]
