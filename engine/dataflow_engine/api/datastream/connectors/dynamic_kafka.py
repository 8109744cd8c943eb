"""PyFlink's ``pyflink.datastream.connectors.dynamic_kafka``: refused, as there is no dynamic Kafka
connector yet (each name says what to do instead)."""

from dataflow_engine.api._unsupported import refused

DynamicKafkaSource = refused("pyflink.datastream.connectors.dynamic_kafka.DynamicKafkaSource")
DynamicKafkaSourceBuilder = refused(
    "pyflink.datastream.connectors.dynamic_kafka.DynamicKafkaSourceBuilder")
KafkaMetadataService = refused("pyflink.datastream.connectors.dynamic_kafka.KafkaMetadataService")
KafkaRecordDeserializationSchema = refused(
    "pyflink.datastream.connectors.dynamic_kafka.KafkaRecordDeserializationSchema")
KafkaStreamSetSubscriber = refused(
    "pyflink.datastream.connectors.dynamic_kafka.KafkaStreamSetSubscriber")
KafkaStreamSubscriber = refused("pyflink.datastream.connectors.dynamic_kafka.KafkaStreamSubscriber")
StreamPatternSubscriber = refused(
    "pyflink.datastream.connectors.dynamic_kafka.StreamPatternSubscriber")
SingleClusterTopicMetadataService = refused(
    "pyflink.datastream.connectors.dynamic_kafka.SingleClusterTopicMetadataService")

__all__ = ["DynamicKafkaSource", "DynamicKafkaSourceBuilder", "KafkaMetadataService",
           "KafkaRecordDeserializationSchema", "KafkaStreamSetSubscriber", "KafkaStreamSubscriber",
           "SingleClusterTopicMetadataService", "StreamPatternSubscriber"]
