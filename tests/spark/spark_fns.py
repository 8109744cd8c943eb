"""Top-level user functions the Spark tests reference as ``spark_fns:<name>``.

pytest puts this directory on sys.path (no ``__init__.py``) and the runner propagates the
driver's sys.path to local Spark workers, so executors import this module by that name.
Functions that need to leave evidence outside their records append lines to
``events_path(job_name)``, a file the test reads after the run.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from dataflow_engine.api.common import Time, TimestampAssigner, Types, Watermark
from dataflow_engine.api.datastream import (
    BroadcastProcessFunction,
    KeyedBroadcastProcessFunction,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    OutputTag,
    ProcessFunction,
    ReduceFunction,
    RuntimeContext,
)
from dataflow_engine.api.datastream.state import (
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateTtlConfig,
    ValueStateDescriptor,
)
from dataflow_engine.runtime.functions.process_context import KeyedProcessContext


def events_path(job_name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"dataflow-test-{job_name}.events")


def _record_event(job_name: str, line: str) -> None:
    with open(events_path(job_name), "a", encoding="utf-8") as f:
        f.write(line + "\n")


class TagSubtask:
    """Rich map: ``value -> (index_of_this_subtask, value)``."""

    def open(self, ctx: RuntimeContext) -> None:
        self.index = ctx.index_of_this_subtask

    def map(self, value: Any) -> tuple[int, Any]:
        return (self.index, value)


class ContextSnapshot:
    """Rich map emitting everything its runtime context says, once per subtask."""

    def open(self, ctx: RuntimeContext) -> None:
        self.ctx = ctx
        self.sent = False

    def flat_map(self, value: Any) -> list[dict[str, Any]]:
        if self.sent:
            return []
        self.sent = True
        c = self.ctx
        return [{"index": c.index_of_this_subtask, "parallelism": c.number_of_parallel_subtasks,
                 "max": c.max_number_of_parallel_subtasks, "attempt": c.attempt_number,
                 "task": c.task_name, "job": c.job_name, "operator": c.operator_name}]


class LifecycleRecorder:
    """Map or filter that records when it is opened and closed, and which record it saw."""

    def open(self, ctx: RuntimeContext) -> None:
        self.ctx = ctx
        _record_event(ctx.job_name, f"open {ctx.operator_name} {ctx.index_of_this_subtask}")

    def map(self, value: Any) -> Any:
        return value

    def filter(self, value: Any) -> bool:
        return True

    def close(self) -> None:
        ctx = self.ctx
        _record_event(ctx.job_name, f"close {ctx.operator_name} {ctx.index_of_this_subtask}")


class CountCalls:
    """Identity map that records, when closed, how many records its subtask attempt saw."""

    def open(self, ctx: RuntimeContext) -> None:
        self.ctx = ctx
        self.calls = 0

    def map(self, value: Any) -> Any:
        self.calls += 1
        return value

    def close(self) -> None:
        ctx = self.ctx
        _record_event(ctx.job_name, f"{ctx.index_of_this_subtask} {ctx.attempt_number} "
                                    f"{self.calls}")


class RememberOutput:
    """Emits a fresh dict per record and reports whether its previous output was mutated
    downstream (only possible with object reuse)."""

    def open(self, ctx: RuntimeContext) -> None:
        self.previous: dict[str, Any] | None = None

    def map(self, value: Any) -> dict[str, Any]:
        seen = bool(self.previous is not None and self.previous.get("mutated"))
        out = {"value": value, "previous_mutated": seen}
        self.previous = out
        return out


def mutate(record: dict[str, Any]) -> dict[str, Any]:
    record["mutated"] = True
    return {"value": record["value"], "previous_mutated": record["previous_mutated"]}


def fail_on_three(value: int) -> int:
    if value == 3:
        raise ValueError(f"bad record {value}")
    return value


class FailFirstAttempt:
    """Fails subtask 0's first attempt after it has emitted a few records."""

    def open(self, ctx: RuntimeContext) -> None:
        self.fail = ctx.index_of_this_subtask == 0 and ctx.attempt_number == 0
        self.seen = 0

    def map(self, value: Any) -> tuple[int, str]:
        self.seen += 1
        if self.fail and self.seen == 4:
            raise RuntimeError("injected failure of the first attempt")
        return (value, f"v{value}")


