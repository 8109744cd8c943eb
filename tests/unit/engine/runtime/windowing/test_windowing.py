"""Window assigners, triggers, evictors and the merging window set, checked against Flink."""

from __future__ import annotations

import math
import pickle
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import pytest

from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.windowing.assigners import (
    DynamicEventTimeSessionWindows,
    DynamicProcessingTimeSessionWindows,
    EventTimeSessionWindows,
    GlobalWindows,
    ProcessingTimeSessionWindows,
    SlidingEventTimeWindows,
    SlidingProcessingTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
    WindowAssigner,
    assigner_from,
    count_sliding,
    count_tumbling,
)
from dataflow_engine.runtime.windowing.evictors import (
    CountEvictor,
    Evictor,
    TimeEvictor,
    evictor_from,
)
from dataflow_engine.runtime.windowing.merging_window_set import MergingWindowSet
from dataflow_engine.runtime.windowing.triggers import (
    ContinuousEventTimeTrigger,
    CountTrigger,
    EventTimeTrigger,
    NeverTrigger,
    ProcessingTimeTrigger,
    PurgingTrigger,
    ReducingValueDescriptor,
    Trigger,
    TriggerResult,
    trigger_from,
)
from dataflow_engine.runtime.windowing.windows import (
    CountWindow,
    GlobalWindow,
    TimeWindow,
    Window,
    java_remainder,
)

pytestmark = pytest.mark.unit


# ---------------------------------------------------------------- fakes


@dataclass
class Seconds:
    """PyFlink's ``Time.seconds(n)``, as far as the engine looks at it."""

    n: int

    def to_milliseconds(self) -> int:
        return self.n * 1000


@dataclass
class Clock:
    now: int = 0

    def get_current_processing_time(self) -> int:
        return self.now

    def get_current_watermark(self) -> int:
        return MIN_TIMESTAMP


class FakeState:
    def __init__(self, store: dict[tuple[Window, str], Any], window: Window, name: str) -> None:
        self._store, self._key = store, (window, name)

    def value(self) -> Any:
        return self._store.get(self._key)

    def update(self, value: Any) -> None:
        self._store[self._key] = value

    def clear(self) -> None:
        self._store.pop(self._key, None)


@dataclass
class FakeTriggerContext:
    """Records timers; state is per (window, name) for the window currently set."""

    window: Window
    watermark: int = MIN_TIMESTAMP
    now: int = 0
    merged: list[Window] = field(default_factory=list)
    event_timers: set[int] = field(default_factory=set)
    processing_timers: set[int] = field(default_factory=set)
    store: dict[tuple[Window, str], Any] = field(default_factory=dict)

    def get_current_processing_time(self) -> int:
        return self.now

    def get_current_watermark(self) -> int:
        return self.watermark

    def register_event_time_timer(self, time: int) -> None:
        self.event_timers.add(time)

    def register_processing_time_timer(self, time: int) -> None:
        self.processing_timers.add(time)

    def delete_event_time_timer(self, time: int) -> None:
        self.event_timers.discard(time)

    def delete_processing_time_timer(self, time: int) -> None:
        self.processing_timers.discard(time)

    def get_partitioned_state(self, state_descriptor: Any) -> FakeState:
        return FakeState(self.store, self.window, state_descriptor.name)

    def merge_partitioned_state(self, state_descriptor: Any) -> None:
        assert isinstance(state_descriptor, ReducingValueDescriptor)
        values = [self.store.pop((w, state_descriptor.name), None) for w in self.merged]
        present = [v for v in values if v is not None]
        target = (self.window, state_descriptor.name)
        if target in self.store:
            present.append(self.store[target])
        if present:
            result = present[0]
            for value in present[1:]:
                result = state_descriptor.reduce_function(result, value)
            self.store[target] = result


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[list[TimeWindow], TimeWindow]] = []

    def merge(self, to_be_merged: Collection[TimeWindow], merge_result: TimeWindow) -> None:
        self.calls.append((list(to_be_merged), merge_result))


def java_window_start(timestamp: int, offset: int, size: int) -> int:
    """Flink's Java code, with Java's truncating ``%`` modelled by ``math.fmod``."""
    remainder = int(math.fmod(timestamp - offset, size))
    return timestamp - (remainder + size if remainder < 0 else remainder)


# ---------------------------------------------------------------- windows


