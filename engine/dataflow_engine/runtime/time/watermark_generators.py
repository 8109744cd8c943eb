"""Flink's WatermarkGenerators and the WatermarkOutput they emit through.

A generator sees every event (``on_event``) and is asked periodically (``on_periodic_emit``,
every ``pipeline.auto-watermark-interval``); a punctuated generator emits from ``on_event``.
User generators follow the same two methods, with Java's names in snake case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark


class WatermarkOutput(Protocol):
    def emit_watermark(self, watermark: Watermark) -> None: ...

    def mark_idle(self) -> None: ...

    def mark_active(self) -> None: ...


class WatermarkGenerator(Protocol):
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None: ...

    def on_periodic_emit(self, output: WatermarkOutput) -> None: ...


class WatermarkEmitter:
    """The operator's WatermarkOutput: only rising watermarks leave, and an idle output turns
    active again when a watermark is emitted."""

    def __init__(self, emit: Callable[[int], None], emit_status: Callable[[bool], None]) -> None:
        self._emit = emit
        self._emit_status = emit_status
        self.current = MIN_TIMESTAMP
        self.idle = False

    def emit_watermark(self, watermark: Watermark) -> None:
        timestamp = watermark.timestamp
        if timestamp <= self.current:
            return
        self.current = timestamp
        self.mark_active()
        self._emit(timestamp)

    def mark_idle(self) -> None:
        if not self.idle:
            self.idle = True
            self._emit_status(True)

    def mark_active(self) -> None:
        if self.idle:
            self.idle = False
            self._emit_status(False)


class BoundedOutOfOrdernessWatermarks:
    """Watermark = highest timestamp seen - out-of-orderness - 1 (so a record at exactly the
    bound is still on time)."""

    def __init__(self, max_out_of_orderness: int) -> None:
        if max_out_of_orderness < 0:
            raise ValueError("maxOutOfOrderness must not be negative")
        self.out_of_orderness = max_out_of_orderness
        self.max_timestamp = MIN_TIMESTAMP + max_out_of_orderness + 1

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        if event_timestamp > self.max_timestamp:
            self.max_timestamp = event_timestamp

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        output.emit_watermark(Watermark(self.max_timestamp - self.out_of_orderness - 1))


class NoWatermarksGenerator:
    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        """Never emits."""

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        """Never emits."""


class WatermarksWithIdleness:
    """Marks the output idle when no event came for ``timeout`` ms of processing time."""

    def __init__(self, generator: WatermarkGenerator, timeout: int,
                 clock: Callable[[], int]) -> None:
        if timeout <= 0:
            raise ValueError("idleness must be positive")
        self.generator = generator
        self.timeout = timeout
        self.clock = clock
        self.last_event = clock()

    def on_event(self, event: Any, event_timestamp: int, output: WatermarkOutput) -> None:
        self.last_event = self.clock()
        output.mark_active()
        self.generator.on_event(event, event_timestamp, output)

    def __getstate__(self) -> dict[str, Any]:
        """Snapshotted without its clock (the restoring operator gives it its own)."""
        return {key: value for key, value in self.__dict__.items() if key != "clock"}

    def on_periodic_emit(self, output: WatermarkOutput) -> None:
        if self.clock() - self.last_event >= self.timeout:
            output.mark_idle()
        else:
            self.generator.on_periodic_emit(output)
