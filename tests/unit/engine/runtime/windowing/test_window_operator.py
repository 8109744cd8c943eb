"""The WindowOperator driven directly: Flink's window semantics on exact inputs and outputs."""

from __future__ import annotations

import pickle
from collections.abc import Iterable
from typing import Any

import pytest

from dataflow_engine.runtime.checkpoint.snapshots import RestoredState
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.streamoperators.window_operator import (
    WindowConfig,
    WindowOperator,
    pre_aggregable,
)
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig, PayloadKind
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Counter, Output
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP
from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.runtime.time.processing_time import ProcessingTimeService, TaskTime
from dataflow_engine.runtime.windowing.assigners import (
    EventTimeSessionWindows,
    GlobalWindows,
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    TumblingProcessingTimeWindows,
)
from dataflow_engine.runtime.windowing.evictors import CountEvictor
from dataflow_engine.runtime.windowing.triggers import CountTrigger, PurgingTrigger
from dataflow_engine.runtime.windowing.windows import GlobalWindow, TimeWindow
from dataflow_engine.spec.model import OperatorType, RuntimeMode

pytestmark = pytest.mark.unit

TUMBLING_10 = TumblingEventTimeWindows.of(10).describe()


class FakeClock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class Collecting(Output):
    """Records ``("record", timestamp cell, value)`` and ``("watermark", ts)`` in order."""

    def __init__(self, cell: ElementTimestamp) -> None:
        self.counter = Counter()
        self.cell = cell
        self.events: list[tuple[Any, ...]] = []

    def bind(self) -> tuple[Collect, CollectAll]:
        def collect(record: Any) -> None:
            self.counter.count += 1
            self.events.append(("record", self.cell.value, record))

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all

    def emit_watermark(self, timestamp: int) -> None:
        self.events.append(("watermark", timestamp))

    def emit_watermark_status(self, idle: bool) -> None:
        self.events.append(("status", idle))

    @property
    def records(self) -> list[tuple[Any, Any]]:
        return [(event[1], event[2]) for event in self.events if event[0] == "record"]


