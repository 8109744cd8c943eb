"""A keyed exchange into a one-input consumer ships its batches as columns: the records, their
keys and their timestamps, with watermarks and statuses at their places among them. Read
back, a batch is the rows a row batch would hold, and what its records share stays shared."""

from __future__ import annotations

import struct
from typing import Any

import pytest
from graph_specs import compiled, op

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.spark.spark_plan import plan_job
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.columnar_writer import ColumnarRecordWriter
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.frames import COLUMNS, MARSHALLED, Columns, decode_batch
from dataflow_engine.runtime.tasks.record_writer import RecordWriter
from dataflow_engine.runtime.tasks.writer_factory import create_record_writer
from dataflow_engine.runtime.time.elements import ElementTimestamp, Watermark, WatermarkStatus
from dataflow_engine.types import Types as T

pytestmark = pytest.mark.unit


def _writer(*, payload: PayloadKind = PayloadKind.KEYED, event_time: bool = True,
            channels: int = 1, batch_size: int = 100, input_number: int = 0,
            record_type: Any = None) -> tuple[RecordWriter, list[bytes], ElementTimestamp]:
    config = OutputConfig(
        producer=0, partitioner=PartitionerKind.HASH, key_selector=0, consumer_name="next",
        consumer_parallelism=channels, consumer_max_parallelism=128,
        consumer_ranges=((0, channels),), payload=payload, tag_offset=0,
        event_time=event_time, input_number=input_number, record_type=record_type)
    pending: list[bytes] = []
    cell = ElementTimestamp()
    writer = create_record_writer(config, TaskInfo("job", "task", 0, 1, 128, 0), pending,
                                  batch_size, cell)
    return writer, pending, cell


def _batches(pending: list[bytes]) -> list[tuple[int, bytes]]:
    return [(struct.unpack(">q", pending[i])[0], pending[i + 1])
            for i in range(0, len(pending), 2)]


def test_a_keyed_event_time_batch_reads_back_as_the_rows_it_stands_for() -> None:
    writer, pending, cell = _writer()
    assert isinstance(writer, ColumnarRecordWriter)
    collect, collect_all = writer.bind()
    cell.value = 5
    collect(("a", 1))
    writer.emit_watermark(4)  # after one record
    cell.value = 7
    collect_all([("b", 2), ("a", 3)])
    writer.emit_watermark_status(True)
    writer.emit_watermark(6)
    writer.flush()
    ((tag, data),) = _batches(pending)
    assert tag == 0 and data.startswith(COLUMNS)
    batch = decode_batch(data)
    assert isinstance(batch, Columns)
    assert (batch.stamps, batch.keys, batch.records) == ([5, 7, 7], ["a", "b", "a"],
                                                          [("a", 1), ("b", 2), ("a", 3)])
    assert [position for position, _ in batch.marks] == [1, 3, 3]
    assert list(batch) == [(5, ("a", ("a", 1))), Watermark(4, 0), (7, ("b", ("b", 2))),
                           (7, ("a", ("a", 3))), WatermarkStatus(True, 0), Watermark(6, 0)]
    assert writer.counter.count == 3  # records, not marks


def test_what_records_share_stays_shared() -> None:
    writer, pending, cell = _writer()
    collect, _ = writer.bind()
    cell.value = 1
    shared = ["shared"]
    record = ("a key of some length", shared, shared)
    collect(record)
    collect(record)
    writer.flush()
    batch = decode_batch(_batches(pending)[0][1])
    assert isinstance(batch, Columns)
    first, second = batch.records
    assert first is second and first[1] is first[2]
    assert batch.keys is not None and batch.keys[0] is first[0]  # the key is the record's field


def test_each_channel_ships_its_own_columns_and_a_full_one_ships_at_once() -> None:
    writer, pending, cell = _writer(channels=2, batch_size=3)
    collect, _ = writer.bind()
    keys = [f"k{i}" for i in range(12)]
    for i, key in enumerate(keys):
        cell.value = i
        collect((key, i))
    shipped = sum(len(decode_batch(data).records)  # type: ignore[union-attr]
                  for _, data in _batches(pending))
    assert shipped == writer.counter.count and shipped >= 9  # full batches of 3 left
    writer.flush()
    rows: dict[int, list[Any]] = {0: [], 1: []}
    for tag, data in _batches(pending):
        rows[tag] += list(decode_batch(data))
    assert sorted(rows[0] + rows[1]) == sorted((i, (key, (key, i)))
                                               for i, key in enumerate(keys))
    assert rows[0] and rows[1]  # keys of both channels


def test_an_idle_producer_ships_its_watermarks_when_a_batch_of_them_is_full() -> None:
    writer, pending, _ = _writer(batch_size=4)
    for timestamp in range(4):
        writer.emit_watermark(timestamp)
    ((_, data),) = _batches(pending)
    assert list(decode_batch(data)) == [Watermark(t, 0) for t in range(4)]
    assert writer.counter.count == 0


def test_keyed_records_alone_travel_as_a_list_marshalled_when_their_type_is_plain() -> None:
    writer, pending, _ = _writer(payload=PayloadKind.RECORD, event_time=False,
                                 record_type=T.TUPLE([T.STRING(), T.INT()]))
    collect, _ = writer.bind()
    collect(("a", 1))
    writer.flush()
    ((_, data),) = _batches(pending)
    assert data.startswith(MARSHALLED) and decode_batch(data) == [("a", 1)]


def test_a_two_input_consumers_keyed_input_keeps_its_rows() -> None:
    writer, pending, cell = _writer(input_number=2)
    assert not isinstance(writer, ColumnarRecordWriter)
    collect, _ = writer.bind()
    cell.value = 3
    collect(("a", 1))
    writer.flush()
    assert decode_batch(_batches(pending)[0][1]) == [(2, (3, ("a", ("a", 1))))]


def test_a_keyed_consumer_without_event_time_reads_key_columns_as_it_reads_rows() -> None:
    """A rolling sum behind keyBy: the same output from a batch of columns and from rows."""
    plan = plan_job(compiled(
        {"name": "src", "type": "collection", "args": {"elements": [["a", 1]]}},
        op("total", "sum", {"from": "src", "keyBy": 0}), op("out", "collect", "total"),
        runtimeMode="STREAMING"))
    consumer = next(v.descriptor for v in plan.vertices.values()
                    if v.vertex.head.name == "total")
    assert consumer.outputs == () and not consumer.input_event_time
    records = [("a", 1), ("b", 2), ("a", 3), ("a", 4)]
    keys = [record[0] for record in records]

    def output(batch: Any) -> list[Any]:
        task = StreamTask(consumer, 0, 0)
        frames = list(task.invoke([batch]))
        return [record for data in frames[1::2] for record in decode_batch(data)]

    by_rows = output(list(zip(keys, records, strict=True)))
    assert by_rows == [("a", 1), ("b", 2), ("a", 4), ("a", 8)]
    assert output(Columns(None, keys, records, [])) == by_rows
