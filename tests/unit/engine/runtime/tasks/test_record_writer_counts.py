"""numRecordsOut of a RecordWriter: each record written once, whatever else its frames carry
(an event-time exchange's watermarks, a two-input consumer's tags) and however many channels
a broadcast copies it to, counted as its buffers ship."""

from __future__ import annotations

import struct
from typing import Any

import pytest

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.frames import decode_batch
from dataflow_engine.runtime.tasks.record_writer import RecordWriter
from dataflow_engine.runtime.tasks.writer_factory import create_record_writer
from dataflow_engine.runtime.time.elements import ElementTimestamp, Watermark

pytestmark = pytest.mark.unit


def _writer(partitioner: PartitionerKind, *, key_selector: int | None = None,
            event_time: bool = False, input_number: int = 0
            ) -> tuple[RecordWriter, list[bytes], ElementTimestamp]:
    config = OutputConfig(
        producer=0, partitioner=partitioner, key_selector=key_selector, consumer_name="next",
        consumer_parallelism=3, consumer_max_parallelism=128, consumer_ranges=((0, 3),),
        payload=PayloadKind.KEYED if key_selector is not None else PayloadKind.RECORD,
        tag_offset=0, event_time=event_time, input_number=input_number)
    pending: list[bytes] = []
    cell = ElementTimestamp()
    writer = create_record_writer(config, TaskInfo("job", "task", 0, 1, 128, 0), pending, 4,
                                  cell)
    return writer, pending, cell


def _elements(pending: list[bytes]) -> list[Any]:
    frames = iter(pending)
    return [element for tag in frames if struct.unpack(">q", tag)[0] >= 0
            for element in decode_batch(next(frames))]


@pytest.mark.parametrize(("partitioner", "key_selector", "event_time", "input_number"), [
    (PartitionerKind.HASH, 0, True, 0),  # keyBy into a keyed operator, with timestamps
    (PartitionerKind.HASH, 0, True, 2),  # the same into a two-input operator's second input
    (PartitionerKind.REBALANCE, None, True, 0),
    (PartitionerKind.BROADCAST, None, True, 0),  # every channel gets each record
    (PartitionerKind.BROADCAST, None, False, 1),
    (PartitionerKind.REBALANCE, None, False, 0),
])
def test_records_are_counted_once_and_watermarks_not_at_all(
        partitioner: PartitionerKind, key_selector: int | None, event_time: bool,
        input_number: int) -> None:
    writer, pending, cell = _writer(partitioner, key_selector=key_selector,
                                    event_time=event_time, input_number=input_number)
    collect, collect_all = writer.bind()
    for time in range(10):  # 20 records, a watermark after every second one
        cell.value = time
        collect((f"k{time}", time))
        collect_all([(f"j{time}", time)])
        if time % 2:
            writer.emit_watermark(time)
    assert writer.counter.count <= 20  # what is still buffered is not counted yet
    writer.flush()
    assert writer.counter.count == 20
    elements = _elements(pending)
    marks = [e for e in elements if isinstance(e[-1] if input_number else e, Watermark)]
    channels = 3 if partitioner is PartitionerKind.BROADCAST else 1
    assert len(elements) == 20 * channels + len(marks)
    assert len(marks) == (15 if event_time else 0)  # 5 watermarks to each of 3 channels
