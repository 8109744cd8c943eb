"""Sink descriptors for :meth:`DataStream.sink_to`: each names a sink operator and its args.

They only describe; the runtime builds the real sink from the spec, so a descriptor is the
same whether the job runs from Python or from a manifest.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal, NoReturn

from dataflow_engine.api._unsupported import NotSupportedError, message
from dataflow_engine.spec.catalog import KafkaSinkArgs
from dataflow_engine.spec.model import OperatorType


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
    """Writes one part file per subtask under ``path``, as text lines or JSON lines."""

    path: str | os.PathLike[str]
    format: Literal["text", "json"] = "text"

    def __post_init__(self) -> None:
        if self.format not in ("text", "json"):
            raise ValueError(f"FileSink format must be 'text' or 'json', not {self.format!r}")

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.FILE

    def args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": os.fspath(self.path)}
        if self.format != "text":
            args["format"] = self.format
        return args


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
    records are ``(key, value)`` pairs."""

    def __init__(self, bootstrap_servers: str, topic: str, *, value_format: str = "text",
                 key_format: str | None = None,
                 delivery_guarantee: DeliveryGuarantee = DeliveryGuarantee.NONE,
                 transactional_id_prefix: str | None = None,
                 properties: dict[str, str] | None = None) -> None:
        self._args = KafkaSinkArgs.model_validate({
            "bootstrapServers": bootstrap_servers, "topic": topic, "valueFormat": value_format,
            "keyFormat": key_format,
            "deliveryGuarantee": DeliveryGuarantee(delivery_guarantee).value,
            "transactionalIdPrefix": transactional_id_prefix, "properties": properties or {}})

    @staticmethod
    def builder() -> NoReturn:
        """PyFlink's way to make one: refused, saying which arguments to give instead."""
        raise NotSupportedError(message("pyflink.datastream.connectors.kafka.KafkaSinkBuilder"))

    @property
    def operator_type(self) -> OperatorType:
        return OperatorType.KAFKA_SINK

    def args(self) -> dict[str, Any]:
        return self._args.model_dump(by_alias=True, exclude_defaults=True)
