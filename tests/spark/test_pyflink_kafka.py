"""PyFlink's Kafka connector as its shipped examples use it (kafka_json_format,
kafka_bytearray_format): builders, serialization schemas and typed rows, against a real
broker (hack/kafka)."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from dataflow_engine.api.common import ByteArraySchema, SimpleStringSchema, Types
from dataflow_engine.api.common.watermark_strategy import WatermarkStrategy
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
from dataflow_engine.api.scripts import RUNNER_SETTINGS
from kafka_helpers import new_topic, read_topic

pytestmark = pytest.mark.spark

ROWS = Types.ROW([Types.INT(), Types.STRING()])


@pytest.fixture
def env(spark: Any) -> Iterator[StreamExecutionEnvironment]:
    """An environment whose jobs run on the tier's session (as ``dataflow run`` sets it)."""
    token = RUNNER_SETTINGS.set({"spark_session": spark, "progress": False})
    try:
        yield StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)
    finally:
        RUNNER_SETTINGS.reset(token)


def _sink(bootstrap: str, topic: str, schema: Any) -> KafkaSink:
    serializer = KafkaRecordSerializationSchema.builder().set_topic(topic) \
        .set_value_serialization_schema(schema).build()
    return KafkaSink.builder().set_record_serializer(serializer) \
        .set_bootstrap_servers(bootstrap).set_property("acks", "all").build()


def _printed(env: StreamExecutionEnvironment, bootstrap: str, topic: str,
             deserializer: Any) -> list[str]:
    source = KafkaSource.builder().set_topics(topic).set_value_only_deserializer(deserializer) \
        .set_properties({"bootstrap.servers": bootstrap, "group.id": "test_group_1"}) \
        .set_starting_offsets(KafkaOffsetsInitializer.earliest()) \
        .set_bounded(KafkaOffsetsInitializer.latest()).build()
    env.from_source(source, WatermarkStrategy.no_watermarks(), "kafka source").print()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        env.execute()
    return printed.getvalue().splitlines()


def test_rows_written_and_read_as_json_objects(env: StreamExecutionEnvironment,
                                               kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, partitions=1)
    env.from_collection([(1, "hi"), (2, "hello")], type_info=ROWS) \
        .sink_to(_sink(kafka_bootstrap, topic,
                       JsonRowSerializationSchema.Builder().with_type_info(ROWS).build()))
    env.execute()
    # Flink's JsonRowSerializationSchema: an object by the row type's field names
    assert [json.loads(value) for _, value, _ in read_topic(kafka_bootstrap, topic)] == [
        {"f0": 1, "f1": "hi"}, {"f0": 2, "f1": "hello"}]
    deserializer = JsonRowDeserializationSchema.Builder().type_info(ROWS).build()
    assert _printed(env, kafka_bootstrap, topic, deserializer) == ["+I[1,hi]", "+I[2,hello]"]


def test_bytes_and_strings_as_pyflink_schemas_give_them(env: StreamExecutionEnvironment,
                                                         kafka_bootstrap: str) -> None:
    topic = new_topic(kafka_bootstrap, partitions=1)
    env.from_collection([(b'{"id": 1}',), (b'{"id": 2}',)],
                        type_info=Types.ROW([Types.PRIMITIVE_ARRAY(Types.BYTE())])) \
        .map(lambda row: row[0], output_type=Types.PRIMITIVE_ARRAY(Types.BYTE())) \
        .sink_to(_sink(kafka_bootstrap, topic, ByteArraySchema()))
    env.execute()
    # a byte[] prints as Java's Arrays.toString; the same message as text is its string
    assert _printed(env, kafka_bootstrap, topic, ByteArraySchema())[0].startswith(
        "[123, 34, 105, 100, 34")
    assert _printed(env, kafka_bootstrap, topic, SimpleStringSchema()) == [
        '{"id": 1}', '{"id": 2}']
