"""A RecordWriter keeps records until its batch leaves, where Flink's serializes each one as it
is emitted: without object reuse, what an operator changes after emitting it (an output object
it reuses, a list it keeps in its state and emits) must not change what was sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.api.datastream.functions import KeyedProcessFunction, RuntimeContext
from dataflow_engine.api.datastream.state import ValueStateDescriptor
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.frames import decode_batch

pytestmark = pytest.mark.unit


class ReusedOutput:
    """Java's idiom: one output object, set anew for every record."""

    def __init__(self) -> None:
        self.out: list[Any] = [None, 1]

    def map(self, value: Any) -> list[Any]:
        self.out[0] = value
        return self.out


class ReusedWords(ReusedOutput):
    """The same, for a stream declared as LIST<STRING>."""

    def __init__(self) -> None:
        self.out = [None, "1"]


class ReusedParity(ReusedOutput):
    """The same, each number keyed by its parity."""

    def map(self, value: Any) -> list[Any]:
        self.out[:] = [value % 2, value]
        return self.out


class KeepsWhatItSaw:
    """Emits its word with the list of every word so far, which it keeps and extends."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    def map(self, value: Any) -> tuple[Any, list[Any]]:
        self.seen.append(value)
        return value, self.seen


def second(first: Any, second: Any) -> Any:
    """A ReduceFunction that keeps the latest record: it returns its second argument."""
    return second


class EmitsItsState(KeyedProcessFunction):
    """Emits the list of its key's values so far, the very list it keeps in its state."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.seen = runtime_context.get_state(ValueStateDescriptor("seen"))

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        seen = self.seen.value() or []
        seen.append(value[1])
        self.seen.update(seen)
        yield seen


def _sent(*pipeline: dict[str, Any], head: str = "src", batches: Any = (),
          **settings: Any) -> list[Any]:
    """What the vertex headed by ``head`` sends downstream, as the consumer reads it."""
    plan = plan_job(compiled(*pipeline, parallelism=1, **settings))
    vertex = next(v.descriptor for v in plan.vertices.values() if v.vertex.head.name == head)
    frames = list(StreamTask(vertex, 0, 0).invoke(list(batches)))
    return [record for data in frames[1::2] for record in decode_batch(data)]


WORDS = ["a", "b", "a", "c"]
SOURCE = {"name": "src", "type": "collection", "args": {"elements": WORDS}}
REUSED = f"{__name__}:ReusedOutput"


@pytest.mark.parametrize("before", [[], [op("first", "map", "src")]], ids=["alone", "fused"])
@pytest.mark.parametrize("typed", [False, True], ids=["untyped", "typed"])
@pytest.mark.parametrize("reuse", [False, True], ids=["copies", "objectReuse"])
def test_an_output_object_reused_for_every_record_is_sent_as_it_was_emitted(
        before: list[dict[str, Any]], typed: bool, reuse: bool) -> None:
    """Also with object reuse, which lets chained operators share records, not a writer keep
    one that its operator sets anew."""
    # A declared type's records are converted, which makes them anew.
    declared = {"outputType": "LIST<STRING>"} if typed else {}
    function = f"{__name__}:ReusedWords" if typed else REUSED
    reader = before[-1]["name"] if before else "src"
    sent = _sent(SOURCE, *before, op("reused", "map", reader, function=function, **declared),
                 op("out", "collect", {"from": "reused", "partitioning": "rebalance"}),
                 objectReuse=reuse)
    assert sent == [[word, "1" if typed else 1] for word in WORDS]


def test_a_converted_record_is_copied_where_its_type_keeps_objects_as_they_are() -> None:
    """A PICKLED_BYTE_ARRAY field is handed on as it is when its tuple is converted."""
    sent = _sent(SOURCE, op("seen", "map", "src", function=f"{__name__}:KeepsWhatItSaw",
                            outputType="TUPLE<STRING, PICKLED_BYTE_ARRAY>"),
                 op("out", "collect", {"from": "seen", "partitioning": "rebalance"}))
    assert sent == [(word, WORDS[:index + 1]) for index, word in enumerate(WORDS)]


@pytest.mark.parametrize("windowed", [False, True], ids=["reduce", "window reduce"])
@pytest.mark.parametrize("reuse", [False, True], ids=["copies", "objectReuse"])
def test_a_reduce_that_returns_its_second_argument_keeps_a_record_of_its_own(
        windowed: bool, reuse: bool) -> None:
    """Pre-aggregated in BATCH mode at the producer: the partial that ships is the record the
    reduce function returned, which must not be the object its upstream sets anew."""
    reduce = op("latest", "reduce", {"from": "reused", "keyBy": 0},
                function=f"{__name__}:second")
    stamps = []
    if windowed:
        stamps = [op("stamped", "timestamps", "reused", watermarkStrategy={
            "type": "forMonotonousTimestamps", "timestampField": 1})]
        reduce = {**op("latest", "window", {"from": "stamped", "keyBy": 0},
                       function=f"{__name__}:second"),
                  "window": {"assigner": {"type": "tumbling", "time": "event", "size": "1m"},
                             "kind": "reduce"}}
    sent = _sent({"name": "src", "type": "collection", "args": {"elements": [1, 2, 3, 4]}},
                 op("reused", "map", "src", function=f"{__name__}:ReusedParity"), *stamps,
                 reduce, op("out", "collect", "latest"), runtimeMode="BATCH",
                 objectReuse=reuse)
    # Partials: (key, window start, window end, partial, count); (key, partial, None, count).
    partials = [element[3] if windowed else element[1] for element in sent]
    # The latest record of each parity: (0, 4) and (1, 3), not the object as it was set last.
    assert sorted(tuple(partial) for partial in partials) == [(0, 4), (1, 3)]


def test_a_pre_aggregating_writer_keeps_a_copy_of_the_first_record_of_each_key() -> None:
    sent = _sent(SOURCE, op("reused", "map", "src", function=REUSED),
                 op("counts", "sum", {"from": "reused", "keyBy": 0}),
                 op("out", "collect", "counts"), runtimeMode="BATCH")
    # Partials (key, first record, sum, count): each first record is its own key's.
    assert sorted((key, first[0], total) for key, first, total, _ in sent) == [
        ("a", "a", 2), ("b", "b", 1), ("c", "c", 1)]


def test_a_list_a_function_keeps_in_its_state_is_sent_as_it_was_when_emitted() -> None:
    sent = _sent(SOURCE, op("seen", "process", {"from": "src", "keyBy": 0},
                            function=f"{__name__}:EmitsItsState"),
                 op("out", "collect", {"from": "seen", "partitioning": "rebalance"}),
                 head="seen", batches=[[(word, (word, index)) for index, word in enumerate(WORDS)]],
                 runtimeMode="STREAMING")
    assert sent == [[0], [1], [0, 2], [3]]
