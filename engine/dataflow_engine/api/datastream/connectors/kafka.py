"""PyFlink's ``pyflink.datastream.connectors.kafka``: KafkaSource and KafkaSink (the spec's
``kafka`` and ``kafka_sink`` operators) with PyFlink's builders, offsets initializers and
record serialization schema; the legacy consumer and producer are refused."""

from __future__ import annotations

from typing import Any

from dataflow_engine.api._unsupported import NotSupportedError, message, refused
from dataflow_engine.api.common.serialization import RowFieldExtractorSchema
from dataflow_engine.api.datastream.connectors.base import Source
from dataflow_engine.api.sinks import DeliveryGuarantee, KafkaSink
from dataflow_engine.spec.catalog import KafkaSourceArgs
from dataflow_engine.types.typeinfo import TypeInformation


class KafkaSource(Source):
    """Flink's KafkaSource (the spec's ``kafka`` operator: formats stand for deserialization
    schemas), made by PyFlink's ``KafkaSource.builder()`` or with keyword arguments.
    ``bounded``: read up to the end offsets of when the job started (Flink's
    ``setBounded(latest())``). ``record_type`` is the declared type of its records; ``csv``
    the csv format's settings (the spec's camelCase keys), ``avro_schema`` the avro format's
    record schema (JSON)."""

    def __init__(self, bootstrap_servers: str, *, topics: list[str] | None = None,
                 topic_pattern: str | None = None, group_id: str | None = None,
                 starting_offsets: str = "earliest", starting_timestamp: int | None = None,
                 bounded: bool = False, key_format: str | None = None,
                 value_format: str = "text", csv: dict[str, Any] | None = None,
                 avro_schema: str | None = None, properties: dict[str, str] | None = None,
                 record_type: TypeInformation | None = None) -> None:
        self.args = KafkaSourceArgs.model_validate({
            "bootstrapServers": bootstrap_servers, "topics": topics,
            "topicPattern": topic_pattern, "groupId": group_id,
            "startingOffsets": starting_offsets, "startingTimestamp": starting_timestamp,
            "stoppingOffsets": "latest" if bounded else None, "keyFormat": key_format,
            "valueFormat": value_format, "csv": csv, "avroSchema": avro_schema,
            "properties": properties or {}})
        self.record_type = record_type

    @staticmethod
    def builder() -> KafkaSourceBuilder:
        return KafkaSourceBuilder()

    def spec_args(self) -> dict[str, Any]:
        return self.args.model_dump(by_alias=True, exclude_defaults=True)


class KafkaOffsetsInitializer:
    """Where a KafkaSource starts (or, bounded, stops) in each partition."""

    def __init__(self, kind: str, timestamp: int | None = None) -> None:
        #: The spec's startingOffsets: earliest, latest, committed or timestamp.
        self.kind, self.timestamp_ms = kind, timestamp

    @staticmethod
    def earliest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("earliest")

    @staticmethod
    def latest() -> KafkaOffsetsInitializer:
        return KafkaOffsetsInitializer("latest")

    @staticmethod
    def timestamp(timestamp: int) -> KafkaOffsetsInitializer:
        """The first record at or after this epoch millisecond."""
        return KafkaOffsetsInitializer("timestamp", timestamp)

    @staticmethod
    def committed_offsets(offset_reset_strategy: object = None) -> KafkaOffsetsInitializer:
        """The group's committed offsets, else the earliest (the only reset strategy here)."""
        if offset_reset_strategy is not None:
            raise NotSupportedError(message(
                "pyflink.datastream.connectors.kafka.KafkaOffsetResetStrategy"))
        return KafkaOffsetsInitializer("committed")

    @staticmethod
    def offsets(offsets: object, offset_reset_strategy: object = None
                ) -> KafkaOffsetsInitializer:
        raise NotSupportedError(message("pyflink.datastream.connectors.kafka.KafkaTopicPartition"))


def _schema(schema: Any, method: str, row_schemas: str) -> Any:
    """A schema the connectors take: each stands for one of their formats (``kafka_format``)."""
    if not hasattr(schema, "kafka_format"):
        raise TypeError(f"{method}() takes SimpleStringSchema(), ByteArraySchema() or a "
                        f"{row_schemas}, not {type(schema).__name__}")
    return schema


def _format_args(schema: Any) -> dict[str, Any]:
    """The connector's keyword arguments a row schema's format takes beyond its name: the
    csv format's settings, the avro format's schema."""
    return dict(getattr(schema, "format_args", {}))


#: Client properties PyFlink programs set that are the source's own settings here.
_SOURCE_SETTINGS = {"bootstrap.servers": "bootstrap_servers", "group.id": "group_id"}


