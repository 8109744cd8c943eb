"""Java's DataGeneratorSource and RateLimiterStrategy (PyFlink has no data generator): the
spec's ``datagen`` operator."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dataflow_engine.api.datastream.connectors.base import Source
from dataflow_engine.api.function_refs import function_reference
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


class DataGeneratorSource(Source):
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
