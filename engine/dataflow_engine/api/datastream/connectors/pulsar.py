"""PyFlink's ``pyflink.datastream.connectors.pulsar``: refused, as there is no Pulsar connector yet
(each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused
from dataflow_engine.api.datastream.connectors.base import (  # programs import it from here too
    DeliveryGuarantee,
)

PulsarSource = refused("pyflink.datastream.connectors.pulsar.PulsarSource")
PulsarSourceBuilder = refused("pyflink.datastream.connectors.pulsar.PulsarSourceBuilder")
StartCursor = refused("pyflink.datastream.connectors.pulsar.StartCursor")
StopCursor = refused("pyflink.datastream.connectors.pulsar.StopCursor")
RangeGenerator = refused("pyflink.datastream.connectors.pulsar.RangeGenerator")
PulsarSink = refused("pyflink.datastream.connectors.pulsar.PulsarSink")
PulsarSinkBuilder = refused("pyflink.datastream.connectors.pulsar.PulsarSinkBuilder")
MessageDelayer = refused("pyflink.datastream.connectors.pulsar.MessageDelayer")
TopicRoutingMode = refused("pyflink.datastream.connectors.pulsar.TopicRoutingMode")

__all__ = ["DeliveryGuarantee", "MessageDelayer", "PulsarSink", "PulsarSinkBuilder", "PulsarSource",
           "PulsarSourceBuilder", "RangeGenerator", "StartCursor", "StopCursor", "TopicRoutingMode"]