@pytest.mark.parametrize(("dividend", "divisor"),
                         [(7, 5), (-7, 5), (7, -5), (-7, -5), (-10, 5), (0, 3), (-1, 1000)])
def test_java_remainder_truncates_towards_zero(dividend: int, divisor: int) -> None:
    assert java_remainder(dividend, divisor) == int(math.fmod(dividend, divisor))


@pytest.mark.parametrize(("timestamp", "offset", "size", "start"), [
    (7000, 0, 5000, 5000),
    (5000, 0, 5000, 5000),
    (4999, 0, 5000, 0),
    (-1, 0, 5000, -5000),
    (-5000, 0, 5000, -5000),
    (-5001, 0, 5000, -10000),
    (-7000, 0, 5000, -10000),
    (7000, 1000, 5000, 6000),
    (500, 1000, 5000, -4000),
    (-1, -1000, 5000, -1000),
    (-1001, -1000, 5000, -6000),
])
def test_window_start_known_values(timestamp: int, offset: int, size: int, start: int) -> None:
    assert TimeWindow.get_window_start_with_offset(timestamp, offset, size) == start


def test_window_start_matches_java_everywhere() -> None:
    for size in (1, 7, 5000):
        for offset in {0, 1, -1, size // 3, -(size - 1), size - 1}:
            for timestamp in range(-26000, 26000, 377):
                start = TimeWindow.get_window_start_with_offset(timestamp, offset, size)
                assert start == java_window_start(timestamp, offset, size)
                assert start <= timestamp < start + size
                assert (start - offset) % size == 0


def test_time_window_basics() -> None:
    window = TimeWindow(0, 5000)
    assert window.max_timestamp() == 4999
    assert repr(window) == "TimeWindow{start=0, end=5000}"
    assert str(window) == "TimeWindow{start=0, end=5000}"
    assert window == TimeWindow(0, 5000) and hash(window) == hash(TimeWindow(0, 5000))
    assert sorted([TimeWindow(5, 9), TimeWindow(0, 7), TimeWindow(0, 3)]) == [
        TimeWindow(0, 3), TimeWindow(0, 7), TimeWindow(5, 9)]
    assert window.intersects(TimeWindow(5000, 6000))  # adjacent counts, as in Flink
    assert not window.intersects(TimeWindow(5001, 6000))
    assert TimeWindow(10, 20).cover(TimeWindow(0, 12)) == TimeWindow(0, 20)
    with pytest.raises(AttributeError):
        window.start = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(window)) == window


def test_global_and_count_windows() -> None:
    assert GlobalWindow.get() is GlobalWindow.get()
    assert pickle.loads(pickle.dumps(GlobalWindow.get())) is GlobalWindow.get()
    assert GlobalWindow.get().max_timestamp() == MAX_TIMESTAMP
    assert CountWindow(3) == CountWindow(3) != CountWindow(4)
    assert CountWindow(3).max_timestamp() == MAX_TIMESTAMP
    assert repr(CountWindow(3)) == "CountWindow{id=3}"


def test_merge_windows_sorts_and_chains() -> None:
    recorder = Recorder()
    TimeWindow.merge_windows(
        [TimeWindow(12, 15), TimeWindow(0, 5), TimeWindow(20, 25), TimeWindow(4, 10),
         TimeWindow(10, 11), TimeWindow(30, 31), TimeWindow(30, 31)], recorder)
    assert recorder.calls == [
        ([TimeWindow(0, 5), TimeWindow(4, 10), TimeWindow(10, 11)], TimeWindow(0, 11)),
    ]


# ---------------------------------------------------------------- assigners


def test_tumbling_event_time() -> None:
    assigner = TumblingEventTimeWindows.of(Seconds(5))
    assert assigner.assign_windows("x", 7000, Clock(99)) == [TimeWindow(5000, 10000)]
    assert assigner.assign_windows("x", -1, Clock()) == [TimeWindow(-5000, 0)]
    shifted = TumblingEventTimeWindows.of(5000, Seconds(1))
    assert shifted.assign_windows("x", 500, Clock()) == [TimeWindow(-4000, 1000)]
    assert TumblingEventTimeWindows.of(5000, None).offset == 0
    assert assigner.is_event_time()
    assert assigner.get_default_trigger() == EventTimeTrigger.create()
    with pytest.raises(RuntimeError, match="no timestamp"):
        assigner.assign_windows("x", MIN_TIMESTAMP, Clock())


