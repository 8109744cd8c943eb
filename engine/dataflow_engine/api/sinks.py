"""Sink descriptors for :meth:`DataStream.sink_to`: each names a sink operator and its args.

They only describe; the runtime builds the real sink from the spec, so a descriptor is the
same whether the job runs from Python or from a manifest.
"""

from __future__ import annotations

import os
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any, Literal

from dataflow_engine.api._unsupported import NotSupportedError, message
from dataflow_engine.api.common.serialization import Encoder
from dataflow_engine.spec.catalog import BUCKET_FORMAT_PATTERN, FileArgs, KafkaSinkArgs
from dataflow_engine.spec.model import OperatorType

if TYPE_CHECKING:
    from dataflow_engine.api.datastream.connectors.kafka import KafkaSinkBuilder


class Sink(ABC):
    """Base of the sink descriptors."""

    @property
    @abstractmethod
    def operator_type(self) -> OperatorType:
        """The spec operator type this sink becomes."""

    def args(self) -> dict[str, Any]:
        """The operator's ``args`` in the spec."""
        return {}


@dataclass(frozen=True)
class FileSink(Sink):
    """Writes one part file per subtask (and checkpoint) under ``path``, as text lines or JSON
    lines: ``<part_prefix>-<subtask>...<part_suffix>``, in a subdirectory per ``bucket_format``
    (a Java date-time pattern) when given. PyFlink's ``FileSink.for_row_format(...)`` builds
    one too."""

    path: str | os.PathLike[str]
    format: Literal["text", "json"] = "text"
    part_prefix: str = "part"
    part_suffix: str = ""
    bucket_format: str | None = None

    def __post_init__(self) -> None:
        if self.format not in ("text", "json"):
            raise ValueError(f"FileSink format must be 'text' or 'json', not {self.format!r}")
        FileArgs.model_validate(self.args())  # a bad prefix, suffix or bucket fails here

    @staticmethod
    def for_row_format(base_path: str | os.PathLike[str], encoder: Encoder) -> RowFormatBuilder:
        """PyFlink's way to make one: text lines, each record's toString, in buckets named
        by the hour (``yyyy-MM-dd--HH``) unless ``with_bucket_assigner`` says otherwise."""
        if not isinstance(encoder, Encoder):
            raise TypeError("for_row_format() takes Encoder.simple_string_encoder(), not "
                            f"{type(encoder).__name__}")
        return RowFormatBuilder(base_path)

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.FILE

    def args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": os.fspath(self.path)}
        optional = (("format", self.format, "text"), ("partPrefix", self.part_prefix, "part"),
                    ("partSuffix", self.part_suffix, ""),
                    ("bucketFormat", self.bucket_format, None))
        args.update((key, value) for key, value, default in optional if value != default)
        return args


