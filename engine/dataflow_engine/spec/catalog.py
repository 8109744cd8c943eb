"""The operator catalog: what each ``type`` is in Flink's terms and which arguments it takes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dataflow_engine.spec.model import DURATION_PATTERN, OperatorType
from dataflow_engine.spec.secret_refs import SettingValue
from dataflow_engine.types.avro_form import AvroCodec, AvroSchemaError, avro_codec
from dataflow_engine.types.csv_form import CsvOptions


class Category(StrEnum):
    SOURCE = "SOURCE"
    TRANSFORMATION = "TRANSFORMATION"
    #: Virtual, like Flink's UnionTransformation: folded into the consumers' StreamEdges.
    UNION = "UNION"
    SINK = "SINK"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class NoArgs(_Args):
    pass


class CollectionArgs(_Args):
    elements: list[Any] = Field(default_factory=list,
                                description="The records, split evenly across subtasks.")
    tuples: bool = Field(default=False, description="The records are tuples (JSON and YAML "
                         "write them as lists); the source turns each back into a tuple.")
    shipped_elements: str | None = Field(
        default=None, alias="shippedElements",
        description="Set by the Python API for elements a manifest cannot hold (Python objects "
        "such as a Row or a Decimal, with no declared type): a reference to them in the "
        "program, which runs the job itself.")

    @model_validator(mode="after")
    def _one_kind_of_elements(self) -> CollectionArgs:
        if self.shipped_elements is not None and (self.elements or self.tuples):
            raise ValueError("give 'elements' or 'shippedElements', not both")
        return self


class SequenceArgs(_Args):
    from_: int = Field(alias="from", description="First number (inclusive).")
    to: int = Field(description="Last number (inclusive).")

    @model_validator(mode="after")
    def _ordered(self) -> SequenceArgs:
        if self.to < self.from_:
            raise ValueError("'to' must not be less than 'from'")
        return self


class TextArgs(_Args):
    #: Only the camelCase names: the runtime reads them as written.
    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    path: str | list[str] = Field(description="A file, a directory or a glob, or a list of them.")
    monitor_interval: str | None = Field(
        default=None, alias="monitorInterval", pattern=DURATION_PATTERN,
        description="Look for new files this often (Flink's FileSource monitorContinuously): "
        "the source is unbounded and reads every new file once, whole, so a file must be "
        "complete when it appears (moved in, or written under a name starting with '.' or "
        "'_' and renamed). Unset: the files there when the job starts, then it ends.")


class DatagenArgs(_Args):
    #: Only the camelCase names: the runtime reads them as written.
    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    rows_per_second: float = Field(default=1000.0, gt=0, le=1e8, alias="rowsPerSecond",
                                   description="Rows the source emits per second, in all.")
    number_of_rows: int | None = Field(
        default=None, ge=0, alias="numberOfRows",
        description="Stop after this many rows (a bounded source); unset: unbounded.")
    seed: int = Field(default=0, ge=0, lt=1 << 63,
                      description="Seed of the default records' pseudo-random values.")


KafkaKeyFormat = Literal["raw", "text", "json"]
#: csv and avro are a row's fields: a value's formats only, of records that are those rows.
KafkaFormat = Literal["raw", "text", "json", "csv", "avro"]
ROW_FORMATS = ("csv", "avro")


class CsvFormatArgs(_Args):
    """Settings of the Kafka connectors' csv format (Flink's CSV row schemas)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    field_delimiter: str = Field(default=",", alias="fieldDelimiter", min_length=1,
                                 max_length=1, description="The character between fields.")
    quote_character: str = Field(
        default='"', alias="quoteCharacter", max_length=1,
        description="Quotes a field holding the delimiter, itself or a line break; \"\": "
        "no quoting.")
    escape_character: str = Field(default="", alias="escapeCharacter", max_length=1,
                                  description="Escapes a special character in a field; "
                                  "\"\": none (a quote inside quotes is doubled).")
    null_literal: str | None = Field(
        default=None, alias="nullLiteral",
        description="The text of a null field, both ways; unset: a null is written as an "
        "empty field, and an empty field reads as an empty STRING (null for other types).")
    line_delimiter: Literal["\n", "\r", "\r\n", ""] = Field(
        default="\n", alias="lineDelimiter",
        description="What ends each message a sink writes (a source ignores a trailing one).")

    @model_validator(mode="after")
    def _distinct_characters(self) -> CsvFormatArgs:
        special = [c for c in (self.field_delimiter, self.quote_character,
                               self.escape_character) if c]
        if len(set(special)) != len(special):
            raise ValueError("fieldDelimiter, quoteCharacter and escapeCharacter must differ")
        return self

    def options(self) -> CsvOptions:
        return CsvOptions(field_delimiter=self.field_delimiter,
                          quote_character=self.quote_character,
                          escape_character=self.escape_character,
                          null_literal=self.null_literal, line_delimiter=self.line_delimiter)