def test_tumbling_processing_time_uses_the_clock() -> None:
    assigner = TumblingProcessingTimeWindows.of(5000)
    assert assigner.assign_windows("x", 123, Clock(12000)) == [TimeWindow(10000, 15000)]
    assert not assigner.is_event_time()
    assert assigner.get_default_trigger() == ProcessingTimeTrigger.create()


def test_sliding_windows_latest_start_first() -> None:
    assigner = SlidingEventTimeWindows.of(10000, 5000)
    assert assigner.assign_windows("x", 7000, Clock()) == [
        TimeWindow(5000, 15000), TimeWindow(0, 10000)]
    assert assigner.assign_windows("x", -1, Clock()) == [
        TimeWindow(-5000, 5000), TimeWindow(-10000, 0)]
    thirds = SlidingEventTimeWindows.of(3000, 1000, 500)
    assert thirds.assign_windows("x", 2600, Clock()) == [
        TimeWindow(2500, 5500), TimeWindow(1500, 4500), TimeWindow(500, 3500)]
    sampling = SlidingEventTimeWindows.of(1000, 5000)  # slide > size: gaps between windows
    assert sampling.assign_windows("x", 7000, Clock()) == []
    assert sampling.assign_windows("x", 5500, Clock()) == [TimeWindow(5000, 6000)]
    processing = SlidingProcessingTimeWindows.of(10000, 5000)
    assert processing.assign_windows("x", 0, Clock(7000)) == [
        TimeWindow(5000, 15000), TimeWindow(0, 10000)]


def test_session_windows_assign_gap() -> None:
    assigner = EventTimeSessionWindows.with_gap(Seconds(5))
    assert assigner.assign_windows("x", 1000, Clock()) == [TimeWindow(1000, 6000)]
    processing = ProcessingTimeSessionWindows.with_gap(5000)
    assert processing.assign_windows("x", 1000, Clock(40)) == [TimeWindow(40, 5040)]
    assert assigner.get_default_trigger() == EventTimeTrigger.create()
    assert processing.get_default_trigger() == ProcessingTimeTrigger.create()


class LengthGap:
    def extract(self, element: str) -> int:
        return len(element) * 1000


def test_dynamic_session_gaps() -> None:
    by_callable = EventTimeSessionWindows.with_dynamic_gap(lambda element: element[1])
    assert isinstance(by_callable, DynamicEventTimeSessionWindows)
    assert by_callable.assign_windows(("a", 300), 1000, Clock()) == [TimeWindow(1000, 1300)]
    by_object = ProcessingTimeSessionWindows.with_dynamic_gap(LengthGap())
    assert isinstance(by_object, DynamicProcessingTimeSessionWindows)
    assert by_object.assign_windows("abc", 1, Clock(50)) == [TimeWindow(50, 3050)]
    by_reference = EventTimeSessionWindows.with_dynamic_gap("operator:abs")
    assert by_reference.assign_windows(-250, 1000, Clock()) == [TimeWindow(1000, 1250)]
    with pytest.raises(ValueError, match="0 < gap"):
        by_callable.assign_windows(("a", 0), 1000, Clock())
    with pytest.raises(ValueError, match="module:callable"):
        EventTimeSessionWindows.with_dynamic_gap("not a reference")
    with pytest.raises(TypeError, match="extractor"):
        EventTimeSessionWindows.with_dynamic_gap(42)  # type: ignore[arg-type]


def test_session_merge_out_of_order() -> None:
    recorder = Recorder()
    EventTimeSessionWindows.with_gap(5000).merge_windows(
        [TimeWindow(20000, 25000), TimeWindow(0, 5000), TimeWindow(4000, 9000),
         TimeWindow(40000, 45000)], recorder)
    assert recorder.calls == [
        ([TimeWindow(0, 5000), TimeWindow(4000, 9000)], TimeWindow(0, 9000))]


def test_global_windows_and_count_helpers() -> None:
    assigner = GlobalWindows.create()
    assert assigner.assign_windows("x", 5, Clock()) == [GlobalWindow.get()]
    assert assigner.get_default_trigger() == NeverTrigger()
    assert count_tumbling(3) == (GlobalWindows(), PurgingTrigger.of(CountTrigger.of(3)), None)
    assert count_sliding(5, 2) == (GlobalWindows(), CountTrigger.of(2), CountEvictor.of(5))


