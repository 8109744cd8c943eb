"""Without object reuse, which chained operators copy their input, and a discarding sink at the
end of a fused run: the run counts its records for it instead of calling it per record."""

from __future__ import annotations

from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.streamoperators.stream_operators import DiscardingSinkOperator
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask

pytestmark = pytest.mark.unit

RECORDS = 700


def row(index: int) -> list[int]:
    """A datagen's generator function."""
    return [index]


def _ran(*pipeline: dict[str, Any], **settings: Any) -> StreamTask:
    """The single vertex of ``pipeline`` run to its end as subtask 0 of 1."""
    (vertex,) = plan_job(compiled(*pipeline, parallelism=1, **settings)).vertices.values()
    task = StreamTask(vertex.descriptor, 0, 0)
    assert list(task.invoke(iter(()))) == []
    return task


def _sequence() -> dict[str, Any]:
    return {"name": "src", "type": "sequence", "args": {"from": 1, "to": RECORDS}}


def _counts(task: StreamTask) -> dict[str, tuple[int, int]]:
    return {name: (records_in, records_out)
            for name, records_in, records_out in task.metrics(0).operators}


def _copies(task: StreamTask) -> dict[str, bool]:
    assert task.chain is not None
    return {operator.name: operator.copy_input
            for operator in task.chain.operators if operator is not None}


def test_a_fused_run_counts_for_the_discarding_sink_it_ends_in_without_calling_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    original = DiscardingSinkOperator.open

    def spied_open(self: DiscardingSinkOperator) -> None:
        original(self)
        counting = self.process_element
        self.process_element = lambda record: (calls.append(record), counting(record))[1]

    monkeypatch.setattr(DiscardingSinkOperator, "open", spied_open)
    task = _ran(_sequence(), op("first", "map", "src"), op("even", "filter", "first"),
                op("last", "map", "even"), op("out", "discard", "last"))
    assert calls == []  # the run dropped the records itself
    counts = _counts(task)
    assert counts["last"] == (RECORDS // 2, RECORDS // 2)
    assert counts["out"] == (RECORDS // 2, 0)


def test_after_a_filter_the_discarding_sink_still_counts_what_passed() -> None:
    task = _ran(_sequence(), op("first", "map", "src"), op("even", "filter", "first"),
                op("out", "discard", "even"))
    counts = _counts(task)
    assert counts["even"] == (RECORDS, RECORDS // 2)
    assert counts["out"] == (RECORDS // 2, 0)


def test_a_single_map_before_a_discarding_sink_is_a_run_of_its_own() -> None:
    task = _ran(_sequence(), op("only", "map", "src"), op("out", "discard", "only"))
    assert task.chain is not None
    only = task.chain.operators[1]
    assert only is not None and only.process_all is not None
    assert only.process_all.__code__.co_filename == "<fused run of 1 operators>"
    assert _counts(task)["only"] == (RECORDS, RECORDS)
    assert _counts(task)["out"] == (RECORDS, 0)


@pytest.mark.parametrize(("source", "copies"), [
    (_sequence(), False),
    ({"name": "src", "type": "datagen", "args": {"numberOfRows": RECORDS,
                                                 "rowsPerSecond": 1e8}}, False),
    # What a user's generator function returns, it may keep; a collection keeps its elements.
    ({"name": "src", "type": "datagen", "function": f"{__name__}:row",
      "args": {"numberOfRows": RECORDS, "rowsPerSecond": 1e8}}, True),
    ({"name": "src", "type": "collection", "args": {"elements": [[1], [2]]}}, True),
], ids=["sequence", "datagen", "datagen-function", "collection"])
def test_the_sole_reader_of_a_sources_fresh_records_has_them_uncopied(
        source: dict[str, Any], copies: bool) -> None:
    task = _ran(source, op("reader", "map", "src"), op("then", "map", "reader"),
                op("out", "discard", "then"))
    copying = _copies(task)
    assert (copying["reader"], copying["then"]) == (copies, True)


def test_two_readers_of_fresh_records_each_get_a_copy() -> None:
    datagen = {"name": "src", "type": "datagen",
               "args": {"numberOfRows": RECORDS, "rowsPerSecond": 1e8}}
    task = _ran(datagen, op("one", "map", "src"), op("two", "map", "src"),
                op("out-one", "discard", "one"), op("out-two", "discard", "two"))
    copies = _copies(task)
    assert copies["one"] and copies["two"]


@pytest.mark.parametrize(("declared", "copies"), [
    ("LONG", False), ("STRING", False), ("DOUBLE", False), ("BIG_DEC", False),
    ("SQL_TIMESTAMP", False), ("INSTANT", False),
    # PyFlink takes a list for a tuple, and a chained operator gets the list as it was made.
    ("TUPLE<LONG, LONG>", True), ("ROW<a LONG>", True), ("LIST<LONG>", True), (None, True),
])
def test_records_of_a_declared_immutable_type_are_shared_by_every_reader(
        declared: str | None, copies: bool) -> None:
    """Flink copies a record with its type's serializer, which returns a value that cannot
    change as it is: a sequence's longs reach both readers uncopied, and so do a map's records
    when the map declares such a type."""
    typed = {"outputType": declared} if declared else {}
    task = _ran(_sequence(), op("made", "map", "src", **typed), op("one", "map", "src"),
                op("two", "map", "made"), op("three", "map", "made"),
                *(op(f"out-{name}", "discard", name) for name in ("one", "two", "three")))
    copying = _copies(task)
    assert not copying["made"] and not copying["one"]  # LONG: the sequence's own type
    assert (copying["two"], copying["three"]) == (copies, copies)


def test_with_object_reuse_nothing_is_copied() -> None:
    task = _ran(_sequence(), op("one", "map", "src"), op("two", "map", "one"),
                op("out", "discard", "two"), objectReuse=True)
    assert not any(_copies(task).values())


def test_the_sole_reader_of_kafkas_decoded_records_has_them_uncopied() -> None:
    """A JSON value is a dict decoded anew for each message: its one reader may change it."""
    kafka = {"name": "src", "type": "kafka", "args": {
        "bootstrapServers": "localhost:9092", "topics": ["in"], "valueFormat": "json"}}
    for readers, copies in ((["reader"], False), (["reader", "other"], True)):
        pipeline = [kafka, *(op(name, "map", "src") for name in readers),
                    *(op(f"out-{name}", "discard", name) for name in readers)]
        (vertex,) = plan_job(compiled(*pipeline, parallelism=1)).vertices.values()
        chain = StreamTask(vertex.descriptor, 0, 0)._create_chain()  # set up, not run: no broker
        assert {op.name: op.copy_input for op in chain.operators
                if op is not None and op.name in readers} == dict.fromkeys(readers, copies)