class _KafkaArgs(_Args):
    """What Flink's KafkaSource and KafkaSink share: the brokers and the client settings."""

    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    bootstrap_servers: str = Field(alias="bootstrapServers", min_length=1,
                                   description="host:port[,host:port...] of the brokers.")
    properties: dict[str, SettingValue] = Field(
        default_factory=dict, description="More Kafka client settings (librdkafka names), "
        "e.g. security.protocol; a value may be {secretKeyRef: {name, key}} (a key of a "
        "Secret in the job's namespace, e.g. sasl.password).")
    csv: CsvFormatArgs | None = Field(
        default=None, description="Settings of the csv format, when valueFormat is csv; "
        "unset: Flink's defaults (',' between fields, '\"' quotes).")
    avro_schema: str | None = Field(
        default=None, alias="avroSchema", min_length=1,
        description="valueFormat avro: the Avro schema (JSON) of a message, a record, whose "
        "fields are the rows' by position.")

    @model_validator(mode="after")
    def _row_formats_are_the_records(self) -> _KafkaArgs:
        value_format = getattr(self, "value_format", None)
        if self.csv is not None and value_format != "csv":
            raise ValueError("'csv' settings go with valueFormat: csv")
        if (self.avro_schema is not None) != (value_format == "avro"):
            raise ValueError("valueFormat avro goes with avroSchema, and avroSchema with it")
        if self.avro_schema is not None:
            try:
                avro_codec(self.avro_schema)
            except AvroSchemaError as error:
                raise ValueError(f"avroSchema: {error}") from None
        if value_format in ROW_FORMATS and getattr(self, "key_format", None) is not None and (
                getattr(self, "key_field", None) is None):
            raise ValueError(f"valueFormat {value_format} reads and writes the records "
                             "themselves (rows), not (key, value) pairs: unset keyFormat")
        if value_format in ROW_FORMATS and getattr(self, "value_field", None) is not None:
            raise ValueError(f"valueFormat {value_format} writes whole rows: unset valueField")
        return self

    def csv_options(self) -> CsvOptions:
        return CsvOptions() if self.csv is None else self.csv.options()

    def avro(self) -> AvroCodec:
        """valueFormat avro's codec (validation read the schema already)."""
        assert self.avro_schema is not None
        return avro_codec(self.avro_schema)


