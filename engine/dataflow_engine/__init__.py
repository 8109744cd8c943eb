"""Dataflow engine: the DataflowJob spec, Flink's graph layers, and the Spark runtime."""

__version__ = "0.1.0"