class KafkaSourceBuilder:
    """``KafkaSource.builder()``: PyFlink's setters, then ``build()``."""

    def __init__(self) -> None:
        self._settings: dict[str, Any] = {}
        self._properties: dict[str, str] = {}
        self._deserializer: Any = None

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSourceBuilder:
        self._settings["bootstrap_servers"] = bootstrap_servers
        return self

    def set_group_id(self, group_id: str) -> KafkaSourceBuilder:
        self._settings["group_id"] = group_id
        return self

    def set_topics(self, *topics: str) -> KafkaSourceBuilder:
        self._settings["topics"] = list(topics)
        return self

    def set_topic_pattern(self, topic_pattern: str) -> KafkaSourceBuilder:
        self._settings["topic_pattern"] = topic_pattern
        return self

    def set_partitions(self, partitions: object) -> KafkaSourceBuilder:
        raise NotSupportedError(message("pyflink.datastream.connectors.kafka.KafkaTopicPartition"))

    def set_starting_offsets(self, starting_offsets_initializer: KafkaOffsetsInitializer
                             ) -> KafkaSourceBuilder:
        self._settings["starting_offsets"] = starting_offsets_initializer.kind
        self._settings["starting_timestamp"] = starting_offsets_initializer.timestamp_ms
        return self

    def set_bounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer
                    ) -> KafkaSourceBuilder:
        """Only ``KafkaOffsetsInitializer.latest()``: the end offsets of when the job starts."""
        if stopping_offsets_initializer.kind != "latest":
            raise NotSupportedError("set_bounded(): a KafkaSource stops at the end offsets of "
                                    "when the job starts, set_bounded(latest())")
        self._settings["bounded"] = True
        return self

    def set_unbounded(self, stopping_offsets_initializer: KafkaOffsetsInitializer
                      ) -> KafkaSourceBuilder:
        raise NotSupportedError("set_unbounded(): an unbounded KafkaSource never stops; leave "
                                "set_bounded() out instead")

    def set_value_only_deserializer(self, deserialization_schema: Any) -> KafkaSourceBuilder:
        """SimpleStringSchema (text), ByteArraySchema (bytes), or a Json, Csv or Avro
        RowDeserializationSchema (rows of its type)."""
        if isinstance(deserialization_schema, RowFieldExtractorSchema):
            raise TypeError("RowFieldExtractorSchema serializes a KafkaSink's rows; a "
                            "KafkaSource reads messages with ByteArraySchema()")
        self._deserializer = _schema(deserialization_schema, "set_value_only_deserializer",
                                     "Json, Csv or Avro RowDeserializationSchema")
        return self

    def set_client_id_prefix(self, prefix: str) -> KafkaSourceBuilder:
        """Accepted: the source names its own clients."""
        return self

    def set_property(self, key: str, value: str) -> KafkaSourceBuilder:
        if key in _SOURCE_SETTINGS:
            self._settings[_SOURCE_SETTINGS[key]] = value
        else:
            self._properties[key] = value
        return self

    def set_properties(self, props: dict[str, str]) -> KafkaSourceBuilder:
        for key, value in props.items():
            self.set_property(key, value)
        return self

    def build(self) -> KafkaSource:
        if self._deserializer is None:
            raise ValueError("KafkaSource.builder(): set_value_only_deserializer(...) is "
                             "required, as in PyFlink")
        if "bootstrap_servers" not in self._settings:
            raise ValueError("KafkaSource.builder(): set_bootstrap_servers(...) is required")
        return KafkaSource(**self._settings, value_format=self._deserializer.kafka_format,
                           **_format_args(self._deserializer), properties=self._properties,
                           record_type=self._deserializer.record_type)


class KafkaRecordSerializationSchema:
    """A KafkaSink's topic and how it writes each record's value (and key)."""

    def __init__(self, topic: str, value_schema: Any, key_schema: Any = None) -> None:
        self.topic, self.value_schema, self.key_schema = topic, value_schema, key_schema

    def sink_args(self) -> dict[str, Any]:
        """The KafkaSink's keyword arguments its schemas stand for."""
        value, key = self.value_schema, self.key_schema
        return {"value_format": value.kafka_format, **_format_args(value),
                "value_field": getattr(value, "field_index", None),
                "key_format": None if key is None else key.kafka_format,
                "key_field": None if key is None else key.field_index}

    @staticmethod
    def builder() -> KafkaRecordSerializationSchemaBuilder:
        return KafkaRecordSerializationSchemaBuilder()


