"""Sources for ``env.from_source``, named as Flink's connectors name them."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from dataflow_engine.api.common.time import Duration
from dataflow_engine.api.function_refs import function_reference
from dataflow_engine.spec.catalog import KafkaSourceArgs
from dataflow_engine.spec.model import OperatorType


@dataclass(frozen=True)
class RateLimiterStrategy:
    """How fast a source emits (Flink's ``RateLimiterStrategy``)."""

    rows_per_second: float

    @staticmethod
    def per_second(records_per_second: float) -> RateLimiterStrategy:
        if isinstance(records_per_second, bool) or not records_per_second > 0:
            raise ValueError(f"records per second must be positive, not {records_per_second!r}")
        return RateLimiterStrategy(float(records_per_second))


class DataGeneratorSource:
    """Flink's DataGeneratorSource: record ``i`` is ``generator_function(i)`` (a
    GeneratorFunction's ``map``, or any function of the index), for ``count`` records (None:
    unbounded) at the rate limiter's pace. Without a function, records are ``(i, value)``
    with a pseudo-random value from ``seed``."""

    def __init__(self, generator_function: Any = None, count: int | None = None,
                 rate_limiter_strategy: RateLimiterStrategy | None = None,
                 type_info: object = None, seed: int = 0) -> None:
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 0):
            raise ValueError(f"count must be a non-negative int or None, not {count!r}")
        self.function = (function_reference(generator_function, OperatorType.DATAGEN,
                                            "generator function")
                         if generator_function is not None else None)
        self.count = count
        self.rate = rate_limiter_strategy or RateLimiterStrategy.per_second(1000)
        self.seed = seed

    def spec_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"rowsPerSecond": self.rate.rows_per_second, "seed": self.seed}
        if self.count is not None:
            args["numberOfRows"] = self.count
        return args


class FileSource:
    """Flink's FileSource of text lines (``forRecordStreamFormat`` with a TextLineInputFormat)
    over files, directories or globs, with keyword arguments rather than a builder (the spec's
    ``text`` operator). ``monitor_interval`` is ``monitorContinuously``'s: the source looks for
    new files that often, reads each once and never ends; without it, it reads the files there
    when the job starts and ends."""

    def __init__(self, *paths: str | os.PathLike[str],
                 monitor_interval: Duration | None = None) -> None:
        if not paths:
            raise ValueError("FileSource needs at least one path")
        if monitor_interval is not None and monitor_interval.millis <= 0:
            raise ValueError(f"monitor_interval must be positive, not {monitor_interval}")
        self.paths = [os.fspath(path) for path in paths]
        self.monitor_interval = monitor_interval

    def spec_args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"path": self.paths[0] if len(self.paths) == 1 else self.paths}
        if self.monitor_interval is not None:
            args["monitorInterval"] = f"{self.monitor_interval.millis}ms"
        return args


class KafkaSource:
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

    def spec_args(self) -> dict[str, Any]:
        return self.args.model_dump(by_alias=True, exclude_defaults=True)
