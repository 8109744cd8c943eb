"""PyFlink's ``pyflink.datastream.connectors.cassandra``: refused, as there is no Cassandra
connector yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

CassandraSink = refused("pyflink.datastream.connectors.cassandra.CassandraSink")
ConsistencyLevel = refused("pyflink.datastream.connectors.cassandra.ConsistencyLevel")
MapperOptions = refused("pyflink.datastream.connectors.cassandra.MapperOptions")
ClusterBuilder = refused("pyflink.datastream.connectors.cassandra.ClusterBuilder")
CassandraCommitter = refused("pyflink.datastream.connectors.cassandra.CassandraCommitter")
CassandraFailureHandler = refused("pyflink.datastream.connectors.cassandra.CassandraFailureHandler")

__all__ = ["CassandraCommitter", "CassandraFailureHandler", "CassandraSink", "ClusterBuilder",
           "ConsistencyLevel", "MapperOptions"]
