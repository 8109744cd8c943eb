"""The ``ctx`` of PyFlink's ProcessFunction and KeyedProcessFunction, and their TimerService."""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from typing import Any

from dataflow_engine.runtime.state.timer_service import InternalTimerService
from dataflow_engine.runtime.time.elements import ElementTimestamp


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


class NonKeyedTimerService:
    """A ProcessFunction's TimerService: the current times, and no timers (they need keys)."""

    __slots__ = ("_clock", "_watermark")

    def __init__(self, clock: Callable[[], int], watermark: Callable[[], int]) -> None:
        self._clock = clock
        self._watermark = watermark

    def current_processing_time(self) -> int:
        return self._clock()

    def current_watermark(self) -> int:
        return self._watermark()

    def _no_timers(self, *args: Any) -> None:
        raise TypeError("Setting timers is only supported on a keyed stream: key_by() before "
                        "process(), with a KeyedProcessFunction")

    register_processing_time_timer = _no_timers
    register_event_time_timer = _no_timers
    delete_processing_time_timer = _no_timers
    delete_event_time_timer = _no_timers


class ProcessContext:
    """``ProcessFunction.Context``: the record's timestamp and the current times."""

    __slots__ = ("_cell", "_timer_service")

    def __init__(self, cell: ElementTimestamp, timer_service: NonKeyedTimerService) -> None:
        self._cell = cell
        self._timer_service = timer_service

    def timestamp(self) -> int | None:
        return self._cell.value

    def timer_service(self) -> NonKeyedTimerService:
        return self._timer_service


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