class RunningCount(KeyedProcessFunction):
    """``(key, how many records of this key so far)``, counted in keyed ValueState."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> Iterator[Any]:
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield ctx.get_current_key(), count


class DistinctPerKey:
    """Emits a record the first time its key sees its number (MapState as a set)."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_map_state(MapStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> list[Any]:
        if self.seen.contains(value[1]):
            return []
        self.seen.put(value[1], True)
        return [value]


class TimestampOfField1(TimestampAssigner):
    def extract_timestamp(self, value: Any, record_timestamp: int) -> int:
        return int(value[1])


class PunctuatedByField2:
    """A punctuated WatermarkGenerator: a record whose third field is true carries a watermark
    at its timestamp."""

    def on_event(self, event: Any, event_timestamp: int, output: Any) -> None:
        if len(event) > 2 and event[2]:
            output.emit_watermark(Watermark(event_timestamp))

    def on_periodic_emit(self, output: Any) -> None:
        pass


class TimestampAndWatermark(KeyedProcessFunction):
    """``(key, value, ctx.timestamp(), current watermark)`` per record."""

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> Iterator[Any]:
        yield (ctx.get_current_key(), value[1], ctx.timestamp(),
               ctx.timer_service().current_watermark())


class SumUntilTimer(KeyedProcessFunction):
    """Sums a key's values and emits ``(key, sum, timer time)`` from an event-time timer 10 ms
    after the key's first record; a second timer at the same time is registered only once."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.total = runtime_context.get_reducing_state(
            ReducingStateDescriptor("total", lambda a, b: a + b))
        self.deadline = runtime_context.get_state(ValueStateDescriptor("deadline"))

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> None:
        self.total.add(value[1])
        if self.deadline.value() is None:
            self.deadline.update(ctx.timestamp() + 10)
        ctx.timer_service().register_event_time_timer(self.deadline.value())

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield ctx.get_current_key(), self.total.get(), timestamp, ctx.timestamp()
        self.total.clear()
        self.deadline.clear()


def first_letter(word: str) -> str:
    return word[0]


def longest(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    return a if len(a[0]) >= len(b[0]) else b


def slow_identity(value: Any) -> Any:
    import time

    time.sleep(0.02)
    return value


def wordcount_spec() -> Any:
    """A ``dataflow run spark_fns:wordcount_spec`` target: a no-argument callable."""
    from dataflow_engine.spec.model import DataflowJobSpec

    return DataflowJobSpec.model_validate({
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "collection", "args": {"elements": ["b a", "a c a"]}},
            {"name": "tokenize", "type": "flat_map", "inputs": ["source"],
             "function": "split_words"},
            {"name": "counts", "type": "sum", "inputs": [{"from": "tokenize", "keyBy": 0}],
             "args": {"field": 1}},
            {"name": "out", "type": "print", "inputs": ["counts"], "args": {"identifier": "wc"}},
        ],
    })


class EnvironmentLike:
    """Duck-types a StreamExecutionEnvironment: ``build_job(name)`` returns the job."""

    def build_job(self, name: str) -> Any:
        from dataflow_engine.spec.model import DataflowJob

        return DataflowJob.model_validate({"metadata": {"name": name},
                                           "spec": wordcount_spec().model_dump(by_alias=True)})


def add_amounts(a: Any, b: Any) -> Any:
    """ReduceFunction of ``(key, time, watermark flag, amount)`` records."""
    return (a[0], max(a[1], b[1]), False, a[3] + b[3])


class CountAndSumWithoutMerge:
    """AggregateFunction over ``(key, time, flag, amount)`` records: ``(count, total)``, with no
    ``merge``, so its accumulators cannot be combined elsewhere."""

    def create_accumulator(self) -> tuple[int, int]:
        return 0, 0

    def add(self, value: Any, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator[0] + 1, accumulator[1] + value[3]

    def get_result(self, accumulator: tuple[int, int]) -> tuple[int, int]:
        return accumulator


class CountAndSum(CountAndSumWithoutMerge):
    """``(count, total)`` with ``merge``."""

    def merge(self, a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
        return a[0] + b[0], a[1] + b[1]


class OpenedAddAmounts(ReduceFunction):
    """``add_amounts`` as a rich function: it fails unless ``open`` ran in its own subtask."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()

    def reduce(self, a: Any, b: Any) -> Any:
        if not hasattr(self, "subtask"):
            raise RuntimeError("reduce called before open")
        return add_amounts(a, b)


