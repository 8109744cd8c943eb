"""The BATCH window combiner: what a producer ships for a keyed window reduce is, summed up,
what the window would have made of every record, whatever ships early or goes where."""

from __future__ import annotations

import struct
from collections import Counter
from typing import Any

import pytest

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.tasks import window_combiner
from dataflow_engine.runtime.tasks.descriptors import AggregationConfig, OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.frames import decode_batch
from dataflow_engine.runtime.tasks.window_combiner import WindowCombiningRecordWriter
from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.spec.model import OperatorType

pytestmark = pytest.mark.unit

TUMBLING = {"type": "tumbling", "time": "event", "size": 10, "offset": 0}
SLIDING = {"type": "sliding", "time": "event", "size": 10, "slide": 5, "offset": 0}


def _writer(assigner: dict[str, Any], function: str = "window_fns:sum_pairs", channels: int = 2
            ) -> tuple[WindowCombiningRecordWriter, list[bytes], ElementTimestamp]:
    config = OutputConfig(
        producer=0, partitioner=PartitionerKind.HASH, key_selector=0, consumer_name="sums",
        consumer_parallelism=channels, consumer_max_parallelism=128,
        consumer_ranges=((0, channels),), payload=PayloadKind.WINDOW_PARTIAL, tag_offset=0,
        aggregation=AggregationConfig(OperatorType.WINDOW, "sums", None,
                                      function,
                                      {"assigner": assigner, "kind": "reduce"}))
    pending: list[bytes] = []
    cell = ElementTimestamp()
    writer = WindowCombiningRecordWriter(config, TaskInfo("job", "task", 0, 1, 128, 0), pending,
                                         3, cell)
    return writer, pending, cell


def _shipped(pending: list[bytes]) -> list[tuple[int, Any]]:
    """(channel, element) of every frame."""
    frames = iter(pending)
    return [(struct.unpack(">q", tag)[0], element) for tag in frames
            for element in decode_batch(next(frames))]


def _run(assigner: dict[str, Any], records: list[tuple[int, tuple[str, int]]]
         ) -> tuple[WindowCombiningRecordWriter, list[tuple[int, Any]]]:
    writer, pending, cell = _writer(assigner)
    collect, _ = writer.bind()
    for timestamp, record in records:
        cell.value = timestamp
        collect(record)
    writer.flush()
    return writer, _shipped(pending)


RECORDS = [(t, (key, t)) for t in range(0, 40, 3) for key in ("a", "b", "c")]


@pytest.mark.parametrize(("assigner", "size", "slide"), [(TUMBLING, 10, 10),
                                                         (SLIDING, 10, 5)])
@pytest.mark.parametrize("limit", [1, 4, 1 << 18])
@pytest.mark.parametrize("order", ["in order", "out of order"])
def test_partials_add_up_to_the_windows_of_every_record(monkeypatch: pytest.MonkeyPatch,
                                                        assigner: dict[str, Any], size: int,
                                                        slide: int, limit: int,
                                                        order: str) -> None:
    monkeypatch.setattr(window_combiner, "PARTIALS_LIMIT", limit)  # ship early when full
    # Out of order, records go back to windows left before (and shipped, when full).
    records = RECORDS if order == "in order" else RECORDS[1::2] + RECORDS[::2][::-1]
    assert sorted(records) == sorted(RECORDS)
    writer, shipped = _run(assigner, records)
    expected: Counter[tuple[str, int, int]] = Counter()
    for timestamp, (key, value) in RECORDS:
        last = timestamp - timestamp % slide
        for start in range(last, timestamp - size, -slide):
            expected[(key, start, start + size)] += value
    totals: Counter[tuple[str, int, int]] = Counter()
    channels: dict[str, set[int]] = {}
    for channel, (key, start, end, partial, _) in shipped:
        assert partial[0] == key
        totals[(key, start, end)] += partial[1]
        channels.setdefault(key, set()).add(channel)
    assert totals == expected
    assert all(len(c) == 1 for c in channels.values())  # a key goes to one channel
    # Each record counts once, in its first window: the consumer's numRecordsIn.
    assert sum(element[4] for _, element in shipped) == len(RECORDS) == writer.counter.count
    if limit == 1 << 18:  # nothing shipped early: one partial per key and window
        assert len(shipped) == len(expected)


def test_a_record_without_a_timestamp_fails_as_the_window_operator_says() -> None:
    writer, _, cell = _writer(TUMBLING)
    collect, _ = writer.bind()
    cell.value = None
    with pytest.raises(OperatorFailure, match="window pre-aggregation of 'sums'") as failure:
        collect(("a", 1))
    assert "a record without a timestamp reached the event-time window assigner" in str(
        failure.value)


def test_the_first_partial_is_a_copy_so_a_mutating_reduce_changes_nothing_shipped_elsewhere(
        ) -> None:
    writer, _, cell = _writer(TUMBLING, "window_fns:append_amount")
    collect, _ = writer.bind()
    first, second = ["a", 1], ["a", 2]
    cell.value = 1
    collect(first)
    collect(second)
    assert first == ["a", 1]  # still what another output of the producer may be shipping
    assert writer.windows[0]["a"][0] == ["a", 1, 2]
