"""Flink's windows: event/processing time intervals, the one global window, count windows."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import ClassVar, Protocol, TypeVar

from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP


class Window(ABC):
    """A bucket of elements; ``max_timestamp`` is its last instant, when time triggers fire."""

    __slots__ = ()

    @abstractmethod
    def max_timestamp(self) -> int: ...


W_contra = TypeVar("W_contra", bound=Window, contravariant=True)


class MergeCallback(Protocol[W_contra]):
    """Flink's ``MergingWindowAssigner.MergeCallback``: told of each group that becomes one."""

    def merge(self, to_be_merged: Collection[W_contra], merge_result: W_contra) -> None: ...


def java_remainder(dividend: int, divisor: int) -> int:
    """Java's ``%``: the sign follows the dividend (Python's ``%`` follows the divisor)."""
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder


@dataclass(frozen=True, order=True, slots=True, repr=False)
class TimeWindow(Window):
    """The half-open interval ``[start, end)``; ordered by ``(start, end)``."""

    start: int
    end: int

    def max_timestamp(self) -> int:
        return self.end - 1

    def intersects(self, other: TimeWindow) -> bool:
        """Overlapping or adjacent (Flink counts touching windows, so sessions chain)."""
        return self.start <= other.end and self.end >= other.start

    def cover(self, other: TimeWindow) -> TimeWindow:
        """The smallest window spanning both."""
        return TimeWindow(min(self.start, other.start), max(self.end, other.end))

    @staticmethod
    def get_window_start_with_offset(timestamp: int, offset: int, window_size: int) -> int:
        """Start of the aligned window holding ``timestamp``, as Flink computes it.

        Flink takes Java's remainder and adds ``window_size`` back when it is negative, so
        timestamps before the epoch land in the window that really contains them; Python's
        ``%`` with a positive divisor is that already.
        """
        return timestamp - (timestamp - offset) % window_size

    @staticmethod
    def merge_windows(windows: Iterable[TimeWindow],
                      callback: MergeCallback[TimeWindow]) -> None:
        """Flink's ``TimeWindow.mergeWindows``: sorts by start, chains intersecting windows.

        The callback hears only of groups of more than one distinct window, each group listed
        by start.
        """
        groups: list[tuple[TimeWindow, dict[TimeWindow, None]]] = []
        for candidate in sorted(windows, key=lambda window: window.start):
            if groups and groups[-1][0].intersects(candidate):
                cover, members = groups[-1]
                members[candidate] = None
                groups[-1] = (cover.cover(candidate), members)
            else:
                groups.append((candidate, {candidate: None}))
        for cover, members in groups:
            if len(members) > 1:
                callback.merge(list(members), cover)

    def __repr__(self) -> str:
        return f"TimeWindow{{start={self.start}, end={self.end}}}"


class GlobalWindow(Window):
    """The single window of :class:`GlobalWindows`; it never ends, so only custom triggers fire."""

    __slots__ = ()
    _instance: ClassVar[GlobalWindow | None] = None

    def __new__(cls) -> GlobalWindow:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @staticmethod
    def get() -> GlobalWindow:
        return GlobalWindow()

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GlobalWindow)

    def __hash__(self) -> int:
        return 0

    def __reduce__(self) -> tuple[object, tuple[()]]:
        # Unpickling must yield the singleton, not a second instance.
        return (GlobalWindow.get, ())

    def __repr__(self) -> str:
        return "GlobalWindow"


@dataclass(frozen=True, order=True, slots=True, repr=False)
class CountWindow(Window):
    """A window numbered by ``id``; like the global window it has no time bound."""

    id: int

    def max_timestamp(self) -> int:
        return MAX_TIMESTAMP

    def __repr__(self) -> str:
        return f"CountWindow{{id={self.id}}}"
