"""Flink's window assigners: which windows an element belongs to, and their default triggers.

Names, factories and ``str()`` follow PyFlink/Flink so programs written for PyFlink run as is.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from dataflow_engine.functions.references import is_function_ref, parse_function_ref, resolve
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP, to_millis
from dataflow_engine.runtime.windowing._params import (
    description_type,
    optional_millis,
    positive,
    read_description,
)
from dataflow_engine.runtime.windowing.evictors import CountEvictor, Evictor
from dataflow_engine.runtime.windowing.triggers import (
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    Trigger,
)
from dataflow_engine.runtime.windowing.windows import (
    GlobalWindow,
    MergeCallback,
    TimeWindow,
    Window,
)

W = TypeVar("W", bound=Window)


class WindowAssignerContext(Protocol):
    """What an assigner may ask of the operator: processing-time assigners need the clock."""

    def get_current_processing_time(self) -> int: ...


class WindowAssigner(ABC, Generic[W]):
    """Puts each element into zero or more windows."""

    @abstractmethod
    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[W]: ...

    @abstractmethod
    def get_default_trigger(self, env: object = None) -> Trigger:
        """The trigger used unless the program sets one (``env`` as PyFlink passes it)."""

    @abstractmethod
    def is_event_time(self) -> bool: ...

    def describe(self) -> dict[str, Any]:
        """Plain data for a manifest; only the built-in assigners can be described."""
        raise TypeError(f"window assigner {self} cannot be described as plain data")


class MergingWindowAssigner(WindowAssigner[W]):
    """An assigner whose windows can grow together (sessions)."""

    @abstractmethod
    def merge_windows(self, windows: Collection[W], callback: MergeCallback[W]) -> None:
        """Reports each group of ``windows`` that becomes one window to ``callback.merge``."""


_NO_TIMESTAMP = ("Record has no timestamp (Long.MIN_VALUE). Is the time characteristic set to "
                 "'ProcessingTime', or did you forget to call "
                 "'DataStream.assign_timestamps_and_watermarks(...)'?")


def missing_timestamp(operator_name: str, assigner: WindowAssigner[Any]) -> str:
    """What a window operator says of a record without a timestamp (and a BATCH producer
    pre-aggregating for it)."""
    return (f"{operator_name}: a record without a timestamp reached the event-time window "
            f"assigner {assigner}. Assign event time upstream with "
            "DataStream.assign_timestamps_and_watermarks(...), or use a processing-time "
            "window assigner.")


def _event_timestamp(timestamp: int | None) -> int:
    if timestamp is None or timestamp <= MIN_TIMESTAMP:
        raise RuntimeError(_NO_TIMESTAMP)
    return timestamp


def _time_name(event_time: bool) -> str:
    return "event" if event_time else "processing"


@dataclass(frozen=True)
class _Tumbling(WindowAssigner[TimeWindow]):
    """Fixed-size, non-overlapping windows aligned to the epoch plus ``offset``."""

    size: int
    offset: int = 0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        size = positive(owner, "size", self.size)
        offset = optional_millis(self.offset, "offset")
        if abs(offset) >= size:
            raise ValueError(f"{owner} parameters must satisfy abs(offset) < size "
                             f"(got offset={offset}, size={size})")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "offset", offset)

    def _windows(self, timestamp: int) -> list[TimeWindow]:
        start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.size)
        return [TimeWindow(start, start + self.size)]

    def describe(self) -> dict[str, Any]:
        return {"type": "tumbling", "time": _time_name(self.is_event_time()),
                "size": self.size, "offset": self.offset}

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.size})"


class TumblingEventTimeWindows(_Tumbling):
    """Tumbling windows over the elements' timestamps."""

    @staticmethod
    def of(size: object, offset: object = 0) -> TumblingEventTimeWindows:
        return TumblingEventTimeWindows(size, offset)  # type: ignore[arg-type]

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[TimeWindow]:
        return self._windows(_event_timestamp(timestamp))

    def get_default_trigger(self, env: object = None) -> Trigger:
        return EventTimeTrigger.create()

    def is_event_time(self) -> bool:
        return True


class TumblingProcessingTimeWindows(_Tumbling):
    """Tumbling windows over the operator's clock when the element arrives."""

    @staticmethod
    def of(size: object, offset: object = 0) -> TumblingProcessingTimeWindows:
        return TumblingProcessingTimeWindows(size, offset)  # type: ignore[arg-type]

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[TimeWindow]:
        return self._windows(context.get_current_processing_time())

    def get_default_trigger(self, env: object = None) -> Trigger:
        return ProcessingTimeTrigger.create()

    def is_event_time(self) -> bool:
        return False