class WindowContents:
    """ProcessWindowFunction: ``(key, start, end, sorted amounts)`` of each firing."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Any]:
        window = context.window()
        yield key, window.start, window.end, sorted(e[3] for e in elements)


class WithWindow:
    """ProcessWindowFunction after an aggregate: ``(key, start, result)``."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Any]:
        for element in elements:
            yield key, context.window().start, element


class AllContents:
    """ProcessAllWindowFunction: ``(start, sorted amounts)``."""

    def process(self, context: Any, elements: Any) -> Iterator[Any]:
        yield context.window().start, sorted(e[3] for e in elements)


def constant_key(record: Any) -> int:
    return 0


class Amounts:
    """ProcessWindowFunction for any window: ``(key, sorted amounts)``."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Any]:
        yield key, sorted(e[3] for e in elements)


LARGE = OutputTag("large")


class SplitLarge(KeyedProcessFunction):
    """Amounts of 100 or more go to the 'large' side output, the rest to the main output."""

    def process_element(self, value: Any, ctx: KeyedProcessContext) -> Iterator[Any]:
        if value[3] >= 100:
            yield LARGE, (value[0], value[3])
        else:
            yield value[0], value[3]


class Tag(ProcessFunction):
    """A ProcessFunction: ``(value, ctx.timestamp())``; odd amounts also to side output 'odd'."""

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        yield value[0], ctx.timestamp()
        if value[3] % 2:
            yield ODD, value[3]


ODD = OutputTag("odd")


class TimerWithoutKey(ProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> None:
        ctx.timer_service().register_event_time_timer(10)


class TagInputs:
    """A CoMapFunction: which input a record came in on."""

    def map1(self, value: Any) -> Any:
        return "left", value

    def map2(self, value: Any) -> Any:
        return "right", value


class RepeatRight:
    """A CoFlatMapFunction: input 1 passes, input 2's numbers repeat as often as they say."""

    def flat_map1(self, value: Any) -> Iterator[Any]:
        yield value

    def flat_map2(self, value: Any) -> Iterator[Any]:
        yield from [value] * int(value)


class EnrichWithLatestRate(KeyedCoProcessFunction):
    """Orders (input 1) wait for their currency's rate (input 2); each rate releases the
    orders waiting for it and is kept for later orders. An event-time timer 100 ms after an
    order reports it unmatched if no rate came by then."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.rate = runtime_context.get_state(ValueStateDescriptor("rate"))
        self.waiting = runtime_context.get_list_state(ListStateDescriptor("waiting"))

    def process_element1(self, order: Any, ctx: Any) -> Iterator[Any]:
        rate = self.rate.value()
        if rate is not None:
            yield order[0], order[3] * rate
        else:
            self.waiting.add(order)
            ctx.timer_service().register_event_time_timer(ctx.timestamp() + 100)

    def process_element2(self, rate: Any, ctx: Any) -> Iterator[Any]:
        self.rate.update(rate[3])
        for order in self.waiting.get():
            yield order[0], order[3] * rate[3]
        self.waiting.clear()

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        for order in self.waiting.get():
            yield UNMATCHED, order[0]
        self.waiting.clear()


UNMATCHED = OutputTag("unmatched")


def currency_of_order(order: Any) -> str:
    return str(order[4])


class PairUp:
    """A ProcessJoinFunction: ``(key, left amount, right amount, ctx.get_timestamp())``."""

    def process_element(self, left: Any, right: Any, ctx: Any) -> Iterator[Any]:
        yield left[0], left[3], right[3], ctx.get_timestamp()


class Pair:
    """A JoinFunction: ``(key, first amount, second amount)``."""

    def join(self, first: Any, second: Any) -> Any:
        return first[0], first[3], second[3]


class CountSides:
    """A CoGroupFunction: ``(key, firsts, seconds)`` amounts of a key's window."""

    def co_group(self, firsts: Any, seconds: Any) -> Iterator[Any]:
        key = (list(firsts) or list(seconds))[0][0]
        yield key, sorted(f[3] for f in firsts), sorted(s[3] for s in seconds)


