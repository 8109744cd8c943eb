"""PyFlink's ``pyflink.datastream.connectors.jdbc``: refused, as there is no JDBC connector yet
(each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

JdbcSink = refused("pyflink.datastream.connectors.jdbc.JdbcSink")
JdbcConnectionOptions = refused("pyflink.datastream.connectors.jdbc.JdbcConnectionOptions")
JdbcExecutionOptions = refused("pyflink.datastream.connectors.jdbc.JdbcExecutionOptions")

__all__ = ["JdbcConnectionOptions", "JdbcExecutionOptions", "JdbcSink"]
