"""keyBy into a one-input consumer: the RecordWriter whose batches travel as columns.

A keyed exchange is where most records of a job cross between subtasks, and each used to be a
``(timestamp, (key, record))`` row: two tuples per record for pickle to write and memoize and
for the consumer to unpickle, beyond the record itself. Here each channel keeps the records,
their keys (which a keyed consumer takes, computed once, by the producer) and their
timestamps (on an event-time exchange) in lists of their own, and the batch leaves as one
:class:`~dataflow_engine.runtime.tasks.frames.Columns`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.network.partitioners import KeyGroupStreamPartitioner
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.frames import Columns, columns_encoded
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll
from dataflow_engine.runtime.tasks.record_writer import RecordWriter, pack_long
from dataflow_engine.runtime.time.elements import ElementTimestamp, Watermark, WatermarkStatus


def writes_columns(config: OutputConfig) -> bool:
    """A keyed exchange into a one-input consumer (a two-input one gets ``(input, element)``
    rows, and pre-aggregating writers ship partials)."""
    return (config.key_selector is not None and not config.input_number
            and config.payload in (PayloadKind.RECORD, PayloadKind.KEYED))


class ColumnarRecordWriter(RecordWriter):
    """``buffers[channel]`` holds the channel's records; ``keys`` and ``stamps`` the columns
    beside them (None when the exchange has none); ``channel_marks`` the watermarks and
    statuses, each with the number of records before it."""

    def __init__(self, config: OutputConfig, task: TaskInfo, pending: list[bytes],
                 batch_size: int, timestamp: ElementTimestamp | None = None) -> None:
        super().__init__(config, task, pending, batch_size, timestamp)
        assert writes_columns(config) and isinstance(self.partitioner, KeyGroupStreamPartitioner)
        channels = range(self.num_channels)
        self.keys: list[list[Any]] | None = (
            [[] for _ in channels] if config.payload is PayloadKind.KEYED else None)
        self.stamps: list[list[int | None]] | None = (
            [[] for _ in channels] if config.event_time else None)
        self.channel_marks: list[list[tuple[int, Watermark | WatermarkStatus]]] = [
            [] for _ in channels]

    def flush_channel(self, channel: int) -> None:
        records, marks = self.buffers[channel], self.channel_marks[channel]
        if not records and not marks:
            return
        keys = self.keys[channel] if self.keys is not None else None
        stamps = self.stamps[channel] if self.stamps is not None else None
        self.counter.count += len(records)
        self.pending.append(pack_long(self.tag_base + channel))
        # Records alone (no key for the consumer, no timestamps) go as the list they are,
        # which a plain record type has marshalled.
        self.pending.append(self.encode(records) if keys is None and stamps is None
                            else columns_encoded(Columns(stamps, keys, records, marks)))
        for column in (records, marks, keys, stamps):
            if column is not None:
                column.clear()  # in place: the bound collect holds these lists

    def _append_everywhere(self, element: Watermark | WatermarkStatus) -> None:
        for channel, records in enumerate(self.buffers):
            marks = self.channel_marks[channel]
            marks.append((len(records), element))
            if len(marks) >= self.batch_size:
                self.flush_channel(channel)

    def bind(self) -> tuple[Collect, CollectAll]:
        """The key is computed once, here; the record, its key and its timestamp go to their
        columns of the key's channel."""
        buffers, size, flush, cell = (self.buffers, self.batch_size, self.flush_channel,
                                      self.timestamp)
        keys, stamps = self.keys, self.stamps
        assert isinstance(self.partitioner, KeyGroupStreamPartitioner) and self.key_of
        known, channel_of = self.partitioner.key_channels()
        known_channel, key_of, failure = known.get, self.key_of, self.failure

        def collect(record: Any) -> None:
            try:
                key = key_of(record)
                channel = known_channel(key)
                if channel is None:
                    channel = channel_of(key)
            except Exception as error:
                raise failure(error, "keyBy") from error
            if keys is not None:
                keys[channel].append(key)
            if stamps is not None:
                stamps[channel].append(cell.value)
            records = buffers[channel]
            records.append(record)
            if len(records) >= size:
                flush(channel)

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all
