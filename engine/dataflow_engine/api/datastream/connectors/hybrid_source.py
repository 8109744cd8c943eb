"""PyFlink's ``pyflink.datastream.connectors.hybrid_source``: refused, as a HybridSource does not
switch sources yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

HybridSource = refused("pyflink.datastream.connectors.hybrid_source.HybridSource")
HybridSourceBuilder = refused("pyflink.datastream.connectors.hybrid_source.HybridSourceBuilder")

__all__ = ["HybridSource", "HybridSourceBuilder"]