@pytest.mark.parametrize(("build", "message"), [
    (lambda: TumblingEventTimeWindows.of(0), "0 < size"),
    (lambda: TumblingProcessingTimeWindows.of(-5), "0 < size"),
    (lambda: TumblingEventTimeWindows.of(5000, 5000), r"abs\(offset\) < size"),
    (lambda: TumblingEventTimeWindows.of(5000, -5000), r"abs\(offset\) < size"),
    (lambda: SlidingEventTimeWindows.of(0, 5000), "0 < size"),
    (lambda: SlidingEventTimeWindows.of(10000, 0), "0 < slide"),
    (lambda: SlidingProcessingTimeWindows.of(10000, 5000, 5000), r"abs\(offset\) < slide"),
    (lambda: EventTimeSessionWindows.with_gap(0), "0 < gap"),
    (lambda: ProcessingTimeSessionWindows.with_gap(-1), "0 < gap"),
    (lambda: CountTrigger.of(0), "0 < count"),
    (lambda: ContinuousEventTimeTrigger.of(0), "0 < interval"),
    (lambda: CountEvictor.of(0), "0 < max_count"),
    (lambda: TimeEvictor.of(-1), "0 < window_size"),
])
def test_validation(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


def test_arguments_must_be_milliseconds() -> None:
    with pytest.raises(TypeError, match="size"):
        TumblingEventTimeWindows.of("5s")
    with pytest.raises(TypeError, match="count"):
        CountTrigger.of(Seconds(1))  # type: ignore[arg-type]


# ---------------------------------------------------------------- str and describe

NAMED: list[tuple[object, str]] = [
    (TumblingEventTimeWindows.of(60000), "TumblingEventTimeWindows(60000)"),
    (TumblingProcessingTimeWindows.of(Seconds(60)), "TumblingProcessingTimeWindows(60000)"),
    (SlidingEventTimeWindows.of(10000, 5000), "SlidingEventTimeWindows(10000, 5000)"),
    (SlidingProcessingTimeWindows.of(10000, 5000), "SlidingProcessingTimeWindows(10000, 5000)"),
    (EventTimeSessionWindows.with_gap(5000), "EventTimeSessionWindows(5000)"),
    (ProcessingTimeSessionWindows.with_gap(5000), "ProcessingTimeSessionWindows(5000)"),
    (EventTimeSessionWindows.with_dynamic_gap(abs), "DynamicEventTimeSessionWindows()"),
    (GlobalWindows.create(), "GlobalWindows()"),
    (EventTimeTrigger.create(), "EventTimeTrigger()"),
    (ProcessingTimeTrigger.create(), "ProcessingTimeTrigger()"),
    (CountTrigger.of(3), "CountTrigger(3)"),
    (PurgingTrigger.of(CountTrigger.of(3)), "PurgingTrigger(CountTrigger(3))"),
    (NeverTrigger(), "NeverTrigger()"),
    (ContinuousEventTimeTrigger.of(Seconds(2)), "ContinuousEventTimeTrigger(2000)"),
    (CountEvictor.of(3), "CountEvictor(3)"),
    (TimeEvictor.of(Seconds(5)), "TimeEvictor(5000)"),
]


@pytest.mark.parametrize(("thing", "name"), NAMED, ids=[name for _, name in NAMED])
def test_str_as_flink(thing: object, name: str) -> None:
    assert str(thing) == name


ASSIGNERS: list[tuple[WindowAssigner[Any], dict[str, Any]]] = [
    (TumblingEventTimeWindows.of(60000),
     {"type": "tumbling", "time": "event", "size": 60000, "offset": 0}),
    (TumblingProcessingTimeWindows.of(60000, -1000),
     {"type": "tumbling", "time": "processing", "size": 60000, "offset": -1000}),
    (SlidingEventTimeWindows.of(10000, 5000, 1),
     {"type": "sliding", "time": "event", "size": 10000, "slide": 5000, "offset": 1}),
    (SlidingProcessingTimeWindows.of(10000, 5000),
     {"type": "sliding", "time": "processing", "size": 10000, "slide": 5000, "offset": 0}),
    (EventTimeSessionWindows.with_gap(5000), {"type": "session", "time": "event", "gap": 5000}),
    (ProcessingTimeSessionWindows.with_gap(7),
     {"type": "session", "time": "processing", "gap": 7}),
    (EventTimeSessionWindows.with_dynamic_gap("operator:abs"),
     {"type": "session", "time": "event", "gapExtractor": "operator:abs"}),
    (ProcessingTimeSessionWindows.with_dynamic_gap("operator:abs"),
     {"type": "session", "time": "processing", "gapExtractor": "operator:abs"}),
    (GlobalWindows.create(), {"type": "global"}),
]
TRIGGERS: list[tuple[Trigger, dict[str, Any]]] = [
    (EventTimeTrigger.create(), {"type": "eventTime"}),
    (ProcessingTimeTrigger.create(), {"type": "processingTime"}),
    (CountTrigger.of(3), {"type": "count", "count": 3}),
    (PurgingTrigger.of(CountTrigger.of(3)),
     {"type": "purging", "trigger": {"type": "count", "count": 3}}),
    (PurgingTrigger.of(PurgingTrigger.of(EventTimeTrigger.create())),
     {"type": "purging", "trigger": {"type": "purging", "trigger": {"type": "eventTime"}}}),
    (NeverTrigger(), {"type": "never"}),
    (ContinuousEventTimeTrigger.of(2000), {"type": "continuousEventTime", "interval": 2000}),
]
EVICTORS: list[tuple[Evictor, dict[str, Any]]] = [
    (CountEvictor.of(3), {"type": "countEvictor", "maxCount": 3, "doEvictAfter": False}),
    (TimeEvictor.of(5000, True), {"type": "timeEvictor", "windowSize": 5000,
                                  "doEvictAfter": True}),
]


@pytest.mark.parametrize(("assigner", "data"), ASSIGNERS, ids=lambda x: str(x))
def test_assigner_round_trip(assigner: WindowAssigner[Any], data: dict[str, Any]) -> None:
    assert assigner.describe() == data
    rebuilt = assigner_from(data)
    assert rebuilt == assigner and type(rebuilt) is type(assigner)
    assert rebuilt.describe() == data


@pytest.mark.parametrize(("trigger", "data"), TRIGGERS, ids=lambda x: str(x))
def test_trigger_round_trip(trigger: Trigger, data: dict[str, Any]) -> None:
    assert trigger.describe() == data
    assert trigger_from(data) == trigger
    assert trigger_from(data).describe() == data


@pytest.mark.parametrize(("evictor", "data"), EVICTORS, ids=lambda x: str(x))
def test_evictor_round_trip(evictor: Evictor, data: dict[str, Any]) -> None:
    assert evictor.describe() == data
    assert evictor_from(data) == evictor
    assert evictor_from(data).describe() == data


def test_distinct_objects_are_not_equal() -> None:
    event: object = TumblingEventTimeWindows.of(5000)
    assert event != TumblingProcessingTimeWindows.of(5000)
    assert CountTrigger.of(3) != CountTrigger.of(4)
    assert CountEvictor.of(3) != CountEvictor.of(3, True)


def test_dynamic_gap_callable_is_not_describable() -> None:
    with pytest.raises(TypeError, match="'module:callable'"):
        EventTimeSessionWindows.with_dynamic_gap(LengthGap()).describe()


@pytest.mark.parametrize(("read", "data", "error"), [
    (assigner_from, {"type": "hopping"}, ValueError),
    (assigner_from, {"type": "tumbling", "time": "event", "size": 5}, ValueError),
    (assigner_from, {"type": "tumbling", "time": "wall", "size": 5, "offset": 0}, ValueError),
    (assigner_from, {"type": "global", "size": 5}, ValueError),
    (assigner_from, {"type": "session", "time": "event", "gap": True}, TypeError),
    (assigner_from, ["tumbling"], TypeError),
    (trigger_from, {"type": "count"}, ValueError),
    (trigger_from, {"count": 3}, ValueError),
    (trigger_from, {"type": "purging", "trigger": {"type": "nope"}}, ValueError),
    (evictor_from, {"type": "countEvictor", "maxCount": 3, "doEvictAfter": "no"}, TypeError),
    (evictor_from, {"type": "deltaEvictor"}, ValueError),
])
def test_bad_descriptions(read: Any, data: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        read(data)


# ---------------------------------------------------------------- triggers


def test_trigger_result_flags() -> None:
    flags = {result: (result.is_fire(), result.is_purge()) for result in TriggerResult}
    assert flags == {TriggerResult.CONTINUE: (False, False), TriggerResult.FIRE: (True, False),
                     TriggerResult.PURGE: (False, True),
                     TriggerResult.FIRE_AND_PURGE: (True, True)}


def test_event_time_trigger() -> None:
    window = TimeWindow(0, 5000)
    ctx = FakeTriggerContext(window, watermark=1000)
    trigger = EventTimeTrigger.create()
    assert trigger.on_element("x", 10, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == {4999}
    assert trigger.on_event_time(4998, window, ctx) is TriggerResult.CONTINUE
    assert trigger.on_event_time(4999, window, ctx) is TriggerResult.FIRE
    assert trigger.on_processing_time(4999, window, ctx) is TriggerResult.CONTINUE
    trigger.clear(window, ctx)
    assert ctx.event_timers == set()


def test_event_time_trigger_fires_late_elements_at_once() -> None:
    window = TimeWindow(0, 5000)
    ctx = FakeTriggerContext(window, watermark=4999)
    assert EventTimeTrigger.create().on_element("x", 10, window, ctx) is TriggerResult.FIRE
    assert ctx.event_timers == set()


def test_event_time_trigger_on_merge() -> None:
    trigger = EventTimeTrigger.create()
    assert trigger.can_merge()
    ctx = FakeTriggerContext(TimeWindow(0, 9000), watermark=8000)
    trigger.on_merge(TimeWindow(0, 9000), ctx)
    assert ctx.event_timers == {8999}
    passed = FakeTriggerContext(TimeWindow(0, 9000), watermark=8999)
    trigger.on_merge(TimeWindow(0, 9000), passed)
    assert passed.event_timers == set()


def test_processing_time_trigger() -> None:
    window = TimeWindow(0, 5000)
    ctx = FakeTriggerContext(window, now=100)
    trigger = ProcessingTimeTrigger.create()
    assert trigger.on_element("x", 0, window, ctx) is TriggerResult.CONTINUE
    assert ctx.processing_timers == {4999}
    assert trigger.on_processing_time(4999, window, ctx) is TriggerResult.FIRE
    assert trigger.on_event_time(4999, window, ctx) is TriggerResult.CONTINUE
    late = FakeTriggerContext(TimeWindow(0, 9000), now=9000)
    trigger.on_merge(TimeWindow(0, 9000), late)
    assert late.processing_timers == set()
    trigger.clear(window, ctx)
    assert ctx.processing_timers == set()


def test_count_trigger_fires_every_n_and_resets() -> None:
    window = GlobalWindow.get()
    ctx = FakeTriggerContext(window)
    trigger = CountTrigger.of(3)
    results = [trigger.on_element(i, i, window, ctx) for i in range(7)]
    fire, wait = TriggerResult.FIRE, TriggerResult.CONTINUE
    assert results == [wait, wait, fire, wait, wait, fire, wait]
    assert ctx.store == {(window, "count"): 1}
    trigger.clear(window, ctx)
    assert ctx.store == {}


def test_count_trigger_counts_per_window_and_merges() -> None:
    trigger = CountTrigger.of(4)
    a, b, merged = TimeWindow(0, 5), TimeWindow(4, 9), TimeWindow(0, 9)
    ctx = FakeTriggerContext(a)
    trigger.on_element("x", 0, a, ctx)
    trigger.on_element("x", 1, a, ctx)
    ctx.window = b
    trigger.on_element("x", 4, b, ctx)
    ctx.window, ctx.merged = merged, [a, b]
    trigger.on_merge(merged, ctx)
    assert ctx.store == {(merged, "count"): 3}
    assert trigger.on_element("x", 5, merged, ctx) is TriggerResult.FIRE


def test_purging_trigger_turns_fire_into_fire_and_purge() -> None:
    window = GlobalWindow.get()
    ctx = FakeTriggerContext(window)
    purging = PurgingTrigger.of(CountTrigger.of(2))
    assert purging.on_element("a", 0, window, ctx) is TriggerResult.CONTINUE
    assert purging.on_element("b", 0, window, ctx) is TriggerResult.FIRE_AND_PURGE
    assert purging.can_merge()
    event = PurgingTrigger.of(EventTimeTrigger.create())
    time_window = TimeWindow(0, 10)
    assert event.on_event_time(9, time_window, ctx) is TriggerResult.FIRE_AND_PURGE
    assert event.on_event_time(8, time_window, ctx) is TriggerResult.CONTINUE
    assert not PurgingTrigger.of(NeverTrigger()).can_merge()


def test_never_trigger() -> None:
    window = GlobalWindow.get()
    ctx = FakeTriggerContext(window)
    trigger = NeverTrigger()
    assert trigger.on_element("x", 0, window, ctx) is TriggerResult.CONTINUE
    assert trigger.on_event_time(MAX_TIMESTAMP, window, ctx) is TriggerResult.CONTINUE
    assert trigger.on_processing_time(MAX_TIMESTAMP, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == set() and ctx.processing_timers == set()


def test_non_merging_trigger_refuses_on_merge() -> None:
    class Custom(NeverTrigger):
        def can_merge(self) -> bool:
            return False

    assert not Trigger.can_merge(Custom())
    with pytest.raises(NotImplementedError, match="does not support merging"):
        Trigger.on_merge(Custom(), GlobalWindow.get(), FakeTriggerContext(GlobalWindow.get()))


def test_continuous_event_time_trigger() -> None:
    window = TimeWindow(0, 10000)
    ctx = FakeTriggerContext(window, watermark=0)
    trigger = ContinuousEventTimeTrigger.of(3000)
    assert trigger.on_element("x", 4500, window, ctx) is TriggerResult.CONTINUE
    assert ctx.event_timers == {9999, 6000}  # 4500 aligns to 3000, next fire at 6000
    assert trigger.on_event_time(6000, window, ctx) is TriggerResult.FIRE
    assert ctx.event_timers == {9999, 6000, 9000}
    assert trigger.on_event_time(9000, window, ctx) is TriggerResult.FIRE
    assert ctx.store[(window, "fire-time")] == 9999  # capped at the window's end
    assert trigger.on_event_time(9999, window, ctx) is TriggerResult.FIRE
    trigger.clear(window, ctx)
    assert (window, "fire-time") not in ctx.store


# ---------------------------------------------------------------- evictors


def elements(*timestamps: int | None) -> list[tuple[int | None, Any]]:
    return [(ts, f"v{i}") for i, ts in enumerate(timestamps)]


def test_count_evictor_keeps_the_last() -> None:
    buffer = elements(1, 2, 3, 4, 5)
    evictor = CountEvictor.of(3)
    evictor.evict_after(buffer, len(buffer), GlobalWindow.get(), Clock())
    assert len(buffer) == 5
    evictor.evict_before(buffer, len(buffer), GlobalWindow.get(), Clock())
    assert buffer == [(3, "v2"), (4, "v3"), (5, "v4")]
    evictor.evict_before(buffer, len(buffer), GlobalWindow.get(), Clock())
    assert len(buffer) == 3
    after = CountEvictor.of(1, do_evict_after=True)
    short = elements(1, 2)
    after.evict_before(short, 2, GlobalWindow.get(), Clock())
    assert len(short) == 2
    after.evict_after(short, 2, GlobalWindow.get(), Clock())
    assert short == [(2, "v1")]


def test_time_evictor_keeps_recent_elements() -> None:
    buffer = elements(1000, 9000, 4000, 3999, 8000)
    TimeEvictor.of(5000).evict_before(buffer, 5, TimeWindow(0, 10000), Clock())
    assert buffer == [(9000, "v1"), (8000, "v4")]  # keeps timestamp > 9000 - 5000
    buffer = elements(1000, 6000, 4000)
    TimeEvictor.of(2000, True).evict_after(buffer, 3, TimeWindow(0, 10000), Clock())
    assert buffer == [(6000, "v1")]


def test_time_evictor_without_timestamps_is_a_no_op() -> None:
    buffer = elements(None, None)
    TimeEvictor.of(1).evict_before(buffer, 2, GlobalWindow.get(), Clock())
    assert len(buffer) == 2
    empty: list[tuple[int | None, Any]] = []
    TimeEvictor.of(1).evict_before(empty, 0, GlobalWindow.get(), Clock())
    assert empty == []


def test_sliding_count_window_pipeline() -> None:
    """countWindow(3, 2): every second element, the last three elements so far."""
    assigner, trigger, evictor = count_sliding(3, 2)
    assert evictor is not None
    window = assigner.assign_windows("x", 0, Clock())[0]
    ctx = FakeTriggerContext(window)
    buffer: list[tuple[int | None, Any]] = []
    fired = []
    for value in range(1, 8):
        buffer.append((None, value))
        if trigger.on_element(value, 0, window, ctx).is_fire():
            evictor.evict_before(buffer, len(buffer), window, Clock())
            fired.append([v for _, v in buffer])
    assert fired == [[1, 2], [2, 3, 4], [4, 5, 6]]


# ---------------------------------------------------------------- merging window set


class MergeLog:
    def __init__(self) -> None:
        self.calls: list[tuple[TimeWindow, list[TimeWindow], TimeWindow, list[TimeWindow]]] = []

    def __call__(self, merge_result: TimeWindow, merged_windows: list[TimeWindow],
                 state_window_result: TimeWindow,
                 merged_state_windows: list[TimeWindow]) -> None:
        self.calls.append((merge_result, list(merged_windows), state_window_result,
                           list(merged_state_windows)))


def sessions() -> MergingWindowSet[TimeWindow]:
    return MergingWindowSet(EventTimeSessionWindows.with_gap(5))


def test_bridging_window_merges_both_into_one() -> None:
    windows, log = sessions(), MergeLog()
    assert windows.add_window(TimeWindow(0, 5), log) == TimeWindow(0, 5)
    assert windows.add_window(TimeWindow(10, 15), log) == TimeWindow(10, 15)
    assert log.calls == []
    assert windows.add_window(TimeWindow(4, 11), log) == TimeWindow(0, 15)
    assert log.calls == [(TimeWindow(0, 15), [TimeWindow(0, 5), TimeWindow(10, 15)],
                          TimeWindow(0, 5), [TimeWindow(10, 15)])]
    assert windows.persist() == {TimeWindow(0, 15): TimeWindow(0, 5)}
    assert windows.get_state_window(TimeWindow(0, 15)) == TimeWindow(0, 5)
    assert windows.get_state_window(TimeWindow(0, 5)) is None


def test_out_of_order_extension_keeps_the_old_state_window() -> None:
    windows, log = sessions(), MergeLog()
    windows.add_window(TimeWindow(10, 15), log)
    assert windows.add_window(TimeWindow(7, 12), log) == TimeWindow(7, 15)
    assert log.calls == [(TimeWindow(7, 15), [TimeWindow(10, 15)], TimeWindow(10, 15), [])]
    assert windows.persist() == {TimeWindow(7, 15): TimeWindow(10, 15)}


def test_window_inside_an_existing_one_merges_silently() -> None:
    windows, log = MergingWindowSet(EventTimeSessionWindows.with_gap(5)), MergeLog()
    windows.add_window(TimeWindow(0, 5), log)
    windows.add_window(TimeWindow(3, 9), log)
    log.calls.clear()
    assert windows.add_window(TimeWindow(2, 7), log) == TimeWindow(0, 9)
    assert log.calls == []
    assert windows.persist() == {TimeWindow(0, 9): TimeWindow(0, 5)}


def test_readding_an_in_flight_window_keeps_its_state_window() -> None:
    windows = MergingWindowSet(EventTimeSessionWindows.with_gap(5),
                               {TimeWindow(0, 9): TimeWindow(0, 5)})
    log = MergeLog()
    assert windows.add_window(TimeWindow(0, 9), log) == TimeWindow(0, 9)
    assert log.calls == []
    assert windows.persist() == {TimeWindow(0, 9): TimeWindow(0, 5)}


def test_restore_retire_and_errors() -> None:
    snapshot = {TimeWindow(0, 9): TimeWindow(0, 5), TimeWindow(20, 25): TimeWindow(20, 25)}
    windows = MergingWindowSet(EventTimeSessionWindows.with_gap(5), snapshot)
    snapshot.clear()  # the set owns a copy
    assert len(windows) == 2
    windows.retire_window(TimeWindow(20, 25))
    assert windows.persist() == {TimeWindow(0, 9): TimeWindow(0, 5)}
    with pytest.raises(ValueError, match="not in in-flight window set"):
        windows.retire_window(TimeWindow(20, 25))
    log = MergeLog()
    assert windows.add_window(TimeWindow(9, 14), log) == TimeWindow(0, 14)
    assert log.calls == [(TimeWindow(0, 14), [TimeWindow(0, 9)], TimeWindow(0, 5), [])]


@pytest.mark.parametrize("thing", [thing for thing, _ in [*ASSIGNERS, *TRIGGERS, *EVICTORS]],
                         ids=str)
def test_pickles_for_the_executors(thing: object) -> None:
    assert pickle.loads(pickle.dumps(thing)) == thing