class KafkaSourceArgs(_KafkaArgs):
    """Flink's KafkaSource, read by the executors with the Kafka client of the image."""

    topics: list[Annotated[str, Field(min_length=1, max_length=249)]] | None = Field(
        default=None, min_length=1, description="Topics to read (or topicPattern).")
    topic_pattern: str | None = Field(default=None, alias="topicPattern", min_length=1,
                                      description="A regular expression of topics to read, "
                                      "new matching topics included as they appear.")
    group_id: str | None = Field(default=None, alias="groupId", min_length=1,
                                 description="Consumer group whose committed offsets "
                                 "startingOffsets: committed starts from.")
    starting_offsets: Literal["earliest", "latest", "committed", "timestamp"] = Field(
        default="earliest", alias="startingOffsets",
        description="Where a partition is read from the first time (a checkpoint's position "
        "wins): earliest, latest, committed (the group's, else earliest) or timestamp.")
    starting_timestamp: int | None = Field(
        default=None, alias="startingTimestamp", ge=0,
        description="startingOffsets: timestamp: the first record at or after this epoch ms.")
    stopping_offsets: Literal["latest"] | None = Field(
        default=None, alias="stoppingOffsets",
        description="latest: read up to the end offsets of when the job started, then end "
        "(a bounded source); unset: unbounded.")
    key_format: KafkaKeyFormat | None = Field(default=None, alias="keyFormat",
                                           description="Records are (key, value) in this "
                                           "format; unset: records are the values alone.")
    value_format: KafkaFormat = Field(default="text", alias="valueFormat",
                                      description="raw (bytes), text (UTF-8), json (an "
                                      "object: a row by the operator's outputType), csv (a "
                                      "line: a row of the outputType, which must be one) or "
                                      "avro (a datum of avroSchema: a row of its type).")

    @model_validator(mode="after")
    def _one_way_to_name_topics(self) -> KafkaSourceArgs:
        if (self.topics is None) == (self.topic_pattern is None):
            raise ValueError("give either 'topics' or 'topicPattern'")
        if (self.starting_offsets == "timestamp") != (self.starting_timestamp is not None):
            raise ValueError("startingOffsets: timestamp goes with startingTimestamp")
        if self.topic_pattern is not None:
            try:
                re.compile(self.topic_pattern)
            except re.error as error:
                raise ValueError(f"topicPattern is not a regular expression: {error}") from None
        return self


DeliveryGuarantee = Literal["none", "at-least-once", "exactly-once"]


class KafkaSinkArgs(_KafkaArgs):
    """Flink's KafkaSink: records are produced to one topic with Flink's delivery guarantees."""

    topic: str = Field(min_length=1, max_length=249, description="The topic written to.")
    key_format: KafkaKeyFormat | None = Field(
        default=None, alias="keyFormat",
        description="Records are (key, value) pairs whose key is written in this format; "
        "unset: records are the values, written without a key.")
    value_format: KafkaFormat = Field(default="text", alias="valueFormat",
                                      description="raw (bytes or text), text (str() in UTF-8), "
                                      "json, csv (the records are rows; a line of their "
                                      "fields) or avro (rows, as datums of avroSchema).")
    key_field: int | None = Field(
        default=None, alias="keyField", ge=0,
        description="Records are rows whose field of this index is the message key, in "
        "keyFormat (Flink's RowFieldExtractorSchema with raw); unset: see keyFormat.")
    value_field: int | None = Field(
        default=None, alias="valueField", ge=0,
        description="The message value is this field of each row, in valueFormat (Flink's "
        "RowFieldExtractorSchema with raw); unset: the record (or a pair's value).")
    delivery_guarantee: DeliveryGuarantee = Field(
        default="none", alias="deliveryGuarantee",
        description="none (Flink's default: records may be lost or duplicated on failure), "
        "at-least-once (every epoch's records are acknowledged before it completes) or "
        "exactly-once (records become visible, in a Kafka transaction, when the checkpoint "
        "covering them completes; readers use isolation.level=read_committed).")
    transactional_id_prefix: str | None = Field(
        default=None, alias="transactionalIdPrefix", min_length=1, max_length=200,
        description="exactly-once: the Kafka transactional.id of the sink (required, as in "
        "Flink; unique per sink across jobs sharing the brokers). It also names the consumer "
        "group whose offset records the last checkpoint published.")

    @model_validator(mode="after")
    def _exactly_once_needs_a_transactional_id(self) -> KafkaSinkArgs:
        if self.delivery_guarantee == "exactly-once" and self.transactional_id_prefix is None:
            raise ValueError("deliveryGuarantee: exactly-once needs a transactionalIdPrefix")
        if self.key_field is not None and self.key_format is None:
            raise ValueError("keyField goes with keyFormat, the key's format")
        if self.value_field is not None and self.key_format is not None and (
                self.key_field is None):
            raise ValueError("with valueField the records are rows: the key is a field too, "
                             "give keyField (or unset keyFormat)")
        return self

    @property
    def row_fields(self) -> bool:
        """Whether the key or the value is a field of each (row) record."""
        return self.key_field is not None or self.value_field is not None


class AggregationArgs(_Args):
    field: Annotated[int, Field(ge=0)] | str = Field(
        description="Tuple index or field name to aggregate."
    )


