"""PyFlink's Kafka builders make the spec's kafka source and kafka_sink, typed as their
schemas say."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dataflow_engine.api.common import ByteArraySchema, SimpleStringSchema, Types
from dataflow_engine.api.common.serialization import RowFieldExtractorSchema
from dataflow_engine.api.datastream import StreamExecutionEnvironment
from dataflow_engine.api.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
)
from dataflow_engine.api.datastream.formats.avro import (
    AvroRowDeserializationSchema,
    AvroRowSerializationSchema,
)
from dataflow_engine.api.datastream.formats.csv import (
    CsvRowDeserializationSchema,
    CsvRowSerializationSchema,
)
from dataflow_engine.api.datastream.formats.json import (
    JsonRowDeserializationSchema,
    JsonRowSerializationSchema,
)
from dataflow_engine.api.sinks import DeliveryGuarantee
from dataflow_engine.errors import SpecError
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


def test_csv_row_schemas_make_the_csv_format_with_their_settings() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    reading = CsvRowDeserializationSchema.Builder(ROWS).set_field_delimiter(";") \
        .set_null_literal("-").build()
    source = KafkaSource.builder().set_bootstrap_servers("k:9092").set_topics("in") \
        .set_value_only_deserializer(reading).build()
    writing = CsvRowSerializationSchema.Builder(ROWS).disable_quote_character().build()
    sink = KafkaSink.builder().set_bootstrap_servers("k:9092").set_record_serializer(
        KafkaRecordSerializationSchema.builder().set_topic("out")
        .set_value_serialization_schema(writing).build()).build()
    env.from_source(source, source_name="csv in").sink_to(sink)
    kafka, kafka_sink = env.build_spec().pipeline
    assert kafka.output_type == "ROW<id INT, name STRING>"
    assert (kafka.args["valueFormat"], kafka.args["csv"]) == (
        "csv", {"fieldDelimiter": ";", "nullLiteral": "-"})
    assert (kafka_sink.args["valueFormat"], kafka_sink.args["csv"]) == (
        "csv", {"quoteCharacter": ""})
    env.compile("csv")  # the sink's input is of the row type
    with pytest.raises(TypeError, match="csv format reads and writes rows"):
        CsvRowSerializationSchema.Builder(Types.TUPLE([Types.INT()]))
    with pytest.raises(NotImplementedError, match="parse in a flat_map"):
        CsvRowDeserializationSchema.Builder(ROWS).set_ignore_parse_errors(True)


def test_a_csv_sink_of_records_that_are_not_rows_is_refused_naming_it() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(1, "a")], type_info=Types.TUPLE([Types.INT(), Types.STRING()])) \
        .sink_to(KafkaSink("k:9092", "out", value_format="csv")).name("to-kafka")
    with pytest.raises(SpecError) as refused:
        env.compile("csv")
    assert str(refused.value.problems[0]) == (
        "spec.pipeline[1].inputs: operator 'to-kafka' (valueFormat csv): the csv format reads "
        "and writes rows (Types.ROW or Types.ROW_NAMED), not TUPLE<INT, STRING>")
    with pytest.raises(ValidationError, match="'csv' settings go with valueFormat: csv"):
        KafkaSink("k:9092", "out", csv={"fieldDelimiter": ";"})
    with pytest.raises(ValidationError, match="not \\(key, value\\) pairs"):
        KafkaSource("k:9092", topics=["t"], key_format="text", value_format="csv")


def test_row_field_extractors_make_a_rows_fields_the_key_and_the_value() -> None:
    serializer = KafkaRecordSerializationSchema.builder().set_topic("events") \
        .set_key_serialization_schema(RowFieldExtractorSchema(0)) \
        .set_value_serialization_schema(RowFieldExtractorSchema(1)).build()
    sink = KafkaSink.builder().set_bootstrap_servers("k:9092") \
        .set_record_serializer(serializer).build()
    assert sink.args() == {"bootstrapServers": "k:9092", "topic": "events", "keyFormat": "raw",
                           "keyField": 0, "valueFormat": "raw", "valueField": 1}
    with pytest.raises(ValueError, match="non-negative"):
        RowFieldExtractorSchema(-1)
    with pytest.raises(TypeError, match="ByteArraySchema"):
        KafkaSource.builder().set_value_only_deserializer(RowFieldExtractorSchema(0))
    with pytest.raises(ValidationError, match="keyField goes with keyFormat"):
        KafkaSink("k:9092", "t", key_field=0)


AVRO_SCHEMA = ('{"type": "record", "name": "TestRecord", "fields": [{"name": "id", "type": '
               '"int"}, {"name": "name", "type": "string"}]}')


def test_avro_row_schemas_make_the_avro_format_typed_by_the_schema() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    source = KafkaSource.builder().set_bootstrap_servers("k:9092").set_topics("in") \
        .set_value_only_deserializer(AvroRowDeserializationSchema(
            avro_schema_string=AVRO_SCHEMA)).build()
    sink = KafkaSink.builder().set_bootstrap_servers("k:9092").set_record_serializer(
        KafkaRecordSerializationSchema.builder().set_topic("out")
        .set_value_serialization_schema(AvroRowSerializationSchema(
            avro_schema_string=AVRO_SCHEMA)).build()).build()
    env.from_source(source, source_name="avro in").sink_to(sink)
    kafka, kafka_sink = env.build_spec().pipeline
    assert kafka.output_type == "ROW<id INT, name STRING>"  # the schema's
    assert (kafka.args["valueFormat"], kafka.args["avroSchema"]) == ("avro", AVRO_SCHEMA)
    assert (kafka_sink.args["valueFormat"], kafka_sink.args["avroSchema"]) == (
        "avro", AVRO_SCHEMA)
    env.compile("avro")
    with pytest.raises(NotImplementedError, match="avro_schema_string"):
        AvroRowSerializationSchema(record_class="com.example.Record")


def test_an_avro_sink_of_rows_unlike_its_schema_and_a_bad_schema_are_refused() -> None:
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([(1,)], type_info=Types.ROW([Types.INT()])) \
        .sink_to(KafkaSink("k:9092", "out", value_format="avro", avro_schema=AVRO_SCHEMA)) \
        .name("to-kafka")
    with pytest.raises(SpecError) as refused:
        env.compile("avro")
    assert str(refused.value.problems[0]) == (
        "spec.pipeline[1].inputs: operator 'to-kafka' (valueFormat avro): its rows are "
        "ROW<INT>, the Avro schema's record ROW<id INT, name STRING>")
    swapped = StreamExecutionEnvironment.get_execution_environment()  # fields by position
    swapped.from_collection([("a", 1)], type_info=Types.ROW([Types.STRING(), Types.INT()])) \
        .sink_to(KafkaSink("k:9092", "out", value_format="avro", avro_schema=AVRO_SCHEMA))
    with pytest.raises(SpecError, match="its rows are ROW<STRING, INT>"):
        swapped.compile("avro")
    renamed = StreamExecutionEnvironment.get_execution_environment()  # a source's, by name
    renamed.from_source(KafkaSource("k:9092", topics=["t"], value_format="avro",
                                    avro_schema=AVRO_SCHEMA), source_name="in") \
        .map(lambda row: row, output_type=Types.ROW([Types.INT(), Types.STRING()])) \
        .sink_to(KafkaSink("k:9092", "out", value_format="avro", avro_schema=AVRO_SCHEMA))
    renamed.compile("avro")  # a sink's rows are the schema's by position: f0, f1 will do
    with pytest.raises(ValidationError, match="give keyField"):
        KafkaSink("k:9092", "t", key_format="raw", value_field=1)
    with pytest.raises(ValidationError, match="avroSchema: the Avro schema is not JSON"):
        KafkaSink("k:9092", "out", value_format="avro", avro_schema="{")
    with pytest.raises(ValidationError, match="valueFormat avro goes with avroSchema"):
        KafkaSource("k:9092", topics=["t"], value_format="avro")
