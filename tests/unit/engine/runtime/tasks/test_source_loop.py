"""A source pushes its split through its chain a chunk at a time, into a fused run's loop, and
so does a consumer's input: each record still passes the whole chain before the next one is
read, as in Flink, across chunk boundaries too, and the operators' counts are those of one
record at a time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.streamoperators.stream_operators import SequenceSource
from dataflow_engine.runtime.taskmanager import stream_task
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.frames import decode_batch

pytestmark = pytest.mark.unit

RECORDS = 2 * stream_task._CHUNK + 3  # three chunks, the last one short
#: What the timestamp assigner of a test saw: ``(record, the timestamp it came with)``.
SEEN: list[tuple[int, int]] = []


def ten_times(value: int, record_timestamp: int) -> int:
    return value * 10


def seen_timestamp(value: int, record_timestamp: int) -> int:
    SEEN.append((value, record_timestamp))
    return record_timestamp


def echo_twice(value: int) -> Iterator[int]:
    """Prints what it was given, fails on the second chunk's first record, else yields the
    record and its negation."""
    print("in", value)
    if value == stream_task._CHUNK + 1:
        raise ValueError(f"no {value}")
    yield value
    yield -value


def not_negative(value: int) -> int:
    if value < 0:
        raise ValueError(f"negative {value}")
    return value


def _timestamps(name: str, source: Any, function: str) -> dict[str, Any]:
    """A timestamp assigner (this module's ``function``) with monotonous watermarks."""
    return {"name": name, "type": "timestamps", "inputs": [source],
            "function": f"{__name__}:{function}",
            "watermarkStrategy": {"type": "forMonotonousTimestamps"}}


def test_each_record_passes_the_whole_chain_before_the_next(
        capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_job(compiled(
        {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}},
        op("before", "map", "src", function="api_fns:noisy"),
        op("even", "filter", "before"),
        op("after", "map", "even", function="api_fns:noisy"),
        op("out", "print", "after"), parallelism=1))
    (vertex,) = plan.vertices.values()
    task = StreamTask(vertex.descriptor, 0, 0)
    assert list(task.invoke(iter(()))) == []
    expected = []
    for value in range(1, RECORDS + 1):
        expected.append(f"saw {value}")
        if value % 2 == 0:
            expected += [f"saw {value}", f"{value}"]
    assert capsys.readouterr().out.splitlines() == expected
    assert task.chain is not None  # the maps and the filter ran as one fused loop
    run_head = task.chain.operators[1]
    assert run_head is not None and run_head.name == "before"
    assert run_head.process_all.__code__.co_filename == "<fused run of 3 operators>"
    counts = {name: records_in for name, records_in, _ in task.metrics(0).operators}
    assert counts == {"src": 0, "before": RECORDS, "even": RECORDS, "after": RECORDS // 2,
                      "out": RECORDS // 2}


def test_a_source_feeds_an_operator_without_a_loop_of_its_own_record_by_record(
        capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_job(compiled(
        {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}},
        op("out", "print", "src"), parallelism=1))
    (vertex,) = plan.vertices.values()
    list(StreamTask(vertex.descriptor, 0, 0).invoke(iter(())))
    assert capsys.readouterr().out.splitlines() == [str(v) for v in range(1, RECORDS + 1)]


def _flat_map_task(*after: dict[str, Any]) -> StreamTask:
    plan = plan_job(compiled(
        {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}},
        op("twice", "flat_map", "src", function=f"{__name__}:echo_twice"), *after,
        parallelism=1))
    (vertex,) = plan.vertices.values()
    return StreamTask(vertex.descriptor, 0, 0)


def test_a_flat_map_loops_over_a_chunk_itself_and_fails_as_itself(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A flat_map behind a source takes each chunk in a loop of its own; each of its inputs
    still passes the whole chain before the next, its function's failure is the flat_map's,
    and what came before the failure went on."""
    task = _flat_map_task(op("out", "print", "twice"))
    with pytest.raises(OperatorFailure) as failed:
        list(task.invoke(iter(())))
    assert failed.value.failure.operator == "twice"
    assert failed.value.failure.message == f"no {stream_task._CHUNK + 1}"
    assert task.chain is not None and task.chain.operators[1].process_all is not None
    expected = []
    for value in range(1, stream_task._CHUNK + 1):
        expected += [f"in {value}", str(value), str(-value)]
    assert capsys.readouterr().out.splitlines() == [*expected, f"in {stream_task._CHUNK + 1}"]
    counts = {name: records_in for name, records_in, _ in task.metrics(0).operators}
    assert counts == {"src": 0, "twice": stream_task._CHUNK + 1,
                      "out": 2 * stream_task._CHUNK}


def test_a_failure_after_a_flat_map_is_the_operator_that_failed() -> None:
    task = _flat_map_task(op("check", "map", "twice", function=f"{__name__}:not_negative"),
                          op("out", "discard", "check"))
    with pytest.raises(OperatorFailure) as failed:
        list(task.invoke(iter(())))
    assert (failed.value.failure.operator, failed.value.failure.message) == (
        "check", "negative -1")


def test_a_record_is_read_only_when_the_chain_takes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source tells the chain about the record it just read (a Kafka record's timestamp
    and partition) as it reads it: the chain sees each record's own."""

    def stamped(self: SequenceSource) -> Any:
        for value in range(1, RECORDS + 1):
            self.time.timestamp.value = value * 10
            yield value

    monkeypatch.setattr(SequenceSource, "records", stamped)
    SEEN.clear()
    plan = plan_job(compiled(
        {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}},
        _timestamps("stamp", "src", "seen_timestamp"),
        op("then", "map", "stamp"), op("out", "discard", "then"),
        parallelism=1, runtimeMode="STREAMING"))
    (vertex,) = plan.vertices.values()
    list(StreamTask(vertex.descriptor, 0, 0).invoke(iter(())))
    assert [(value, value * 10) for value in range(1, RECORDS + 1)] == SEEN


def test_an_inputs_records_reach_a_fused_head_in_chunks_each_with_its_own_timestamp() -> None:
    """A consumer's input goes through its head's loop a chunk at a time too, and the input's
    valve sets each record's timestamp as the chain takes that record."""
    SEEN.clear()
    plan = plan_job(compiled(
        {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}},
        _timestamps("stamp", "src", "ten_times"),
        _timestamps("seen", {"from": "stamp", "partitioning": "rebalance"}, "seen_timestamp"),
        op("then", "map", "seen"), op("out", "discard", "then"),
        parallelism=1, runtimeMode="STREAMING"))
    producer, consumer = (vertex.descriptor for vertex in plan.vertices.values())
    frames = list(StreamTask(producer, 0, 0).invoke(iter(())))
    task = StreamTask(consumer, 0, 0)
    list(task.invoke(decode_batch(batch) for batch in frames[1::2]))
    assert [(value, value * 10) for value in range(1, RECORDS + 1)] == SEEN
    assert task.chain is not None and task.chain.head.process_all is not None
    assert task.chain.head.process_all.__code__.co_filename == "<fused run of 2 operators>"
    counts = {name: records_in for name, records_in, _ in task.metrics(0).operators}
    assert counts == {"seen": RECORDS, "then": RECORDS, "out": RECORDS}
