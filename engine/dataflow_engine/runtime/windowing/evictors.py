"""Flink's evictors: drop buffered elements of a window before or after its function runs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Protocol

from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.windowing._params import (
    description_type,
    flag,
    positive,
    positive_count,
    read_description,
)
from dataflow_engine.runtime.windowing.windows import Window

#: A window's buffer: ``(timestamp, value)`` pairs in arrival order; None means no timestamp.
TimestampedElements = list[tuple[int | None, Any]]


class EvictorContext(Protocol):
    """The clocks an evictor may consult."""

    def get_current_processing_time(self) -> int: ...

    def get_current_watermark(self) -> int: ...


class Evictor(ABC):
    """Removes elements from ``elements`` in place; ``size`` is how many it holds."""

    @abstractmethod
    def evict_before(self, elements: TimestampedElements, size: int, window: Window,
                     evictor_context: EvictorContext) -> None: ...

    @abstractmethod
    def evict_after(self, elements: TimestampedElements, size: int, window: Window,
                    evictor_context: EvictorContext) -> None: ...

    def describe(self) -> dict[str, Any]:
        """Plain data for a manifest; only the built-in evictors can be described."""
        raise TypeError(f"evictor {self} cannot be described as plain data")


@dataclass(frozen=True)
class _WhenEvicting(Evictor):
    """Runs ``_evict`` either before the window function or after it, as configured."""

    do_evict_after: bool

    def evict_before(self, elements: TimestampedElements, size: int, window: Window,
                     evictor_context: EvictorContext) -> None:
        if not self.do_evict_after:
            self._evict(elements, size)

    def evict_after(self, elements: TimestampedElements, size: int, window: Window,
                    evictor_context: EvictorContext) -> None:
        if self.do_evict_after:
            self._evict(elements, size)

    @abstractmethod
    def _evict(self, elements: TimestampedElements, size: int) -> None: ...


@dataclass(frozen=True)
class CountEvictor(_WhenEvicting):
    """Keeps the last ``max_count`` elements of the window."""

    max_count: int

    def __init__(self, max_count: int, do_evict_after: bool = False) -> None:
        object.__setattr__(self, "max_count", positive_count("CountEvictor", "max_count",
                                                             max_count))
        object.__setattr__(self, "do_evict_after", flag(do_evict_after, "do_evict_after"))

    @staticmethod
    def of(max_count: int, do_evict_after: bool = False) -> CountEvictor:
        return CountEvictor(max_count, do_evict_after)

    def _evict(self, elements: TimestampedElements, size: int) -> None:
        if size > self.max_count:
            del elements[:size - self.max_count]

    def describe(self) -> dict[str, Any]:
        return {"type": "countEvictor", "maxCount": self.max_count,
                "doEvictAfter": self.do_evict_after}

    def __str__(self) -> str:
        return f"CountEvictor({self.max_count})"


@dataclass(frozen=True)
class TimeEvictor(_WhenEvicting):
    """Keeps elements newer than ``window_size`` before the newest element's timestamp."""

    window_size: int

    def __init__(self, window_size: object, do_evict_after: bool = False) -> None:
        object.__setattr__(self, "window_size", positive("TimeEvictor", "window_size",
                                                         window_size))
        object.__setattr__(self, "do_evict_after", flag(do_evict_after, "do_evict_after"))

    @staticmethod
    def of(window_size: object, do_evict_after: bool = False) -> TimeEvictor:
        return TimeEvictor(window_size, do_evict_after)

    def _evict(self, elements: TimestampedElements, size: int) -> None:
        # Flink looks at the first element only: a stream has timestamps or it has none.
        if not elements or elements[0][0] is None:
            return
        newest = max(_timestamp(element) for element in elements)
        cutoff = newest - self.window_size
        elements[:] = [element for element in elements if _timestamp(element) > cutoff]

    def describe(self) -> dict[str, Any]:
        return {"type": "timeEvictor", "windowSize": self.window_size,
                "doEvictAfter": self.do_evict_after}

    def __str__(self) -> str:
        return f"TimeEvictor({self.window_size})"


def _timestamp(element: tuple[int | None, Any]) -> int:
    """A missing timestamp reads as Long.MIN_VALUE, as Flink's StreamRecord reports it."""
    return MIN_TIMESTAMP if element[0] is None else element[0]


def evictor_from(data: object) -> Evictor:
    """Rebuilds a built-in evictor from :meth:`Evictor.describe`'s data."""
    kind = description_type(data, "evictor")
    if kind == "countEvictor":
        fields = read_description(data, "evictor", ("maxCount", "doEvictAfter"))
        return CountEvictor.of(fields["maxCount"], fields["doEvictAfter"])
    if kind == "timeEvictor":
        fields = read_description(data, "evictor", ("windowSize", "doEvictAfter"))
        return TimeEvictor.of(fields["windowSize"], fields["doEvictAfter"])
    raise ValueError(f"unknown evictor type {kind!r} (known: countEvictor, timeEvictor)")