THRESHOLDS = MapStateDescriptor("thresholds")
BUFFERED = ListStateDescriptor("buffered")


class Alerts(KeyedBroadcastProcessFunction):
    """Events (key, value) above their kind's threshold, whichever of an event and its
    threshold (broadcast (kind, threshold)) arrives first: events wait in keyed state."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.buffered = runtime_context.get_list_state(BUFFERED)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        threshold = ctx.get_broadcast_state(THRESHOLDS).get(value[0])
        if threshold is None:
            self.buffered.add(value)
        elif value[1] > threshold:
            yield "alert", value[0], value[1]

    def process_broadcast_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        ctx.get_broadcast_state(THRESHOLDS).put(value[0], value[1])
        released: list[Any] = []

        def release(key: Any, state: Any) -> None:
            waiting = [v for v in state.get() if v[0] == value[0]]
            released.extend(v for v in waiting if v[1] > value[1])
            state.update([v for v in state.get() if v[0] != value[0]])

        ctx.apply_to_keyed_state(BUFFERED, release)
        for event in released:
            yield "alert", event[0], event[1]


class WritesBroadcastState(BroadcastProcessFunction):
    def process_element(self, value: Any, ctx: Any) -> None:
        ctx.get_broadcast_state(THRESHOLDS).put("x", 1)

    def process_broadcast_element(self, value: Any, ctx: Any) -> None:
        pass


class RememberBriefly(KeyedProcessFunction):
    """Keyed state with a 100 ms time-to-live: ``(key, value, what the state held)``; a record
    whose third field is true waits 300 ms first, so the state has expired by then."""

    def open(self, runtime_context: RuntimeContext) -> None:
        descriptor = ValueStateDescriptor("last")
        descriptor.enable_time_to_live(StateTtlConfig.new_builder(Time.milliseconds(100))
                                       .build())
        self.last = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        if value[2]:
            time.sleep(0.3)
        yield value[0], value[1], self.last.value()
        self.last.update(value[1])


def add_amounts_refusing_13(a: Any, b: Any) -> Any:
    """``add_amounts`` that fails on an amount of 13."""
    if 13 in (a[3], b[3]):
        raise ValueError("amount 13 refused")
    return add_amounts(a, b)


def parity(value: int) -> int:
    return value % 2


def add(a: int, b: int) -> int:
    return a + b


def timed_event(index: int) -> tuple[int, int, bool, int]:
    """GeneratorFunction of datagen sources: record ``i`` is ``(i % 7, i ms, False, i % 5)``
    (the ``(key, time, watermark flag, amount)`` shape ``add_amounts`` reduces)."""
    return (index % 7, index, False, index % 5)


class PageClicks:
    """ProcessFunction of kafka click records: ``(page, its Kafka timestamp, n)``."""

    def process_element(self, value: Any, ctx: Any) -> Any:
        yield value["page"], ctx.timestamp(), value["n"]


page_clicks = PageClicks


def add_page_clicks(a: Any, b: Any) -> Any:
    """ReduceFunction of ``(page, timestamp, n)``: the latest timestamp, the total."""
    return a[0], max(a[1], b[1]), a[2] + b[2]


def page_of_click(record: Any) -> Any:
    """MapFunction of keyed kafka click records: ``(key, page)``."""
    key, value = record
    return key, value["page"]


class FailOnceInJob:
    """Identity map whose subtask 0 fails once per job (a marker file beside the job's
    events), at its 1,500th record."""

    def open(self, ctx: RuntimeContext) -> None:
        self.marker = events_path(ctx.job_name) + ".failed"
        self.index, self.seen = ctx.index_of_this_subtask, 0

    def map(self, value: Any) -> Any:
        self.seen += 1
        if self.index == 0 and self.seen == 1500 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            raise RuntimeError("injected failure, once per job")
        return value
