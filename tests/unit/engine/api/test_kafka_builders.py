"""PyFlink's Kafka builders make the spec's kafka source and kafka_sink, typed as their
schemas say."""

from __future__ import annotations

import pytest

from dataflow_engine.api.common import ByteArraySchema, SimpleStringSchema, Types
from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.api.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from dataflow_engine.api.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from dataflow_engine.api.sinks import DeliveryGuarantee
from dataflow_engine.types import type_text

pytestmark = pytest.mark.unit

ROWS = Types.ROW_NAMED(["id", "name"], [Types.INT(), Types.STRING()])


def test_a_source_from_its_builder_is_typed_by_its_deserializer() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = KafkaSource.builder().set_topics("a", "b") \
        .set_value_only_deserializer(JsonRowDeserializationSchema.builder().type_info(ROWS)
                                     .build()) \
        .set_properties({"bootstrap.servers": "k:9092", "group.id": "g", "fetch.min.bytes": "1"}) \
        .set_starting_offsets(KafkaOffsetsInitializer.timestamp(1000)) \
        .set_bounded(KafkaOffsetsInitializer.latest()).build()
    env.from_source(source, source_name="kafka source").print()
    (kafka, _) = env.build_spec().pipeline
    assert (kafka.name, kafka.output_type) == ("kafka-source", "ROW<id INT, name STRING>")
    assert kafka.args == {"bootstrapServers": "k:9092", "topics": ["a", "b"], "groupId": "g",
                          "startingOffsets": "timestamp", "startingTimestamp": 1000,
                          "stoppingOffsets": "latest", "valueFormat": "json",
                          "properties": {"fetch.min.bytes": "1"}}
    texts = KafkaSource.builder().set_bootstrap_servers("k:9092").set_topic_pattern("t.*") \
        .set_value_only_deserializer(SimpleStringSchema()).build()
    assert type_text(texts.record_type) == "STRING"
    assert "valueFormat" not in texts.spec_args()  # text, the default


def test_a_sink_from_its_builder_writes_as_its_serializer_says() -> None:
    for schema, value_format in ((JsonRowSerializationSchema.Builder().with_type_info(ROWS)
                                  .build(), "json"), (ByteArraySchema(), "raw"),
                                 (SimpleStringSchema(), "text")):
        serializer = KafkaRecordSerializationSchema.builder().set_topic("out") \
            .set_value_serialization_schema(schema).build()
        sink = KafkaSink.builder().set_bootstrap_servers("k:9092") \
            .set_record_serializer(serializer) \
            .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE) \
            .set_property("linger.ms", "5").build()
        assert sink.args() == {"bootstrapServers": "k:9092", "topic": "out",
                               "deliveryGuarantee": "at-least-once",
                               "properties": {"linger.ms": "5"},
                               **({} if value_format == "text" else
                                  {"valueFormat": value_format})}


def test_what_the_builders_cannot_do_is_refused_saying_what_to_do() -> None:
    builder = KafkaSource.builder().set_bootstrap_servers("k:9092").set_topics("t")
    with pytest.raises(ValueError, match="set_value_only_deserializer"):
        builder.build()
    with pytest.raises(NotImplementedError, match="set_bounded"):
        builder.set_bounded(KafkaOffsetsInitializer.earliest())
    with pytest.raises(NotImplementedError, match="key_format"):
        KafkaRecordSerializationSchema.builder().set_key_serialization_schema(
            SimpleStringSchema())
    with pytest.raises(TypeError, match="set_value_only_deserializer"):
        builder.set_value_only_deserializer(object())
    with pytest.raises(ValueError, match="with_type_info"):
        JsonRowSerializationSchema.Builder().build()
