"""Flink's InternalTimerService: event-time and processing-time timers per key and namespace.

A timer is ``(timestamp, key, namespace)`` and is registered once however often it is asked
for (Flink deduplicates so). Event-time timers fire in timestamp order when a watermark
passes them; processing-time timers when the subtask's clock does. Before a timer's callback
runs, the state backend is switched to the timer's key, so the callback sees that key's state.
Timers are plain data and are snapshotted per key group like keyed state.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from dataflow_engine.runtime.state.key_groups import KeyHash, assign_to_key_group, java_hash_code
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.processing_time import ProcessingTimeService


@dataclass(frozen=True, slots=True)
class InternalTimer:
    timestamp: int
    key: Any
    namespace: Any


class Triggerable(Protocol):
    def on_event_time(self, timer: InternalTimer) -> None: ...

    def on_processing_time(self, timer: InternalTimer) -> None: ...


class KeyContext(Protocol):
    current_key: Any

    def set_current_key(self, key: Any) -> None: ...


class _TimerQueue:
    """A heap with Flink's set semantics: one timer per (timestamp, key, namespace)."""

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, Any, Any]] = []
        self.live: set[tuple[int, Any, Any]] = set()
        self.sequence = itertools.count()

    def add(self, timestamp: int, key: Any, namespace: Any) -> bool:
        entry = (timestamp, key, namespace)
        if entry in self.live:
            return False
        self.live.add(entry)
        heapq.heappush(self.heap, (timestamp, next(self.sequence), key, namespace))
        return True

    def remove(self, timestamp: int, key: Any, namespace: Any) -> None:
        self.live.discard((timestamp, key, namespace))  # its heap entry is skipped later

    def peek(self) -> int | None:
        heap, live = self.heap, self.live
        while heap and (heap[0][0], heap[0][2], heap[0][3]) not in live:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def pop_due(self, time: int) -> InternalTimer | None:
        head = self.peek()
        if head is None or head > time:
            return None
        timestamp, _, key, namespace = heapq.heappop(self.heap)
        self.live.discard((timestamp, key, namespace))
        return InternalTimer(timestamp, key, namespace)


class InternalTimerService:
    def __init__(self, triggerable: Triggerable, keys: KeyContext,
                 processing_time: ProcessingTimeService) -> None:
        self.triggerable = triggerable
        self.keys = keys
        self.processing_time = processing_time
        self.event_timers = _TimerQueue()
        self.processing_timers = _TimerQueue()
        self.current_watermark = MIN_TIMESTAMP
        #: When the ProcessingTimeService will call back (MAX_TIMESTAMP: not registered).
        self._scheduled = MAX_TIMESTAMP

    def current_processing_time(self) -> int:
        return self.processing_time.get_current_processing_time()

    def register_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.event_timers.add(timestamp, self.keys.current_key, namespace)

    def delete_event_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.event_timers.remove(timestamp, self.keys.current_key, namespace)

    def register_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        if self.processing_timers.add(timestamp, self.keys.current_key, namespace):
            self._schedule()

    def delete_processing_time_timer(self, namespace: Any, timestamp: int) -> None:
        self.processing_timers.remove(timestamp, self.keys.current_key, namespace)

    def advance_watermark(self, watermark: int) -> None:
        """Fires every event-time timer at or before ``watermark``, earliest first (a timer
        registered by a callback fires too when it is due)."""
        self.current_watermark = watermark
        while (timer := self.event_timers.pop_due(watermark)) is not None:
            self.keys.set_current_key(timer.key)
            self.triggerable.on_event_time(timer)

    def fire_processing_time(self, time: int) -> None:
        while (timer := self.processing_timers.pop_due(time)) is not None:
            self.keys.set_current_key(timer.key)
            self.triggerable.on_processing_time(timer)

    def _schedule(self) -> None:
        head = self.processing_timers.peek()
        if head is not None and head < self._scheduled:
            self._scheduled = head
            self.processing_time.register_timer(head, self._on_processing_time)

    def _on_processing_time(self, due: int) -> None:
        if due == self._scheduled:
            self._scheduled = MAX_TIMESTAMP
        self.fire_processing_time(self.current_processing_time())
        self._schedule()

    def has_timers(self) -> bool:
        return self.event_timers.peek() is not None or self.processing_timers.peek() is not None

    def snapshot(self, max_parallelism: int, hash_key: KeyHash = java_hash_code
                 ) -> dict[int, list[tuple[str, int, Any, Any]]]:
        """Live timers by key group: ``(domain, timestamp, key, namespace)``."""
        groups: dict[int, list[tuple[str, int, Any, Any]]] = {}
        for domain, queue in (("event", self.event_timers), ("processing",
                                                              self.processing_timers)):
            for timestamp, key, namespace in queue.live:
                group = assign_to_key_group(key, max_parallelism, hash_key)
                groups.setdefault(group, []).append((domain, timestamp, key, namespace))
        return groups

    def restore(self, parts: Iterable[dict[int, list[tuple[str, int, Any, Any]]]],
                key_groups: range) -> None:
        for part in parts:
            for group, timers in part.items():
                if group not in key_groups:
                    continue
                for domain, timestamp, key, namespace in timers:
                    queue = self.event_timers if domain == "event" else self.processing_timers
                    queue.add(timestamp, key, namespace)
        self._schedule()