class PrintArgs(_Args):
    identifier: str | None = Field(default=None, description="Prefix of every printed line.")


#: A part file's prefix or suffix: a piece of a file name.
_NAME_PIECE = r"^[^/\\\x00]*$"
#: The letters of a Java DateTimeFormatter pattern a bucket's name may use (and literals).
BUCKET_FORMAT_PATTERN = r"^(?:yyyy|yy|MM|dd|HH|mm|ss|'[^'/]*'|[-_. ])+$"


class FileArgs(_Args):
    #: Only the camelCase names: the runtime reads them as written.
    model_config = ConfigDict(extra="forbid", populate_by_name=False)

    path: str = Field(description="Output directory; one part file per subtask.")
    format: Literal["json", "text"] = "text"
    part_prefix: str = Field(
        default="part", alias="partPrefix", min_length=1, max_length=100, pattern=_NAME_PIECE,
        description="Part files are named <partPrefix>-<subtask>[-<epoch>-<id>]<partSuffix> "
        "(Flink's OutputFileConfig).")
    part_suffix: str = Field(default="", alias="partSuffix", max_length=100,
                             pattern=_NAME_PIECE, description="See partPrefix.")
    bucket_format: str | None = Field(
        default=None, alias="bucketFormat", max_length=100, pattern=BUCKET_FORMAT_PATTERN,
        description="Write part files into a subdirectory named by the time the part file "
        "opens, in this Java DateTimeFormatter pattern (Flink's DateTimeBucketAssigner, e.g. "
        "yyyy-MM-dd--HH), in the executor's time zone (UTC in its pod). Unset: directly "
        "under path (BasePathBucketAssigner).")


@dataclass(frozen=True)
class OperatorKind:
    """Static facts about an operator type."""

    operator_type: OperatorType
    category: Category
    #: Flink's default operator name, used for chain names such as ``Flat Map -> Filter``.
    display_name: str
    #: Needs a keyed input (hash-partitioned by ``keyBy``), like Flink's KeyedStream operators.
    keyed: bool = False
    #: Keyed when its input is (``process``: Flink's KeyedProcessOperator after keyBy, its
    #: ProcessOperator otherwise); then named ``keyed_display_name``.
    keyed_display_name: str | None = None
    function: Literal["required", "optional", "forbidden"] = "forbidden"
    args: type[_Args] = NoArgs
    #: Inputs it takes: 2 for Flink's TwoInputStreamOperators (``connect``), whose first
    #: input spec is input 1 and second input 2 (each may be a union).
    inputs: int = 1
    #: Input 2 is a broadcast stream (Flink's BroadcastConnectedStream): it must be broadcast
    #: partitioned, and keyed-ness is input 1's.
    broadcast_input: bool = False
    #: A non-parallel source (Flink's ``fromData``/``fromCollection``): parallelism 1 whatever
    #: the job's default, and an error if set above 1.
    non_parallel: bool = False
    #: A source read in epochs as its input arrives (rate-limited or unbounded), whatever its
    #: arguments; see :func:`is_continuous` and :func:`is_bounded`.
    continuous: bool = False

    @property
    def is_source(self) -> bool:
        return self.category is Category.SOURCE

    @property
    def is_sink(self) -> bool:
        return self.category is Category.SINK


