"""Flink's ProcessingTimeService for one subtask: callbacks due at wall-clock times.

A Flink task runs processing-time callbacks in its mailbox between records; here the
StreamTask's loop does the same, asking :meth:`fire_due` between records while anything is
registered. Times are epoch milliseconds, so processing-time windows align as in Flink.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP
from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.runtime.time.split_watermarks import SourceSplits

ProcessingTimeCallback = Callable[[int], None]


def wall_clock_millis() -> int:
    return time.time_ns() // 1_000_000


class ProcessingTimeService:
    def __init__(self, clock: Callable[[], int] = wall_clock_millis) -> None:
        self.clock = clock
        self._timers: list[tuple[int, int, ProcessingTimeCallback]] = []
        self._sequence = itertools.count()
        #: When the earliest callback is due (MAX_TIMESTAMP: none is registered).
        self.next_due = MAX_TIMESTAMP

    def get_current_processing_time(self) -> int:
        return self.clock()

    def register_timer(self, due: int, callback: ProcessingTimeCallback) -> None:
        heapq.heappush(self._timers, (due, next(self._sequence), callback))
        self.next_due = self._timers[0][0]

    def fire_due(self) -> None:
        """Runs every callback due by now, earliest first (callbacks may register more)."""
        timers = self._timers
        now = self.clock()
        while timers and timers[0][0] <= now:
            due, _, callback = heapq.heappop(timers)
            self.next_due = timers[0][0] if timers else MAX_TIMESTAMP
            callback(due)
        self.next_due = timers[0][0] if timers else MAX_TIMESTAMP

    def clear(self) -> None:
        """End of input in STREAMING mode: pending callbacks never run (as in Flink)."""
        self._timers.clear()
        self.next_due = MAX_TIMESTAMP


@dataclass
class TaskTime:
    """What the operators of one subtask share about time."""

    #: True in STREAMING mode; in BATCH mode no watermark flows and nothing is late.
    streaming: bool
    #: Flink's ``pipeline.auto-watermark-interval`` (ms; 0 disables periodic watermarks).
    auto_watermark_interval: int = 200
    timestamp: ElementTimestamp = field(default_factory=ElementTimestamp)
    processing_time: ProcessingTimeService = field(default_factory=ProcessingTimeService)
    #: Set when the chain's head reads splits whose watermarks are made per split.
    source_splits: SourceSplits | None = None
