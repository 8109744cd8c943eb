"""PyFlink's ``pyflink.datastream.connectors.elasticsearch``: refused, as there is no Elasticsearch
connector yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.datastream.connectors.base import (  # programs import it from here too
    DeliveryGuarantee,
)

FlushBackoffType = refused("pyflink.datastream.connectors.elasticsearch.FlushBackoffType")
ElasticsearchEmitter = refused("pyflink.datastream.connectors.elasticsearch.ElasticsearchEmitter")
Elasticsearch6SinkBuilder = refused(
    "pyflink.datastream.connectors.elasticsearch.Elasticsearch6SinkBuilder")
Elasticsearch7SinkBuilder = refused(
    "pyflink.datastream.connectors.elasticsearch.Elasticsearch7SinkBuilder")
ElasticsearchSink = refused("pyflink.datastream.connectors.elasticsearch.ElasticsearchSink")

__all__ = ["DeliveryGuarantee", "Elasticsearch6SinkBuilder", "Elasticsearch7SinkBuilder",
           "ElasticsearchEmitter", "ElasticsearchSink", "FlushBackoffType"]