@dataclass(frozen=True)
class _Sliding(WindowAssigner[TimeWindow]):
    """Windows of ``size`` starting every ``slide``: an element is in about size/slide of them."""

    size: int
    slide: int
    offset: int = 0

    def __post_init__(self) -> None:
        owner = type(self).__name__
        size = positive(owner, "size", self.size)
        slide = positive(owner, "slide", self.slide)
        offset = optional_millis(self.offset, "offset")
        # Flink bounds the offset by the slide only (a slide may exceed the size: sampling).
        if abs(offset) >= slide:
            raise ValueError(f"{owner} parameters must satisfy abs(offset) < slide "
                             f"(got offset={offset}, slide={slide})")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "slide", slide)
        object.__setattr__(self, "offset", offset)

    def _windows(self, timestamp: int) -> list[TimeWindow]:
        """Latest start first, as Flink lists them."""
        last_start = TimeWindow.get_window_start_with_offset(timestamp, self.offset, self.slide)
        return [TimeWindow(start, start + self.size)
                for start in range(last_start, timestamp - self.size, -self.slide)]

    def describe(self) -> dict[str, Any]:
        return {"type": "sliding", "time": _time_name(self.is_event_time()),
                "size": self.size, "slide": self.slide, "offset": self.offset}

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.size}, {self.slide})"


class SlidingEventTimeWindows(_Sliding):
    """Sliding windows over the elements' timestamps."""

    @staticmethod
    def of(size: object, slide: object, offset: object = 0) -> SlidingEventTimeWindows:
        return SlidingEventTimeWindows(size, slide, offset)  # type: ignore[arg-type]

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[TimeWindow]:
        return self._windows(_event_timestamp(timestamp))

    def get_default_trigger(self, env: object = None) -> Trigger:
        return EventTimeTrigger.create()

    def is_event_time(self) -> bool:
        return True


class SlidingProcessingTimeWindows(_Sliding):
    """Sliding windows over the operator's clock when the element arrives."""

    @staticmethod
    def of(size: object, slide: object, offset: object = 0) -> SlidingProcessingTimeWindows:
        return SlidingProcessingTimeWindows(size, slide, offset)  # type: ignore[arg-type]

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[TimeWindow]:
        return self._windows(context.get_current_processing_time())

    def get_default_trigger(self, env: object = None) -> Trigger:
        return ProcessingTimeTrigger.create()

    def is_event_time(self) -> bool:
        return False


class _Merging(MergingWindowAssigner[TimeWindow]):
    """Session windows: ``[t, t + gap)`` per element, merged while they intersect."""

    def merge_windows(self, windows: Collection[TimeWindow],
                      callback: MergeCallback[TimeWindow]) -> None:
        TimeWindow.merge_windows(windows, callback)

    def _session(self, element: Any, timestamp: int,
                 context: WindowAssignerContext) -> list[TimeWindow]:
        start = timestamp if self.is_event_time() else context.get_current_processing_time()
        return [TimeWindow(start, start + self._gap(element))]

    @abstractmethod
    def _gap(self, element: Any) -> int: ...

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[TimeWindow]:
        return self._session(element, timestamp, context)

    def get_default_trigger(self, env: object = None) -> Trigger:
        if self.is_event_time():
            return EventTimeTrigger.create()
        return ProcessingTimeTrigger.create()


@dataclass(frozen=True)
class _Session(_Merging):
    session_gap: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "session_gap",
                           positive(type(self).__name__, "gap", self.session_gap))

    def _gap(self, element: Any) -> int:
        return self.session_gap

    def describe(self) -> dict[str, Any]:
        return {"type": "session", "time": _time_name(self.is_event_time()),
                "gap": self.session_gap}

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.session_gap})"


@runtime_checkable
class SupportsExtract(Protocol):
    """PyFlink's ``SessionWindowTimeGapExtractor``: ``extract(element)`` is the gap in ms."""

    def extract(self, element: Any) -> int: ...


#: A dynamic gap: a callable, an object with ``extract``, or a ``module:callable`` reference.
GapExtractor = Callable[[Any], Any] | SupportsExtract | str


@dataclass(frozen=True)
class _DynamicSession(_Merging):
    extractor: GapExtractor
    _resolved: Callable[[Any], Any] | None = field(default=None, init=False, compare=False,
                                                   repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.extractor, str):
            if not is_function_ref(self.extractor):
                raise ValueError(f"{type(self).__name__}: extractor {self.extractor!r} must be "
                                 "'module:callable'")
        elif not (isinstance(self.extractor, SupportsExtract) or callable(self.extractor)):
            raise TypeError(f"{type(self).__name__}: extractor must be callable or have "
                            f"extract(element), not {type(self.extractor).__name__}")

    def _extract(self) -> Callable[[Any], Any]:
        if self._resolved is None:
            extractor: Any = self.extractor
            if isinstance(extractor, str):
                extractor = resolve(parse_function_ref(extractor))
                if isinstance(extractor, type) and hasattr(extractor, "extract"):
                    extractor = extractor()  # a SessionWindowTimeGapExtractor class
            resolved = extractor.extract if isinstance(extractor, SupportsExtract) else extractor
            object.__setattr__(self, "_resolved", resolved)
            return resolved
        return self._resolved

    def _gap(self, element: Any) -> int:
        gap = to_millis(self._extract()(element), "session gap")
        if gap <= 0:
            raise ValueError(f"Dynamic session time gap must satisfy 0 < gap (got {gap})")
        return gap

    def describe(self) -> dict[str, Any]:
        if not isinstance(self.extractor, str):
            raise TypeError(f"{self} cannot be described as plain data: it needs a "
                            f"'module:callable' extractor, not {self.extractor!r}")
        return {"type": "session", "time": _time_name(self.is_event_time()),
                "gapExtractor": self.extractor}

    def __str__(self) -> str:
        return f"{type(self).__name__}()"


