"""WindowedStream and AllWindowedStream: ``key_by(...).window(...)`` and ``window_all(...)``.

A windowed stream only collects settings (trigger, evictor, lateness); its function call
(``reduce``, ``aggregate``, ``process``, ``apply``) adds the window operator, whose spec holds
the windows as data, so the same job reads the same from Python and from a manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Self

from dataflow_engine.api.function_refs import function_reference
from dataflow_engine.api.transformations import check_name, declared_type
from dataflow_engine.runtime.functions.output_tag import OutputTag
from dataflow_engine.runtime.time.durations import to_millis
from dataflow_engine.runtime.windowing.assigners import (
    WindowAssigner,
    _DynamicSession,
    count_sliding,
    count_tumbling,
)
from dataflow_engine.runtime.windowing.evictors import Evictor
from dataflow_engine.runtime.windowing.triggers import Trigger
from dataflow_engine.spec.model import OperatorType, duration_text

if TYPE_CHECKING:
    from dataflow_engine.api.datastream.data_stream import DataStream

_DURATIONS = ("size", "slide", "offset", "gap", "interval", "windowSize")


def _spec_durations(data: dict[str, Any]) -> dict[str, Any]:
    """A runtime description (ms) as spec data (duration texts)."""
    return {key: duration_text(value) if key in _DURATIONS else value
            for key, value in data.items()}


def _assigner_data(assigner: object) -> dict[str, Any]:
    if not isinstance(assigner, WindowAssigner):
        raise TypeError(f"window() takes a WindowAssigner (e.g. TumblingEventTimeWindows.of("
                        f"Time.minutes(1))), not {type(assigner).__name__}")
    if isinstance(assigner, _DynamicSession) and not isinstance(assigner.extractor, str):
        reference = function_reference(assigner.extractor, None, "session gap extractor")
        assigner = type(assigner)(reference)
    data = _spec_durations(assigner.describe())
    if data.get("offset") == "0ms":
        del data["offset"]
    return data


def _trigger_data(trigger: object) -> dict[str, Any]:
    if not isinstance(trigger, Trigger):
        raise TypeError(f"trigger() takes a Trigger, not {type(trigger).__name__}")
    described = trigger.describe()
    purging = described["type"] == "purging"
    if purging:
        described = described["trigger"]
        if described["type"] == "purging":
            raise ValueError("a PurgingTrigger of a PurgingTrigger purges nothing more")
    data = _spec_durations(described)
    if purging:
        data["purging"] = True
    return data


def _evictor_data(evictor: object) -> dict[str, Any]:
    if not isinstance(evictor, Evictor):
        raise TypeError(f"evictor() takes an Evictor, not {type(evictor).__name__}")
    described = _spec_durations(evictor.describe())
    kind = "count" if described.pop("type") == "countEvictor" else "time"
    return {"type": kind, **described}


@dataclass
class _WindowSettings:
    assigner: dict[str, Any]
    trigger: dict[str, Any] | None = None
    evictor: dict[str, Any] | None = None
    allowed_lateness: int | None = None
    late_data_output: str | None = None

    def spec_data(self, kind: str, window_function: str | None) -> dict[str, Any]:
        data: dict[str, Any] = {"assigner": self.assigner, "kind": kind}
        if self.trigger is not None:
            data["trigger"] = self.trigger
        if self.evictor is not None:
            data["evictor"] = self.evictor
        if self.allowed_lateness:
            data["allowedLateness"] = duration_text(self.allowed_lateness)
        if window_function is not None:
            data["windowFunction"] = window_function
        if self.late_data_output is not None:
            data["lateDataOutput"] = self.late_data_output
        return data


class _Windowed:
    """What WindowedStream and AllWindowedStream share."""

    _OPERATOR: OperatorType

    def __init__(self, stream: DataStream, settings: _WindowSettings) -> None:
        self._stream = stream
        self._settings = settings

    def trigger(self, trigger: Trigger) -> Self:
        self._settings.trigger = _trigger_data(trigger)
        return self

    def evictor(self, evictor: Evictor) -> Self:
        self._settings.evictor = _evictor_data(evictor)
        return self

    def allowed_lateness(self, time_ms: object) -> Self:
        """Keeps event-time windows this long after they end (an int of ms, or a Time)."""
        lateness = to_millis(time_ms, "allowed_lateness")
        if lateness < 0:
            raise ValueError("allowed_lateness must not be negative")
        self._settings.allowed_lateness = lateness
        return self

    def side_output_late_data(self, output_tag: OutputTag) -> Self:
        """Sends elements too late for their windows to ``output_tag`` instead of dropping
        them; read them with ``get_side_output(output_tag)`` on the windowed result."""
        if not isinstance(output_tag, OutputTag):
            raise TypeError(f"side_output_late_data() takes an OutputTag, not "
                            f"{type(output_tag).__name__}")
        self._settings.late_data_output = check_name(output_tag.tag_id, "OutputTag id")
        return self

    def reduce(self, reduce_function: object, window_function: object = None,
               output_type: object = None) -> DataStream:
        """Reduces each window's elements incrementally; a ProcessWindowFunction given as
        ``window_function`` then sees the result with the window's context. Without one the
        results have the input's type (``output_type`` is then ignored, as in PyFlink)."""
        return self._add("reduce", reduce_function, window_function,
                         output_type if window_function is not None else None)

    def aggregate(self, aggregate_function: object, window_function: object = None,
                  accumulator_type: object = None, output_type: object = None) -> DataStream:
        """An AggregateFunction per window (create_accumulator, add, get_result, merge);
        ``accumulator_type`` is accepted and not needed (accumulators stay Python objects)."""
        return self._add("aggregate", aggregate_function, window_function, output_type)

    def process(self, process_window_function: object,
                output_type: object = None) -> DataStream:
        """A ProcessWindowFunction over all of a window's elements."""
        return self._add("process", process_window_function, None, output_type)

    def apply(self, window_function: object, output_type: object = None) -> DataStream:
        """A WindowFunction (``apply``) over all of a window's elements."""
        return self._add("apply", window_function, None, output_type)

    def _add(self, kind: str, function: object, window_function: object,
             output_type: object) -> DataStream:
        from dataflow_engine.api.datastream.data_stream import DataStream

        reference = function_reference(function, self._OPERATOR, f"window {kind} function")
        follow_up = (function_reference(window_function, None, "window function")
                     if window_function is not None else None)
        stream = self._stream
        transformation = stream._env._add(self._OPERATOR, [stream._edge()], reference)
        transformation.window = self._settings.spec_data(kind, follow_up)
        transformation.output_type = declared_type(output_type)
        if self._OPERATOR is OperatorType.WINDOW_ALL:
            transformation.parallelism = 1
        return DataStream(stream._env, transformation)