class SideOutputWindowOperator(WindowOperator):
    """Records what goes to side outputs (the chain connects them in a real task)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.side: list[tuple[str, Any]] = []

    def emit_side_output(self, tag: str, value: Any) -> None:
        self.side.append((tag, value))


class Harness:
    def __init__(self, window: dict[str, Any], function: str, *, streaming: bool = True,
                 operator: type[WindowOperator] = WindowOperator) -> None:
        self.config = OperatorConfig(
            node_id=1, name="window", operator_type=OperatorType.PROCESS,
            display_name="Window", function=function, args={"window": window}, parallelism=1,
            max_parallelism=128, chained_outputs=(), writer_outputs=())
        self.clock = FakeClock()
        mode = RuntimeMode.STREAMING if streaming else RuntimeMode.BATCH
        self.op = operator(self.config, TaskInfo("job", "Window", 0, 1, 128, 0), mode,
                           PayloadKind.KEYED)
        self.op.time = TaskTime(streaming=streaming,
                                processing_time=ProcessingTimeService(clock=self.clock))
        self.out = Collecting(self.op.time.timestamp)
        self.op.setup(self.out)
        self.op.open()

    def element(self, key: Any, value: Any, timestamp: int | None = None) -> None:
        self.op.time.timestamp.value = timestamp
        self.op.process_element((key, value))

    def watermark(self, timestamp: int) -> None:
        self.op.process_watermark(timestamp)

    def advance_clock(self, now: int) -> None:
        self.clock.now = now
        self.op.time.processing_time.fire_due()


def window(assigner: dict[str, Any], kind: str, **extra: Any) -> dict[str, Any]:
    return {"assigner": assigner, "kind": kind, **extra}


def test_tumbling_event_time_reduce_out_of_order() -> None:
    h = Harness(window(TUMBLING_10, "reduce"), "window_fns:sum_pairs")
    h.element("a", ("a", 1), 1)
    h.element("a", ("a", 2), 12)
    h.element("a", ("a", 3), 5)
    h.element("b", ("b", 10), 3)
    h.element("a", ("a", 4), 15)
    h.watermark(5)
    h.watermark(9)
    h.element("a", ("a", 7), 19)
    h.watermark(15)
    h.watermark(19)
    assert h.out.events == [
        ("watermark", 5),
        ("record", 9, ("a", 4)), ("record", 9, ("b", 10)), ("watermark", 9),
        ("watermark", 15),
        ("record", 19, ("a", 13)), ("watermark", 19),
    ]
    assert h.op.time.timestamp.value == 19  # restored after emitting
    assert not h.op.timers.has_timers()
    assert h.op.backend.snapshot() == {}  # fired windows are cleaned up


def test_sliding_windows_overlap() -> None:
    sliding = SlidingEventTimeWindows.of(10, 5).describe()
    h = Harness(window(sliding, "reduce"), "window_fns:SumValues")
    for value, timestamp in ((1, 3), (2, 7), (4, 12)):
        h.element("k", value, timestamp)
    h.watermark(30)
    assert h.out.events == [("record", 4, 1), ("record", 9, 3), ("record", 14, 6),
                            ("record", 19, 4), ("watermark", 30)]


def test_session_windows_merge_on_a_bridging_element() -> None:
    session = EventTimeSessionWindows.with_gap(10).describe()
    h = Harness(window(session, "process"), "window_fns:DescribeWindow")
    h.element("k", "x0", 0)
    h.element("k", "x15", 15)
    h.element("other", "y3", 3)
    h.watermark(5)
    h.element("k", "x7", 7)  # [7, 17) bridges [0, 10) and [15, 25)
    h.watermark(30)
    assert h.out.events == [
        ("watermark", 5),
        ("record", 12, ("other", 3, 13, ["y3"], 1)),
        ("record", 24, ("k", 0, 25, ["x0", "x15", "x7"], 1)),
        ("watermark", 30),
    ]
    assert h.op.udf.instance.cleared == [TimeWindow(3, 13), TimeWindow(0, 25)]
    assert not h.op.timers.has_timers()


def test_session_aggregates_merge_their_accumulators() -> None:
    session = EventTimeSessionWindows.with_gap(10).describe()
    h = Harness(window(session, "aggregate"), "window_fns:Average")
    for value, timestamp in ((1, 0), (3, 12), (5, 8), (10, 40)):
        h.element("k", value, timestamp)
    h.watermark(60)
    assert h.out.records == [(21, 3.0), (49, 10.0)]


def test_aggregate_average() -> None:
    h = Harness(window(TUMBLING_10, "aggregate"), "window_fns:Average")
    for value, timestamp in ((1, 1), (2, 4), (6, 8), (5, 11)):
        h.element("k", value, timestamp)
    h.watermark(20)
    assert h.out.records == [(9, 3.0), (19, 5.0)]


def test_aggregate_with_a_process_window_function() -> None:
    h = Harness(window(TUMBLING_10, "aggregate", windowFunction="window_fns:WithWindowStart"),
                "window_fns:Average")
    for value, timestamp in ((2, 1), (4, 14), (6, 2)):
        h.element("k", value, timestamp)
    h.watermark(20)
    assert h.out.records == [(9, ("k", 0, 4.0)), (19, ("k", 10, 4.0))]


def test_reduce_with_a_window_function() -> None:
    h = Harness(window(TUMBLING_10, "reduce", windowFunction="window_fns:ListInputs"),
                "window_fns:SumValues")
    for value, timestamp in ((1, 1), (2, 2), (4, 12)):
        h.element("k", value, timestamp)
    h.watermark(20)
    assert h.out.records == [(9, ("k", [3])), (19, ("k", [4]))]


def test_process_window_function_sees_key_window_and_elements() -> None:
    h = Harness(window(TUMBLING_10, "process"), "window_fns:DescribeWindow")
    h.element("k", "a", 1)
    h.element("k", "c", 11)
    h.element("k", "b", 3)
    h.watermark(20)
    assert h.out.records == [(9, ("k", 0, 10, ["a", "b"], 1)), (19, ("k", 10, 20, ["c"], 2))]
    assert h.op.udf.instance.cleared == [TimeWindow(0, 10), TimeWindow(10, 20)]


def test_allowed_lateness_fires_an_update_then_drops() -> None:
    h = Harness(window(TUMBLING_10, "process", allowedLateness=5),
                "window_fns:FiringsPerWindow")
    h.element("k", 1, 1)
    h.element("k", 2, 3)
    h.watermark(9)
    h.element("k", 10, 4)  # late, within the allowed lateness: fires again at once
    h.watermark(14)  # the cleanup timer: the window is gone
    h.element("k", 100, 5)
    h.watermark(20)
    assert h.out.events == [
        ("record", 9, ("k", 0, 3, 1)), ("watermark", 9),
        ("record", 9, ("k", 0, 13, 2)),
        ("watermark", 14), ("watermark", 20),
    ]
    assert h.op.num_late_records_dropped == 1
    assert h.op.backend.snapshot() == {}  # per-window state cleared by clear(context)


def test_late_elements_go_to_the_side_output() -> None:
    h = Harness(window(TUMBLING_10, "reduce", lateDataTag="late"), "window_fns:SumValues",
                operator=SideOutputWindowOperator)
    h.element("k", 1, 1)
    h.watermark(10)
    h.element("k", 7, 2)
    h.element("k", 8, 12)
    h.watermark(20)
    op = h.op
    assert isinstance(op, SideOutputWindowOperator)
    assert op.side == [("late", 7)]
    assert op.num_late_records_dropped == 0
    assert h.out.records == [(9, 1), (19, 8)]


def test_late_elements_without_a_late_data_output_are_dropped_and_counted() -> None:
    h = Harness(window(TUMBLING_10, "reduce"), "window_fns:SumValues")
    h.element("k", 1, 1)
    h.watermark(10)
    h.element("k", 7, 2)
    h.watermark(30)
    assert h.op.num_late_records_dropped == 1
    assert h.out.records == [(9, 1)]


def test_count_tumbling_window() -> None:
    count = {"assigner": GlobalWindows.create().describe(), "kind": "reduce",
             "trigger": PurgingTrigger.of(CountTrigger.of(3)).describe()}
    h = Harness(count, "window_fns:SumValues")
    for value in range(1, 8):
        h.element("a", value)
        h.element("b", value * 10)
    h.watermark(MAX_TIMESTAMP)
    assert h.out.records == [(MAX_TIMESTAMP, 6), (MAX_TIMESTAMP, 60),
                             (MAX_TIMESTAMP, 15), (MAX_TIMESTAMP, 150)]


def test_count_sliding_window_evicts() -> None:
    count = {"assigner": GlobalWindows.create().describe(), "kind": "apply",
             "trigger": CountTrigger.of(2).describe(), "evictor": CountEvictor.of(3).describe()}
    h = Harness(count, "window_fns:ListInputs")
    for value in range(1, 8):
        h.element("a", value)
    assert [record for _, record in h.out.records] == [
        ("a", [1, 2]), ("a", [2, 3, 4]), ("a", [4, 5, 6])]


def test_evicting_reduce_with_timestamps() -> None:
    count = {"assigner": GlobalWindows.create().describe(), "kind": "reduce",
             "trigger": CountTrigger.of(2).describe(), "evictor": CountEvictor.of(3).describe()}
    h = Harness(count, "window_fns:SumValues")
    for value in range(1, 7):
        h.element("a", value, value * 100)
    assert h.out.records == [(MAX_TIMESTAMP, 3), (MAX_TIMESTAMP, 9), (MAX_TIMESTAMP, 15)]
    h.op.backend.set_current_key("a")
    h.op.backend.set_current_namespace(GlobalWindow.get())
    assert h.op.contents.get() == [(400, 4), (500, 5), (600, 6)]


def test_processing_time_tumbling_window() -> None:
    tumbling = TumblingProcessingTimeWindows.of(10).describe()
    h = Harness(window(tumbling, "reduce"), "window_fns:SumValues")
    h.advance_clock(3)
    h.element("k", 1)
    h.advance_clock(5)
    h.element("k", 2)
    h.advance_clock(8)
    assert h.out.records == []
    h.advance_clock(9)
    assert h.out.records == [(9, 3)]
    h.advance_clock(12)
    h.element("k", 4)
    h.advance_clock(25)
    assert h.out.records == [(9, 3), (19, 4)]
    assert not h.op.timers.has_timers()


def test_batch_mode_fires_every_window_in_finish() -> None:
    h = Harness(window(TUMBLING_10, "reduce"), "window_fns:SumValues", streaming=False)
    for value, timestamp in ((1, 25), (2, 3), (4, 14), (8, 7), (16, 1)):
        h.element("k", value, timestamp)
    assert h.out.records == []
    h.op.finish()
    assert h.out.events == [("record", 9, 26), ("record", 19, 4), ("record", 29, 1)]
    assert h.op.num_late_records_dropped == 0


def test_batch_mode_fires_processing_time_windows_in_finish() -> None:
    tumbling = TumblingProcessingTimeWindows.of(10).describe()
    h = Harness(window(tumbling, "reduce"), "window_fns:SumValues", streaming=False)
    h.clock.now = 4
    h.element("k", 1)
    h.element("k", 2)
    h.op.finish()
    assert h.out.records == [(9, 3)]


def test_event_time_window_without_timestamp_fails() -> None:
    h = Harness(window(TUMBLING_10, "reduce"), "window_fns:SumValues")
    with pytest.raises(OperatorFailure, match=r"without a timestamp.*assign_timestamps"):
        h.element("k", 1, None)


def test_user_function_errors_are_operator_failures() -> None:
    h = Harness(window(TUMBLING_10, "reduce"), "window_fns:SumValues")
    h.element("k", 1, 1)
    with pytest.raises(OperatorFailure, match="TypeError"):
        h.element("k", "one", 2)


def test_snapshot_is_picklable_and_restores() -> None:
    session = EventTimeSessionWindows.with_gap(10).describe()
    spec = window(session, "reduce", allowedLateness=3)
    h = Harness(spec, "window_fns:SumValues")
    h.element("k", 1, 0)
    h.element("k", 2, 15)
    h.element("j", 5, 2)
    h.watermark(1)
    snapshot = pickle.loads(pickle.dumps(h.op.snapshot_state()))
    assert all(set(data) <= {"state", "timers"} for data in snapshot.keyed.values())
    assert snapshot.watermark == 1

    restored = Harness(spec, "window_fns:SumValues")
    restored.op.initialize_state(
        RestoredState(range(128), (snapshot.keyed,), (None,), 0, True, snapshot.watermark))
    assert restored.op.timers.current_watermark == 1
    restored.element("k", 4, 7)  # bridges the restored sessions of "k"
    restored.watermark(40)
    assert restored.out.records == [(11, 5), (24, 7)]


@pytest.mark.parametrize(("spec", "message"), [
    ({"assigner": TUMBLING_10, "kind": "fold"}, "window kind"),
    ({"assigner": TUMBLING_10, "kind": "reduce", "lateness": 3}, "unknown keys"),
    ({"kind": "reduce"}, "needs an 'assigner'"),
    ({"assigner": TUMBLING_10, "kind": "reduce", "allowedLateness": -1}, "allowedLateness"),
    ({"assigner": TUMBLING_10, "kind": "process", "windowFunction": "m:f"}, "windowFunction"),
    ({"assigner": EventTimeSessionWindows.with_gap(5).describe(), "kind": "reduce",
      "trigger": {"type": "never"}}, "does not support merging"),
])
def test_bad_window_config(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        WindowConfig.parse(spec)


def test_default_trigger_comes_from_the_assigner() -> None:
    config = WindowConfig.parse({"assigner": TUMBLING_10, "kind": "reduce"})
    assert config.trigger == TumblingEventTimeWindows.of(10).get_default_trigger()
    assert config.allowed_lateness == 0
    assert config.evictor is None


@pytest.mark.parametrize("window", [
    {"kind": "process"},
    {"kind": "aggregate"},  # its merge may be a stub: Flink calls it only for merging windows
    {"kind": "reduce", "assigner": {"type": "sliding", "time": "event", "size": 1000,
                                    "slide": 5000, "offset": 0}},  # sampling: gaps between
    {"kind": "reduce", "evictor": {"type": "countEvictor", "maxCount": 2,
                                   "doEvictAfter": False}},
    {"kind": "reduce", "trigger": {"type": "count", "count": 3}},
    {"kind": "reduce", "assigner": {"type": "session", "time": "event", "gap": 1000}},
])
def test_windows_that_pre_aggregation_would_change_get_every_record(window: dict[str, Any]
                                                                    ) -> None:
    """Evictors and custom triggers see single records, sessions merge, process functions list
    the contents, aggregates may have no real merge and sampling sliding windows miss records:
    their producers ship records, and pre_aggregable says so."""
    base = {"assigner": {"type": "tumbling", "time": "event", "size": 5000, "offset": 0}}
    assert pre_aggregable({**base, "kind": "reduce"})
    assert pre_aggregable({**base, "kind": "reduce",
                           "trigger": {"type": "eventTime"}})  # the default, spelled out
    sliding = {"type": "sliding", "time": "event", "size": 6000, "slide": 2000, "offset": 0}
    assert pre_aggregable({"assigner": sliding, "kind": "reduce"})
    assert not pre_aggregable({**base, **window})
    assert not pre_aggregable({"assigner": {"type": "tumbling", "time": "processing",
                                            "size": 5000, "offset": 0}, "kind": "reduce"})
    assert not pre_aggregable({**base, "kind": "reduce", "typo": 1})  # the operator reports it