class KafkaRecordSerializationSchemaBuilder:
    def __init__(self) -> None:
        self._topic: str | None = None
        self._value_schema: Any = None
        self._key_schema: RowFieldExtractorSchema | None = None

    def set_topic(self, topic: str) -> KafkaRecordSerializationSchemaBuilder:
        self._topic = topic
        return self

    def set_topic_selector(self, topic_selector: object) -> KafkaRecordSerializationSchemaBuilder:
        raise NotSupportedError(message("pyflink.datastream.connectors.kafka.KafkaTopicSelector"))

    def set_key_serialization_schema(self, key_serialization_schema: object
                                     ) -> KafkaRecordSerializationSchemaBuilder:
        """A RowFieldExtractorSchema: the key is a field of each row."""
        if not isinstance(key_serialization_schema, RowFieldExtractorSchema):
            raise NotSupportedError("set_key_serialization_schema() takes a "
                                    "RowFieldExtractorSchema (the key is a field of each row); "
                                    "for keys of another form, give KafkaSink(..., "
                                    "key_format=...) records that are (key, value) pairs")
        self._key_schema = key_serialization_schema
        return self

    def set_value_serialization_schema(self, value_serialization_schema: Any
                                       ) -> KafkaRecordSerializationSchemaBuilder:
        """SimpleStringSchema (text), ByteArraySchema (bytes), RowFieldExtractorSchema (a
        field of each row), or a Json, Csv or Avro RowSerializationSchema (rows as JSON
        objects, CSV lines or Avro datums)."""
        self._value_schema = _schema(value_serialization_schema, "set_value_serialization_schema",
                                     "Json, Csv or Avro RowSerializationSchema")
        return self

    def build(self) -> KafkaRecordSerializationSchema:
        if self._topic is None or self._value_schema is None:
            raise ValueError("KafkaRecordSerializationSchema.builder(): set_topic(...) and "
                             "set_value_serialization_schema(...) are required")
        return KafkaRecordSerializationSchema(self._topic, self._value_schema, self._key_schema)


class KafkaSinkBuilder:
    """``KafkaSink.builder()``: PyFlink's setters, then ``build()``."""

    def __init__(self) -> None:
        self._bootstrap_servers: str | None = None
        self._record_serializer: KafkaRecordSerializationSchema | None = None
        self._delivery_guarantee = DeliveryGuarantee.NONE
        self._transactional_id_prefix: str | None = None
        self._properties: dict[str, str] = {}

    def set_bootstrap_servers(self, bootstrap_servers: str) -> KafkaSinkBuilder:
        self._bootstrap_servers = bootstrap_servers
        return self

    def set_delivery_guarantee(self, delivery_guarantee: DeliveryGuarantee) -> KafkaSinkBuilder:
        self._delivery_guarantee = DeliveryGuarantee(delivery_guarantee)
        return self

    def set_transactional_id_prefix(self, transactional_id_prefix: str) -> KafkaSinkBuilder:
        self._transactional_id_prefix = transactional_id_prefix
        return self

    def set_record_serializer(self, record_serializer: KafkaRecordSerializationSchema
                              ) -> KafkaSinkBuilder:
        self._record_serializer = record_serializer
        return self

    def set_property(self, key: str, value: str) -> KafkaSinkBuilder:
        if key == "bootstrap.servers":
            self._bootstrap_servers = value
        else:
            self._properties[key] = value
        return self

    def build(self) -> KafkaSink:
        if self._bootstrap_servers is None or self._record_serializer is None:
            raise ValueError("KafkaSink.builder(): set_bootstrap_servers(...) and "
                             "set_record_serializer(...) are required")
        serializer = self._record_serializer
        return KafkaSink(self._bootstrap_servers, serializer.topic, **serializer.sink_args(),
                         delivery_guarantee=self._delivery_guarantee,
                         transactional_id_prefix=self._transactional_id_prefix,
                         properties=self._properties)


FlinkKafkaConsumer = refused("pyflink.datastream.connectors.kafka.FlinkKafkaConsumer")
FlinkKafkaProducer = refused("pyflink.datastream.connectors.kafka.FlinkKafkaProducer")
Semantic = refused("pyflink.datastream.connectors.kafka.Semantic")
KafkaTopicPartition = refused("pyflink.datastream.connectors.kafka.KafkaTopicPartition")
KafkaOffsetResetStrategy = refused(
    "pyflink.datastream.connectors.kafka.KafkaOffsetResetStrategy")
KafkaTopicSelector = refused("pyflink.datastream.connectors.kafka.KafkaTopicSelector")

__all__ = ["FlinkKafkaConsumer", "FlinkKafkaProducer", "KafkaOffsetResetStrategy",
           "KafkaOffsetsInitializer", "KafkaRecordSerializationSchema",
           "KafkaRecordSerializationSchemaBuilder", "KafkaSink", "KafkaSinkBuilder",
           "KafkaSource", "KafkaSourceBuilder", "KafkaTopicPartition", "KafkaTopicSelector",
           "Semantic"]