class WindowedStream(_Windowed):
    """A KeyedStream cut into windows per key."""

    _OPERATOR = OperatorType.WINDOW


class AllWindowedStream(_Windowed):
    """A whole stream cut into windows, evaluated by one subtask (Flink's windowAll)."""

    _OPERATOR = OperatorType.WINDOW_ALL


def windowed(stream: DataStream, assigner: object, all_windows: bool) -> _Windowed:
    settings = _WindowSettings(_assigner_data(assigner))
    return AllWindowedStream(stream, settings) if all_windows else WindowedStream(stream,
                                                                                 settings)


def count_windowed(stream: DataStream, size: int, slide: int, all_windows: bool) -> _Windowed:
    """``count_window(size)`` (tumbling) or ``count_window(size, slide)`` (sliding), as Flink
    builds them: global windows with a count trigger (and a count evictor when sliding)."""
    assigner, trigger, evictor = (count_sliding(size, slide) if slide else count_tumbling(size))
    result = windowed(stream, assigner, all_windows).trigger(trigger)
    return result.evictor(evictor) if evictor is not None else result


class _TwoStreamsWindowed(_Windowed):
    """``join(...)/co_group(...).where(...).equal_to(...).window(...)``, waiting for its
    function."""

    _OPERATOR = OperatorType.WINDOW_JOIN

    def __init__(self, first: DataStream, second: DataStream, settings: _WindowSettings,
                 kind: str) -> None:
        super().__init__(first, settings)
        self._second = second
        self._kind = kind

    def apply(self, function: object, output_type: object = None) -> DataStream:
        """A JoinFunction (``join(first, second)``, once per pair of a key's window) for a
        join; a CoGroupFunction (``co_group(firsts, seconds)``) for a co_group."""
        from dataflow_engine.api.datastream.data_stream import DataStream

        what = "join function" if self._kind == "join" else "co-group function"
        reference = function_reference(function, self._OPERATOR, what)
        env = self._stream._env
        transformation = env._add(self._OPERATOR, [self._stream._edge(), self._second._edge()],
                                  reference)
        transformation.window = self._settings.spec_data(self._kind, None)
        transformation.output_type = declared_type(output_type)
        return DataStream(env, transformation)

    def _refuse(self, *args: Any, **kwargs: Any) -> DataStream:
        raise TypeError("a windowed join or co_group takes apply(function)")

    reduce = aggregate = process = _refuse

    def side_output_late_data(self, output_tag: OutputTag) -> Self:
        raise TypeError("a windowed join or co_group has no late-data side output (as in "
                        "Flink)")


class TwoStreams:
    """``first.join(second)`` (an inner join per key and window) or ``first.co_group(second)``;
    ``where(key1).equal_to(key2).window(assigner).apply(function)``."""

    def __init__(self, first: DataStream, second: DataStream, kind: str) -> None:
        self._first, self._second, self._kind = first, second, kind
        self._key1: object = None

    def where(self, key_selector: object) -> TwoStreams:
        self._key1 = key_selector
        return self

    def equal_to(self, key_selector: object) -> _EqualTo:
        if self._key1 is None:
            raise TypeError("call where(key_selector) before equal_to()")
        from dataflow_engine.api.datastream.data_stream import key_hashing

        common = key_hashing(None, self._key1, key_selector)
        return _EqualTo(self._first.key_by(self._key1, common),
                        self._second.key_by(key_selector, common), self._kind)


class _EqualTo:
    def __init__(self, first: DataStream, second: DataStream, kind: str) -> None:
        self._first, self._second, self._kind = first, second, kind

    def window(self, window_assigner: object) -> _TwoStreamsWindowed:
        return _TwoStreamsWindowed(self._first, self._second,
                                   _WindowSettings(_assigner_data(window_assigner)), self._kind)
