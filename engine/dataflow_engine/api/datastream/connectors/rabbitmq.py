"""PyFlink's ``pyflink.datastream.connectors.rabbitmq``: refused, as there is no RabbitMQ connector
yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

RMQConnectionConfig = refused("pyflink.datastream.connectors.rabbitmq.RMQConnectionConfig")
RMQSource = refused("pyflink.datastream.connectors.rabbitmq.RMQSource")
RMQSink = refused("pyflink.datastream.connectors.rabbitmq.RMQSink")

__all__ = ["RMQConnectionConfig", "RMQSink", "RMQSource"]
