"""PyFlink's ``pyflink.datastream.connectors.kafka``: KafkaSource and KafkaSink (the spec's
``kafka`` and ``kafka_sink`` operators), set with arguments rather than builders; the
builders, schemas and legacy consumer and producer are refused."""

from __future__ import annotations

from typing import Any, NoReturn

from dataflow_engine.api._unsupported import NotSupportedError, message, refused
from dataflow_engine.api.datastream.connectors.base import Source
from dataflow_engine.api.sinks import KafkaSink
from dataflow_engine.spec.catalog import KafkaSourceArgs


class KafkaSource(Source):
    """Flink's KafkaSource, set with keyword arguments rather than a builder (the spec's
    ``kafka`` operator: formats stand for deserialization schemas). ``bounded``: read up to
    the end offsets of when the job started (Flink's ``setBounded(latest())``)."""

    def __init__(self, bootstrap_servers: str, *, topics: list[str] | None = None,
                 topic_pattern: str | None = None, group_id: str | None = None,
                 starting_offsets: str = "earliest", starting_timestamp: int | None = None,
                 bounded: bool = False, key_format: str | None = None,
                 value_format: str = "text", properties: dict[str, str] | None = None) -> None:
        self.args = KafkaSourceArgs.model_validate({
            "bootstrapServers": bootstrap_servers, "topics": topics,
            "topicPattern": topic_pattern, "groupId": group_id,
            "startingOffsets": starting_offsets, "startingTimestamp": starting_timestamp,
            "stoppingOffsets": "latest" if bounded else None, "keyFormat": key_format,
            "valueFormat": value_format, "properties": properties or {}})

    @staticmethod
    def builder() -> NoReturn:
        """PyFlink's way to make one: refused, saying which arguments to give instead."""
        raise NotSupportedError(message("pyflink.datastream.connectors.kafka.KafkaSourceBuilder"))

    def spec_args(self) -> dict[str, Any]:
        return self.args.model_dump(by_alias=True, exclude_defaults=True)


FlinkKafkaConsumer = refused("pyflink.datastream.connectors.kafka.FlinkKafkaConsumer")
FlinkKafkaProducer = refused("pyflink.datastream.connectors.kafka.FlinkKafkaProducer")
Semantic = refused("pyflink.datastream.connectors.kafka.Semantic")
KafkaSourceBuilder = refused("pyflink.datastream.connectors.kafka.KafkaSourceBuilder")
KafkaSinkBuilder = refused("pyflink.datastream.connectors.kafka.KafkaSinkBuilder")
KafkaTopicPartition = refused("pyflink.datastream.connectors.kafka.KafkaTopicPartition")
KafkaOffsetsInitializer = refused("pyflink.datastream.connectors.kafka.KafkaOffsetsInitializer")
KafkaOffsetResetStrategy = refused(
    "pyflink.datastream.connectors.kafka.KafkaOffsetResetStrategy")
KafkaRecordSerializationSchema = refused(
    "pyflink.datastream.connectors.kafka.KafkaRecordSerializationSchema")
KafkaRecordSerializationSchemaBuilder = refused(
    "pyflink.datastream.connectors.kafka.KafkaRecordSerializationSchemaBuilder")
KafkaTopicSelector = refused("pyflink.datastream.connectors.kafka.KafkaTopicSelector")

__all__ = ["FlinkKafkaConsumer", "FlinkKafkaProducer", "KafkaOffsetResetStrategy",
           "KafkaOffsetsInitializer", "KafkaRecordSerializationSchema",
           "KafkaRecordSerializationSchemaBuilder", "KafkaSink", "KafkaSinkBuilder",
           "KafkaSource", "KafkaSourceBuilder", "KafkaTopicPartition", "KafkaTopicSelector",
           "Semantic"]
