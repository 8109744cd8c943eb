"""Watermarks into a keyed operator behind a union, driven element by element through a real
StreamTask: the task's watermark is the minimum over its input channels, an idle channel is
left out until it is active again, and the watermark never goes back."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest
from graph_specs import union_consumer

from dataflow_engine.runtime.taskmanager.stream_task import StreamTask
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.frames import Batch, Columns
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark, WatermarkStatus
from dataflow_engine.spec.model import RuntimeMode

pytestmark = pytest.mark.unit

def _record(key: str, timestamp: int) -> tuple[int, tuple[str, list[Any]]]:
    return timestamp, (key, [key, timestamp])


def _as_columns(elements: list[Any]) -> Columns:
    """The batch a keyed exchange's ColumnarRecordWriter would have sent for these rows."""
    stamps: list[int | None] = []
    keys: list[Any] = []
    records: list[Any] = []
    marks: list[tuple[int, Any]] = []
    for element in elements:
        if isinstance(element, tuple):
            stamp, (key, record) = element
            stamps.append(stamp)
            keys.append(key)
            records.append(record)
        else:
            marks.append((len(records), element))
    return Columns(stamps, keys, records, marks)


@pytest.mark.parametrize("batching", ["rows", "columns", "both"])
def test_the_minimum_over_channels_with_an_idle_one_left_out(batching: str) -> None:
    descriptor = union_consumer()
    assert descriptor.input_event_time
    assert descriptor.input_channels[0] == {1: (0, 1)}  # one channel per stamping producer
    elements = [
        _record("a", 10),
        Watermark(10, 0),                 # channel 1 is still at MIN: no progress
        _record("b", 5),
        WatermarkStatus(True, 1),         # channel 1 idle: channel 0 alone decides -> 10
        _record("a", 20),
        Watermark(30, 0),                 # -> 30
        WatermarkStatus(False, 1),
        Watermark(15, 1),                 # active again, behind: the watermark stays 30
        _record("b", 31),
        Watermark(40, 1),
        Watermark(50, 0),                 # min(50, 40) -> 40
        _record("a", 45),
    ]
    # Decoded batches of rows, of columns, or both (a union of a keyed producer, which ships
    # columns, and another); out come (tag, pickled batch) pairs.
    batches: list[Batch] = {"rows": [elements], "columns": [_as_columns(elements)],
                            "both": [_as_columns(elements[:5]), elements[5:9],
                                     _as_columns(elements[9:])]}[batching]
    assert [element for batch in batches for element in batch] == elements
    frames = list(StreamTask(descriptor, 0, 0).invoke(batches))
    records = [record for batch in frames[1::2] for record in pickle.loads(batch)]
    assert records == [("a", 10, MIN_TIMESTAMP), ("b", 5, MIN_TIMESTAMP), ("a", 20, 10),
                       ("b", 31, 30), ("a", 45, 40)]


def test_batch_mode_ignores_watermarks_and_keeps_timestamps() -> None:
    descriptor = union_consumer()
    batch = dataclasses.replace(descriptor, runtime_mode=RuntimeMode.BATCH)
    frames = list(StreamTask(batch, 0, 0).invoke([[_record("a", 10), Watermark(MAX_TIMESTAMP, 0),
                                                    Watermark(MAX_TIMESTAMP, 1),
                                                    _record("a", 20)]]))
    records = [r for batch_bytes in frames[1::2] for r in pickle.loads(batch_bytes)]
    assert records == [("a", 10, MIN_TIMESTAMP), ("a", 20, MIN_TIMESTAMP)]


def test_a_keyed_process_head_that_raises_fails_as_its_operator_after_the_records_before() -> None:
    """The head's loop over a chunk still names the operator whose function raised."""
    seen = dataclasses.replace(union_consumer().operators[0], function="api_fns:FailsOnB")
    descriptor = dataclasses.replace(union_consumer(), operators=(
        seen, *union_consumer().operators[1:]))
    task = StreamTask(descriptor, 0, 0)
    with pytest.raises(OperatorFailure, match=r"seen.*ValueError: no b") as failure:
        list(task.invoke([_as_columns([_record("a", 1), _record("a", 2), _record("b", 3),
                                       _record("a", 4)])]))
    assert failure.value.failure.operator == "seen"
    assert task.chain is not None and task.chain.head.records_in.count == 3