class OutputFileConfig:
    """The prefix and suffix of a FileSink's part files."""

    def __init__(self, part_prefix: str, part_suffix: str) -> None:
        self.part_prefix, self.part_suffix = part_prefix, part_suffix

    def get_part_prefix(self) -> str:
        return self.part_prefix

    def get_part_suffix(self) -> str:
        return self.part_suffix

    @staticmethod
    def builder() -> OutputFileConfig.OutputFileConfigBuilder:
        return OutputFileConfig.OutputFileConfigBuilder()

    class OutputFileConfigBuilder:
        def __init__(self) -> None:
            self.part_prefix, self.part_suffix = "part", ""

        def with_part_prefix(self, prefix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_prefix = prefix
            return self

        def with_part_suffix(self, suffix: str) -> OutputFileConfig.OutputFileConfigBuilder:
            self.part_suffix = suffix
            return self

        def build(self) -> OutputFileConfig:
            return OutputFileConfig(self.part_prefix, self.part_suffix)


class RollingPolicy:
    """When a FileSink starts a new part file. Here every checkpoint (and the end of the
    input) rolls it, as Flink's OnCheckpointRollingPolicy does; the default policy's size and
    time limits are accepted and do not roll it sooner."""

    @staticmethod
    def default_rolling_policy(part_size: int = 1024 * 1024 * 128,
                               rollover_interval: int = 60 * 1000,
                               inactivity_interval: int = 60 * 1000) -> RollingPolicy:
        return RollingPolicy()

    @staticmethod
    def on_checkpoint_rolling_policy() -> RollingPolicy:
        return RollingPolicy()


class BucketAssigner:
    """Which subdirectory of the FileSink's path a part file goes to."""

    def __init__(self, bucket_format: str | None) -> None:
        self.bucket_format = bucket_format

    @staticmethod
    def base_path_bucket_assigner() -> BucketAssigner:
        """Directly under the path."""
        return BucketAssigner(None)

    @staticmethod
    def date_time_bucket_assigner(format_str: str = "yyyy-MM-dd--HH",
                                  timezone_id: str | None = None) -> BucketAssigner:
        """A subdirectory named by the time the part file opens, in ``format_str`` (Java's
        DateTimeFormatter letters yyyy, yy, MM, dd, HH, mm, ss and quoted text), in the
        executor's time zone."""
        if timezone_id is not None:
            raise NotSupportedError("date_time_bucket_assigner(): buckets are named in the "
                                    "executor's time zone (UTC in its pod); drop timezone_id")
        if not re.fullmatch(BUCKET_FORMAT_PATTERN, format_str):
            raise ValueError(f"bucket format {format_str!r}: use the letters yyyy, yy, MM, dd, "
                             "HH, mm and ss, '-', '_', '.', spaces and 'quoted text'")
        return BucketAssigner(format_str)


class RowFormatBuilder:
    """``FileSink.for_row_format(base_path, Encoder.simple_string_encoder())``."""

    def __init__(self, base_path: str | os.PathLike[str]) -> None:
        self._path = base_path
        self._config = OutputFileConfig("part", "")
        self._buckets = BucketAssigner.date_time_bucket_assigner()  # Flink's default

    def with_bucket_assigner(self, bucket_assigner: BucketAssigner) -> RowFormatBuilder:
        self._buckets = bucket_assigner
        return self

    def with_output_file_config(self, output_file_config: OutputFileConfig) -> RowFormatBuilder:
        self._config = output_file_config
        return self

    def with_rolling_policy(self, rolling_policy: RollingPolicy) -> RowFormatBuilder:
        if not isinstance(rolling_policy, RollingPolicy):
            raise TypeError(f"with_rolling_policy() takes a RollingPolicy, not "
                            f"{type(rolling_policy).__name__}")
        return self

    def with_bucket_check_interval(self, interval: int) -> RowFormatBuilder:
        """Accepted: part files roll at checkpoints, so there is nothing to check between."""
        return self

    def enable_compact(self, strategy: object, compactor: object) -> RowFormatBuilder:
        raise NotSupportedError(message(
            "pyflink.datastream.connectors.file_system.FileCompactStrategy"))

    def disable_compact(self) -> RowFormatBuilder:
        return self

    def build(self) -> FileSink:
        return FileSink(self._path, part_prefix=self._config.part_prefix,
                        part_suffix=self._config.part_suffix,
                        bucket_format=self._buckets.bucket_format)


@dataclass(frozen=True)
class CollectSink(Sink):
    """Brings the records back to the driver (into the job's result)."""

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.COLLECT


@dataclass(frozen=True)
class DiscardingSink(Sink):
    """Drops every record: for benchmarks and for jobs run for their side effects."""

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.DISCARD


class DeliveryGuarantee(Enum):
    """Flink's DeliveryGuarantee, by its names; the values are the spec's."""

    NONE = "none"
    AT_LEAST_ONCE = "at-least-once"
    EXACTLY_ONCE = "exactly-once"


class KafkaSink(Sink):
    """Flink's KafkaSink, set with keyword arguments rather than a builder (the spec's
    ``kafka_sink`` operator: formats stand for serialization schemas). With ``key_format``
    records are ``(key, value)`` pairs, or rows whose ``key_field`` is the key; ``csv`` holds
    the csv format's settings (the spec's camelCase keys), ``avro_schema`` the avro format's
    record schema (JSON)."""

    def __init__(self, bootstrap_servers: str, topic: str, *, value_format: str = "text",
                 key_format: str | None = None, key_field: int | None = None,
                 value_field: int | None = None, csv: dict[str, Any] | None = None,
                 avro_schema: str | None = None,
                 delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.NONE,
                 transactional_id_prefix: str | None = None,
                 properties: dict[str, str] | None = None) -> None:
        self._args = KafkaSinkArgs.model_validate({
            "bootstrapServers": bootstrap_servers, "topic": topic, "valueFormat": value_format,
            "keyFormat": key_format, "keyField": key_field, "valueField": value_field,
            "csv": csv, "avroSchema": avro_schema,
            "deliveryGuarantee": DeliveryGuarantee(delivery_guarantee).value,
            "transactionalIdPrefix": transactional_id_prefix, "properties": properties or {}})

    @staticmethod
    def builder() -> KafkaSinkBuilder:
        """PyFlink's way to make one: setters, then ``build()``."""
        from dataflow_engine.api.datastream.connectors.kafka import KafkaSinkBuilder

        return KafkaSinkBuilder()

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.KAFKA_SINK

    def args(self) -> dict[str, Any]:
        return self._args.model_dump(by_alias=True, exclude_defaults=True)
