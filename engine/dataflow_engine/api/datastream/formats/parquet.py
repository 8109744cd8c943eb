"""PyFlink's ``pyflink.datastream.formats.parquet``: refused, as there is no Parquet format yet
(each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

AvroParquetReaders = refused("pyflink.datastream.formats.parquet.AvroParquetReaders")
AvroParquetWriters = refused("pyflink.datastream.formats.parquet.AvroParquetWriters")
ParquetColumnarRowInputFormat = refused(
    "pyflink.datastream.formats.parquet.ParquetColumnarRowInputFormat")
ParquetBulkWriters = refused("pyflink.datastream.formats.parquet.ParquetBulkWriters")

__all__ = ["AvroParquetReaders", "AvroParquetWriters", "ParquetBulkWriters",
           "ParquetColumnarRowInputFormat"]