class DynamicEventTimeSessionWindows(_DynamicSession):
    """Event-time sessions whose gap each element sets."""

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def is_event_time(self) -> bool:
        return True


class DynamicProcessingTimeSessionWindows(_DynamicSession):
    """Processing-time sessions whose gap each element sets."""

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def is_event_time(self) -> bool:
        return False


class EventTimeSessionWindows(_Session):
    """Event-time sessions: a key's elements less than ``gap`` apart share a window."""

    @staticmethod
    def with_gap(size: object) -> EventTimeSessionWindows:
        return EventTimeSessionWindows(size)  # type: ignore[arg-type]

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicEventTimeSessionWindows:
        return DynamicEventTimeSessionWindows(extractor)

    def is_event_time(self) -> bool:
        return True


class ProcessingTimeSessionWindows(_Session):
    """Processing-time sessions: arrivals less than ``gap`` apart share a window."""

    @staticmethod
    def with_gap(size: object) -> ProcessingTimeSessionWindows:
        return ProcessingTimeSessionWindows(size)  # type: ignore[arg-type]

    @staticmethod
    def with_dynamic_gap(extractor: GapExtractor) -> DynamicProcessingTimeSessionWindows:
        return DynamicProcessingTimeSessionWindows(extractor)

    def is_event_time(self) -> bool:
        return False


@dataclass(frozen=True)
class GlobalWindows(WindowAssigner[GlobalWindow]):
    """Every element into the one global window; a custom trigger must fire it."""

    @staticmethod
    def create() -> GlobalWindows:
        return GlobalWindows()

    def assign_windows(self, element: Any, timestamp: int,
                       context: WindowAssignerContext) -> list[GlobalWindow]:
        return [GlobalWindow.get()]

    def get_default_trigger(self, env: object = None) -> Trigger:
        return NeverTrigger()

    def is_event_time(self) -> bool:
        return False

    def describe(self) -> dict[str, Any]:
        return {"type": "global"}

    def __str__(self) -> str:
        return "GlobalWindows()"


CountWindowing = tuple[GlobalWindows, Trigger, Evictor | None]


def count_tumbling(size: int) -> CountWindowing:
    """Flink's ``countWindow(size)``: fire and purge every ``size`` elements."""
    return GlobalWindows.create(), PurgingTrigger.of(CountTrigger.of(size)), None


def count_sliding(size: int, slide: int) -> CountWindowing:
    """Flink's ``countWindow(size, slide)``: every ``slide`` elements, the last ``size``."""
    return GlobalWindows.create(), CountTrigger.of(slide), CountEvictor.of(size)


_TIMED: dict[tuple[str, str], type[_Tumbling] | type[_Sliding] | type[_Session]] = {
    ("tumbling", "event"): TumblingEventTimeWindows,
    ("tumbling", "processing"): TumblingProcessingTimeWindows,
    ("sliding", "event"): SlidingEventTimeWindows,
    ("sliding", "processing"): SlidingProcessingTimeWindows,
    ("session", "event"): EventTimeSessionWindows,
    ("session", "processing"): ProcessingTimeSessionWindows,
}


def assigner_from(data: object) -> WindowAssigner[Any]:
    """Rebuilds a built-in assigner from :meth:`WindowAssigner.describe`'s data."""
    kind = description_type(data, "window assigner")
    if kind == "global":
        read_description(data, "window assigner", ())
        return GlobalWindows.create()
    if kind == "tumbling":
        fields = read_description(data, "window assigner", ("time", "size", "offset"))
        tumbling = _timed(kind, fields["time"])
        return tumbling(fields["size"], fields["offset"])  # type: ignore[call-arg]
    if kind == "sliding":
        fields = read_description(data, "window assigner", ("time", "size", "slide", "offset"))
        sliding = _timed(kind, fields["time"])
        return sliding(fields["size"], fields["slide"], fields["offset"])  # type: ignore[call-arg]
    if kind == "session" and isinstance(data, dict) and "gapExtractor" in data:
        fields = read_description(data, "window assigner", ("time", "gapExtractor"))
        _timed(kind, fields["time"])
        dynamic = (DynamicEventTimeSessionWindows if fields["time"] == "event"
                   else DynamicProcessingTimeSessionWindows)
        return dynamic(fields["gapExtractor"])
    if kind == "session":
        fields = read_description(data, "window assigner", ("time", "gap"))
        return _timed(kind, fields["time"])(fields["gap"])  # type: ignore[call-arg]
    raise ValueError(f"unknown window assigner type {kind!r} "
                     "(known: global, session, sliding, tumbling)")


def _timed(kind: str, time: object) -> type[_Tumbling] | type[_Sliding] | type[_Session]:
    if time not in ("event", "processing"):
        raise ValueError(f"{kind} window assigner: time must be 'event' or 'processing', "
                         f"not {time!r}")
    return _TIMED[(kind, str(time))]
