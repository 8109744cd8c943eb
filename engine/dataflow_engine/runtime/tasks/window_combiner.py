"""BATCH pre-aggregation of a keyed window's input at its producer: a combiner per key and window.

In BATCH mode a window whose contents are reduced, over event-time windows that do not merge,
with the default trigger and no evictor, fires once at the end of input with all it got
(nothing is late). Reducing per-producer partials then gives what reducing the records does, so
the producer assigns the windows itself and ships one partial per key and window instead of
every record (:func:`dataflow_engine.runtime.streamoperators.window_operator.pre_aggregable`
decides).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.functions.udf import load_user_function
from dataflow_engine.runtime.network.partitioners import KeyGroupStreamPartitioner
from dataflow_engine.runtime.tasks.descriptors import OutputConfig
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, copy_record
from dataflow_engine.runtime.tasks.record_writer import PARTIALS_LIMIT, RecordWriter
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP
from dataflow_engine.runtime.time.elements import ElementTimestamp
from dataflow_engine.runtime.windowing.assigners import (
    SlidingEventTimeWindows,
    TumblingEventTimeWindows,
    assigner_from,
    missing_timestamp,
)


class WindowCombiningRecordWriter(RecordWriter):
    """A keyBy writer feeding a window's reduce in BATCH mode.

    Ships ``(key, window start, window end, partial, count)``: the key's records in that window
    reduced, and how many records that stands for (a record in several sliding windows counts
    in its first), so the consumer's numRecordsIn is the records sent. A rich ReduceFunction
    (``open``/``close``) belongs to the consumer's subtask: then each record travels whole, as
    ``(key, timestamp, record)``, and the window operator assigns it as usual.
    """

    COUNTS_ITS_OWN_RECORDS = True

    def __init__(self, config: OutputConfig, task: TaskInfo, pending: list[bytes],
                 batch_size: int, timestamp: ElementTimestamp) -> None:
        super().__init__(config, task, pending, batch_size, timestamp)
        aggregation = config.aggregation
        assert aggregation is not None and aggregation.window is not None
        assert aggregation.function is not None and config.key_selector is not None
        assigner = assigner_from(aggregation.window["assigner"])
        assert isinstance(assigner, TumblingEventTimeWindows | SlidingEventTimeWindows)
        self.assigner = assigner
        self.function = load_user_function(aggregation.function, "reduce")
        self.passthrough = self.function.is_rich
        #: How a record missing its timestamp is reported (as the window operator would).
        self.missing_timestamp = missing_timestamp(aggregation.operator_name, assigner)
        #: window start -> key -> [partial, records]: a run of records in one window finds
        #: its partials by key alone, without a (key, start) tuple to build and hash each.
        self.windows: dict[int, dict[Any, list[Any]]] = {}
        #: The partials held, against PARTIALS_LIMIT.
        self.held = 0
        #: Makes the bound collect forget the window it looked up last (``ship`` empties them).
        self._forget_window: Callable[[], None] = lambda: None
        assert isinstance(self.partitioner, KeyGroupStreamPartitioner)
        self._channel_of = self.partitioner.key_channel_selector()

    def _failure(self, error: BaseException) -> OperatorFailure:
        return self.failure(error, "window pre-aggregation")

    def ship(self) -> None:
        """Routes every partial to its key's channel; at end of input, or when full. The
        records they stand for are counted here rather than one by one as they come."""
        buffers, size, channel_of = self.buffers, self.batch_size, self._channel_of
        window_size = self.assigner.size
        shipped = 0
        for start, partials in self.windows.items():
            end = start + window_size
            for key, (partial, count) in partials.items():
                channel = channel_of(key)
                buffer = buffers[channel]
                buffer.append((key, start, end, partial, count))
                shipped += count
                if len(buffer) >= size:
                    self.flush_channel(channel)
        self.windows.clear()
        self.held = 0
        self._forget_window()
        self.counter.count += shipped

    def flush(self) -> None:
        self.ship()
        super().flush()

    def bind(self) -> tuple[Collect, CollectAll]:
        if self.passthrough:
            collect = self._passthrough()
        elif isinstance(self.assigner, TumblingEventTimeWindows):
            collect = self._combining_tumbling()
        else:
            collect = self._combining_sliding()

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all

    def _partials_of(self, start: int) -> dict[Any, list[Any]]:
        partials = self.windows.get(start)
        if partials is None:
            partials = self.windows[start] = {}
        return partials

    def _first(self, start: int, key: Any, record: Any, count: int) -> None:
        """A key's first record in a window: a copy, since the reduce function may change its
        first argument and this record may still be on its way to another output."""
        if self.held >= PARTIALS_LIMIT:
            self.ship()
        self._partials_of(start)[key] = [copy_record(record), count]
        self.held += 1

    def _combining_tumbling(self) -> Collect:
        """A record's one window, without the sliding loop (the common case): the window of
        the record before is kept, so a record in it costs two comparisons and a lookup."""
        cell, reduce, failure = self.timestamp, self.function.call, self._failure
        assert self.key_of is not None
        key_of, missing = self.key_of, self.missing_timestamp
        partials_of, first = self._partials_of, self._first
        size, offset = self.assigner.size, self.assigner.offset
        start, end = 1, 0  # no window yet
        partials: dict[Any, list[Any]] = {}

        def forget() -> None:
            nonlocal start, end
            start, end = 1, 0

        self._forget_window = forget

        def collect(record: Any) -> None:
            nonlocal start, end, partials
            try:
                timestamp = cell.value
                if timestamp is None or not start <= timestamp < end:
                    if timestamp is None or timestamp <= MIN_TIMESTAMP:
                        raise RuntimeError(missing)
                    start = timestamp - (timestamp - offset) % size
                    end = start + size
                    partials = partials_of(start)
                key = key_of(record)
                partial = partials.get(key)
                if partial is None:
                    first(start, key, record, 1)
                else:
                    partial[0] = reduce(partial[0], record)
                    partial[1] += 1
            except Exception as error:
                raise failure(error) from error

        return collect

    def _combining_sliding(self) -> Collect:
        """A record's every window, latest first, as the assigner gives them (without
        building TimeWindows); the record counts in its first."""
        cell, reduce, failure = self.timestamp, self.function.call, self._failure
        assigner = self.assigner
        assert self.key_of is not None and isinstance(assigner, SlidingEventTimeWindows)
        key_of, missing = self.key_of, self.missing_timestamp
        get, first = self.windows.get, self._first
        size, offset, slide = assigner.size, assigner.offset, assigner.slide

        def collect(record: Any) -> None:
            try:
                key = key_of(record)
                timestamp = cell.value
                if timestamp is None or timestamp <= MIN_TIMESTAMP:
                    raise RuntimeError(missing)
                start = timestamp - (timestamp - offset) % slide
                count = 1
                while start > timestamp - size:
                    partials = get(start)
                    partial = None if partials is None else partials.get(key)
                    if partial is None:
                        first(start, key, record, count)
                    else:
                        partial[0] = reduce(partial[0], record)
                        partial[1] += count
                    count = 0
                    start -= slide
            except Exception as error:
                raise failure(error) from error

        return collect

    def _passthrough(self) -> Collect:
        cell = self.timestamp
        return self.bind_passthrough(lambda key, record: (key, cell.value, record),
                                     self._failure)