_T = OperatorType
CATALOG: dict[OperatorType, OperatorKind] = {
    k.operator_type: k
    for k in (
        OperatorKind(_T.COLLECTION, Category.SOURCE, "Source: Collection Source",
                     args=CollectionArgs, non_parallel=True),
        OperatorKind(_T.SEQUENCE, Category.SOURCE, "Source: Sequence Source", args=SequenceArgs),
        OperatorKind(_T.TEXT, Category.SOURCE, "Source: Text File Source", args=TextArgs),
        OperatorKind(_T.DATAGEN, Category.SOURCE, "Source: Data Generator Source",
                     function="optional", args=DatagenArgs, continuous=True),
        OperatorKind(_T.KAFKA, Category.SOURCE, "Source: Kafka Source", args=KafkaSourceArgs,
                     continuous=True),
        OperatorKind(_T.MAP, Category.TRANSFORMATION, "Map", function="required"),
        OperatorKind(_T.FLAT_MAP, Category.TRANSFORMATION, "Flat Map", function="required"),
        OperatorKind(_T.FILTER, Category.TRANSFORMATION, "Filter", function="required"),
        OperatorKind(_T.REDUCE, Category.TRANSFORMATION, "Keyed Reduce", keyed=True,
                     function="required"),
        OperatorKind(_T.SUM, Category.TRANSFORMATION, "Keyed Aggregation", keyed=True,
                     args=AggregationArgs),
        OperatorKind(_T.MIN, Category.TRANSFORMATION, "Keyed Aggregation", keyed=True,
                     args=AggregationArgs),
        OperatorKind(_T.MAX, Category.TRANSFORMATION, "Keyed Aggregation", keyed=True,
                     args=AggregationArgs),
        OperatorKind(_T.PROCESS, Category.TRANSFORMATION, "Process", function="required",
                     keyed_display_name="KeyedProcess"),
        OperatorKind(_T.CO_MAP, Category.TRANSFORMATION, "Co-Map", function="required",
                     inputs=2),
        OperatorKind(_T.CO_FLAT_MAP, Category.TRANSFORMATION, "Co-Flat Map",
                     function="required", inputs=2),
        OperatorKind(_T.CO_PROCESS, Category.TRANSFORMATION, "Co-Process", function="required",
                     inputs=2, keyed_display_name="Co-Keyed-Process"),
        OperatorKind(_T.WINDOW_JOIN, Category.TRANSFORMATION, "Window", keyed=True,
                     function="required", inputs=2),
        OperatorKind(_T.INTERVAL_JOIN, Category.TRANSFORMATION, "Interval Join", keyed=True,
                     function="required", inputs=2),
        OperatorKind(_T.BROADCAST_PROCESS, Category.TRANSFORMATION, "Co-Process-Broadcast",
                     function="required", inputs=2, broadcast_input=True,
                     keyed_display_name="Co-Process-Broadcast-Keyed"),
        OperatorKind(_T.TIMESTAMPS, Category.TRANSFORMATION, "Timestamps/Watermarks",
                     function="optional"),
        OperatorKind(_T.WINDOW, Category.TRANSFORMATION, "Window", keyed=True,
                     function="required"),
        OperatorKind(_T.WINDOW_ALL, Category.TRANSFORMATION, "Window", function="required",
                     non_parallel=True),
        OperatorKind(_T.UNION, Category.UNION, "Union"),
        OperatorKind(_T.PRINT, Category.SINK, "Sink: Print to Std. Out", args=PrintArgs),
        OperatorKind(_T.FILE, Category.SINK, "Sink: File Sink", args=FileArgs),
        OperatorKind(_T.KAFKA_SINK, Category.SINK, "Sink: Kafka Sink", args=KafkaSinkArgs),
        OperatorKind(_T.COLLECT, Category.SINK, "Sink: Collect Sink"),
        OperatorKind(_T.DISCARD, Category.SINK, "Sink: Discarding Sink"),
    )
}


def kind_of(operator_type: OperatorType) -> OperatorKind:
    return CATALOG[operator_type]


def is_bounded(operator_type: OperatorType, args: dict[str, Any]) -> bool:
    """Whether a source ends by itself (Flink's ``Boundedness.BOUNDED``)."""
    if operator_type is OperatorType.DATAGEN:
        return args.get("numberOfRows") is not None
    if operator_type is OperatorType.KAFKA:
        return args.get("stoppingOffsets") is not None
    if operator_type is OperatorType.TEXT:
        return args.get("monitorInterval") is None
    return True


def is_continuous(operator_type: OperatorType, args: dict[str, Any]) -> bool:
    """A source whose input arrives over time: read in epochs in a STREAMING job."""
    return kind_of(operator_type).continuous or not is_bounded(operator_type, args)


def default_parallelism(operator_type: OperatorType, job_parallelism: int) -> int:
    """An operator's parallelism when it sets none: 1 for a non-parallel source."""
    return 1 if kind_of(operator_type).non_parallel else job_parallelism
