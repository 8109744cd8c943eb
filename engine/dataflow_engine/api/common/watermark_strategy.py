"""PyFlink's ``WatermarkStrategy`` and ``TimestampAssigner``.

A strategy is data (the spec's ``watermarkStrategy``) plus the assigner function, which
becomes the 'timestamps' operator's function. ``for_generator`` is Java's ``forGenerator``:
PyFlink lacks it, and a punctuated generator is the way to put watermarks at exact points.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from dataflow_engine.api._unsupported import refused
from dataflow_engine.runtime.time.durations import to_millis
from dataflow_engine.spec.model import WatermarkStrategyType, duration_text


class TimestampAssigner:
    """Extracts a record's event time (epoch ms); ``record_timestamp`` is the one it has."""

    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        raise NotImplementedError


@dataclass(frozen=True)
class WatermarkStrategy:
    type: WatermarkStrategyType
    max_out_of_orderness: int | None = None
    idleness: int | None = None
    generator: object | None = None
    timestamp_assigner: object | None = None

    @staticmethod
    def for_monotonous_timestamps() -> WatermarkStrategy:
        """Timestamps only rise: the watermark is the highest one seen, minus 1 ms."""
        return WatermarkStrategy(WatermarkStrategyType.FOR_MONOTONOUS_TIMESTAMPS)

    @staticmethod
    def for_bounded_out_of_orderness(max_out_of_orderness: object) -> WatermarkStrategy:
        """Records arrive at most ``max_out_of_orderness`` (a Duration) behind the highest."""
        millis = to_millis(max_out_of_orderness, "max_out_of_orderness")
        if millis < 0:
            raise ValueError("max_out_of_orderness must not be negative")
        return WatermarkStrategy(WatermarkStrategyType.FOR_BOUNDED_OUT_OF_ORDERNESS, millis)

    @staticmethod
    def no_watermarks() -> WatermarkStrategy:
        return WatermarkStrategy(WatermarkStrategyType.NO_WATERMARKS)

    @staticmethod
    def for_generator(generator: object) -> WatermarkStrategy:
        """A WatermarkGenerator class (or factory of no arguments): ``on_event(event,
        timestamp, output)`` and ``on_periodic_emit(output)``, emitting via
        ``output.emit_watermark(Watermark(ts))``."""
        if not callable(generator):
            raise TypeError("for_generator() takes a WatermarkGenerator class or a factory")
        return WatermarkStrategy(WatermarkStrategyType.FOR_GENERATOR, generator=generator)

    def with_timestamp_assigner(self, timestamp_assigner: object) -> WatermarkStrategy:
        """A TimestampAssigner, or a callable ``(value, record_timestamp) -> int``."""
        if not (callable(timestamp_assigner) or hasattr(timestamp_assigner, "extract_timestamp")):
            raise TypeError("with_timestamp_assigner() takes a TimestampAssigner or a callable "
                            f"(value, record_timestamp), not {type(timestamp_assigner).__name__}")
        return replace(self, timestamp_assigner=timestamp_assigner)

    def with_idleness(self, idle_timeout: object) -> WatermarkStrategy:
        millis = to_millis(idle_timeout, "idle_timeout")
        if millis <= 0:
            raise ValueError("idle_timeout must be positive")
        return replace(self, idleness=millis)

    def with_watermark_alignment(self, *args: Any, **kwargs: Any) -> WatermarkStrategy:
        raise NotImplementedError("watermark alignment is not supported by this engine")

    def spec_data(self, generator_reference: str | None) -> dict[str, Any]:
        """The spec's ``watermarkStrategy`` (camelCase), the generator given as a reference."""
        data: dict[str, Any] = {"type": self.type.value}
        if self.max_out_of_orderness is not None:
            data["maxOutOfOrderness"] = duration_text(self.max_out_of_orderness)
        if self.idleness is not None:
            data["idleness"] = duration_text(self.idleness)
        if generator_reference is not None:
            data["generator"] = generator_reference
        return data


AssignerWithPeriodicWatermarksWrapper = refused(
    "pyflink.common.watermark_strategy.AssignerWithPeriodicWatermarksWrapper")
