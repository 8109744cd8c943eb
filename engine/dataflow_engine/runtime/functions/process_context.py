"""The ``ctx`` of PyFlink's ProcessFunction and KeyedProcessFunction, and their TimerService."""

from __future__ import annotations

from enum import Enum
from typing import Any

from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.runtime.time.timer_service import InternalTimerService


class TimeDomain(Enum):
    """Which clock fired a timer (PyFlink's ``TimeDomain``)."""

    EVENT_TIME = 0
    PROCESSING_TIME = 1


class TimerService:
    """Timers of the current key (Flink's TimerService, in the VoidNamespace)."""

    __slots__ = ("_timers",)

    def __init__(self, timers: InternalTimerService) -> None:
        self._timers = timers

    def current_processing_time(self) -> int:
        return self._timers.current_processing_time()

    def current_watermark(self) -> int:
        return self._timers.current_watermark

    def register_processing_time_timer(self, timestamp: int) -> None:
        self._timers.register_processing_time_timer(None, timestamp)

    def register_event_time_timer(self, timestamp: int) -> None:
        self._timers.register_event_time_timer(None, timestamp)

    def delete_processing_time_timer(self, timestamp: int) -> None:
        self._timers.delete_processing_time_timer(None, timestamp)

    def delete_event_time_timer(self, timestamp: int) -> None:
        self._timers.delete_event_time_timer(None, timestamp)


class KeyedProcessContext:
    """``KeyedProcessFunction.Context``: the record's timestamp and key, and the timers."""

    __slots__ = ("_cell", "_timer_service", "current_key")

    def __init__(self, cell: ElementTimestamp, timer_service: TimerService) -> None:
        self._cell = cell
        self._timer_service = timer_service
        self.current_key: Any = None

    def timestamp(self) -> int | None:
        """Event time of the record (or the firing timer); None when it has none."""
        return self._cell.value

    def timer_service(self) -> TimerService:
        return self._timer_service

    def get_current_key(self) -> Any:
        return self.current_key


class OnTimerContext(KeyedProcessContext):
    """``KeyedProcessFunction.OnTimerContext``: also which clock fired the timer."""

    __slots__ = ("domain",)

    def __init__(self, cell: ElementTimestamp, timer_service: TimerService) -> None:
        super().__init__(cell, timer_service)
        self.domain = TimeDomain.EVENT_TIME

    def time_domain(self) -> TimeDomain:
        return self.domain
