"""Flink's RecordWriter: route each record to a channel, batch channels into shuffle frames.

A frame is two items of the task's output: ``pack_long(tag)`` and an encoded batch of records
(:mod:`~dataflow_engine.runtime.tasks.frames`), the shape PySpark's ``PairwiseRDD`` turns into
one shuffle record for partition ``tag`` (the same wire format ``RDD.partitionBy`` produces).
``tag`` is the consumer subtask, offset when one task feeds several outputs (see
:mod:`dataflow_engine.runtime.spark.spark_plan`).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from typing import Any

from dataflow_engine.runtime.functions.aggregations import AGGREGATORS
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.functions.key_selectors import key_field, key_selector
from dataflow_engine.runtime.functions.udf import load_user_function
from dataflow_engine.runtime.network.partitioners import (
    KeyGroupStreamPartitioner,
    create_partitioner,
)
from dataflow_engine.runtime.state.key_groups import key_hash
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.failures import OperatorFailure, operator_failure
from dataflow_engine.runtime.tasks.frames import batch_encoder
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Counter, copy_record
from dataflow_engine.runtime.time.elements import ElementTimestamp, Watermark, WatermarkStatus
from dataflow_engine.spec.model import OperatorType

pack_long = struct.Struct(">q").pack
#: Distinct keys a pre-aggregating writer holds before it ships its partials early.
PARTIALS_LIMIT = 1 << 18


class RecordWriter:
    """One produced IntermediateDataSet of a subtask (ChannelSelectorRecordWriter and
    BroadcastRecordWriter in one: a broadcast partitioner appends to every channel).

    On an event-time exchange every record travels as ``(timestamp, payload)`` and watermarks
    go to every channel, in order with the records (Flink broadcasts watermarks too). A keyBy
    into a one-input consumer has a ColumnarRecordWriter instead (``writer_factory``).
    """

    #: The writer counts numRecordsOut itself, not per element shipped: pre-aggregating
    #: writers, whose partials stand for many records.
    COUNTS_ITS_OWN_RECORDS = False
    #: The writer copies what it keeps of a record itself (a field aggregation keeps a copy of
    #: each key's first record, and reads the others' fields at once); else its output hands
    #: it a copy of any record that could change before the writer's batch leaves.
    copies_what_it_keeps = False

    def __init__(self, config: OutputConfig, task: TaskInfo, pending: list[bytes],
                 batch_size: int, timestamp: ElementTimestamp | None = None) -> None:
        start, end = config.consumer_ranges[task.subtask_index]
        self.config = config
        self.task = task
        self.timestamp = timestamp or ElementTimestamp()
        #: This subtask's channel number at every consumer (see StatusWatermarkValve).
        self.channel = config.channel_base + task.subtask_index
        self.num_channels = end - start
        self.tag_base = config.tag_offset + start
        self.pending = pending
        self.batch_size = batch_size
        self.buffers: list[list[Any]] = [[] for _ in range(self.num_channels)]
        #: Watermarks and statuses in each buffer: what a flush does not count as records.
        self.marks = [0] * self.num_channels
        #: Records written (once per record, also when broadcast): numRecordsOut of the producer.
        self.counter = Counter()
        selector = key_selector(config.key_selector) if config.key_selector is not None else None
        self.key_of = selector
        self.partitioner = create_partitioner(config.partitioner, selector,
                                              config.consumer_max_parallelism,
                                              key_hash(config.key_type))
        self.partitioner.setup(self.num_channels)
        self.encode = batch_encoder(config)

    def failure(self, error: BaseException, what: str) -> OperatorFailure:
        return operator_failure(
            error, operator=f"{what} of {self.config.consumer_name!r}",
            task_name=self.task.task_name, subtask_index=self.task.subtask_index,
            parallelism=self.task.parallelism, attempt_number=self.task.attempt_number)

    def flush_channel(self, channel: int) -> None:
        buffer = self.buffers[channel]
        if not buffer:
            return
        if not self.COUNTS_ITS_OWN_RECORDS and (not self.partitioner.is_broadcast
                                                or channel == 0):
            self.counter.count += len(buffer) - self.marks[channel]
        self.marks[channel] = 0
        self.pending.append(pack_long(self.tag_base + channel))
        self.pending.append(self.encode(buffer))
        buffer.clear()

    def flush(self) -> None:
        """End of input: ship whatever is buffered."""
        for channel in range(self.num_channels):
            self.flush_channel(channel)

    def emit_watermark(self, timestamp: int) -> None:
        if self.config.event_time:
            self._append_everywhere(Watermark(timestamp, self.channel))

    def emit_watermark_status(self, idle: bool) -> None:
        if self.config.event_time:
            self._append_everywhere(WatermarkStatus(idle, self.channel))

    def _append_everywhere(self, element: Watermark | WatermarkStatus) -> None:
        item = (self.config.input_number, element) if self.config.input_number else element
        marks = self.marks
        for channel, buffer in enumerate(self.buffers):
            buffer.append(item)
            marks[channel] += 1
            if len(buffer) >= self.batch_size:
                self.flush_channel(channel)

    def bind(self) -> tuple[Collect, CollectAll]:
        assert self.key_of is None or self.config.input_number, (
            "a keyed exchange into a one-input consumer has a ColumnarRecordWriter")
        if self.config.event_time or self.config.input_number:
            return self._bind_tagged()
        if self.partitioner.is_broadcast:
            return self._bind_broadcast()
        if self.partitioner.is_constant:
            return self._bind_constant()
        return self._bind_selecting()

    def _bind_constant(self) -> tuple[Collect, CollectAll]:
        buffer, size, flush = self.buffers[0], self.batch_size, self.flush_channel
        append = buffer.append

        def collect(record: Any) -> None:
            append(record)
            if len(buffer) >= size:
                flush(0)

        def collect_all(records: Iterable[Any]) -> None:
            buffer.extend(records)
            if len(buffer) >= size:
                flush(0)

        return collect, collect_all

    def _bind_selecting(self) -> tuple[Collect, CollectAll]:
        buffers, size, flush = self.buffers, self.batch_size, self.flush_channel
        select = self.partitioner.channel_selector()

        def collect(record: Any) -> None:
            channel = select(record)
            buffer = buffers[channel]
            buffer.append(record)
            if len(buffer) >= size:
                flush(channel)

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                channel = select(record)
                buffer = buffers[channel]
                buffer.append(record)
                if len(buffer) >= size:
                    flush(channel)

        return collect, collect_all

    def _bind_broadcast(self) -> tuple[Collect, CollectAll]:
        buffers, size = self.buffers, self.batch_size
        first = buffers[0]

        def collect(record: Any) -> None:
            for buffer in buffers:
                buffer.append(record)
            if len(first) >= size:
                self.flush()

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all

    def _bind_tagged(self) -> tuple[Collect, CollectAll]:
        """Any partitioner, each record with its timestamp (``(timestamp, payload)``) on an
        event-time exchange, and with its input (``(input, element)``) into a two-input
        consumer."""
        buffers, size, flush, cell = (self.buffers, self.batch_size, self.flush_channel,
                                      self.timestamp)
        failure = self.failure
        if self.key_of is not None:
            assert isinstance(self.partitioner, KeyGroupStreamPartitioner)
            known, channel_of = self.partitioner.key_channels()
            known_channel, key_of = known.get, self.key_of
            with_key = self.config.payload is PayloadKind.KEYED

            def route(record: Any) -> tuple[int, Any]:
                try:
                    key = key_of(record)
                    channel = known_channel(key)
                    if channel is None:
                        channel = channel_of(key)
                    return channel, (key, record) if with_key else record
                except Exception as error:
                    raise failure(error, "keyBy") from error
        elif self.partitioner.is_broadcast:

            def route(record: Any) -> tuple[int, Any]:
                return 0, record  # every channel gets it
        else:
            select = self.partitioner.channel_selector()

            def route(record: Any) -> tuple[int, Any]:
                return select(record), record

        broadcast = self.partitioner.is_broadcast
        event_time, input_number = self.config.event_time, self.config.input_number

        def collect(record: Any) -> None:
            channel, element = route(record)
            if event_time:
                element = (cell.value, element)
            if input_number:
                element = (input_number, element)
            if broadcast:
                for buffer in buffers:
                    buffer.append(element)
                if len(buffers[0]) >= size:
                    self.flush()
                return
            buffer = buffers[channel]
            buffer.append(element)
            if len(buffer) >= size:
                flush(channel)

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all

    def bind_passthrough(self, element_of: Callable[[Any, Any], Any],
                         failure: Callable[[BaseException], OperatorFailure]) -> Collect:
        """keyBy for a pre-aggregating writer's records that travel whole, each as
        ``element_of(key, record)`` and counted as it goes."""
        buffers, size, flush = self.buffers, self.batch_size, self.flush_channel
        assert isinstance(self.partitioner, KeyGroupStreamPartitioner) and self.key_of
        known, channel_of = self.partitioner.key_channels()
        known_channel, key_of, counter = known.get, self.key_of, self.counter

        def collect(record: Any) -> None:
            try:
                key = key_of(record)
                channel = known_channel(key)
                if channel is None:
                    channel = channel_of(key)
            except Exception as error:
                raise failure(error) from error
            counter.count += 1
            buffer = buffers[channel]
            buffer.append(element_of(key, record))
            if len(buffer) >= size:
                flush(channel)

        return collect


class CombiningRecordWriter(RecordWriter):
    """A keyBy writer feeding sum/min/max/reduce in BATCH mode: pre-aggregates per key and ships
    ``(key, first, aggregate, count)`` partials at end of input, as a combiner would.

    BATCH results are final values per key, so merging partials yields exactly what merging
    records does; ``count`` keeps the consumer's numRecordsIn equal to the records sent. A rich
    reduce function belongs to the consumer's subtask, so it is never called here: its records
    travel as partials of one.
    """

    COUNTS_ITS_OWN_RECORDS = True

    def __init__(self, config: OutputConfig, task: TaskInfo, pending: list[bytes],
                 batch_size: int) -> None:
        super().__init__(config, task, pending, batch_size)
        aggregation = config.aggregation
        assert aggregation is not None and config.key_selector is not None
        self.aggregation = aggregation
        #: key -> [first record or accumulator, aggregate (None for reduce), count]
        self.partials: dict[Any, list[Any]] = {}
        self.reduce_fn: Callable[[Any, Any], Any] | None = None
        self.passthrough = False
        if aggregation.operator_type is OperatorType.REDUCE:
            assert aggregation.function is not None
            function = load_user_function(aggregation.function, "reduce")
            self.passthrough = function.is_rich
            self.reduce_fn = function.call
        # A reduce function gets records of its own, as Flink's does (it may change either
        # argument, or return the second and have it kept).
        self.copies_what_it_keeps = self.reduce_fn is None
        self._channel_of = self._keyed_partitioner().key_channel_selector()

    def _keyed_partitioner(self) -> KeyGroupStreamPartitioner:
        assert isinstance(self.partitioner, KeyGroupStreamPartitioner)
        return self.partitioner

    def ship(self) -> None:
        """Routes every partial to its key's channel; called at end of input (or when full)."""
        buffers, size, channel_of = self.buffers, self.batch_size, self._channel_of
        shipped = 0
        for key, (first, aggregate, count) in self.partials.items():
            channel = channel_of(key)
            buffer = buffers[channel]
            buffer.append((key, first, aggregate, count))
            shipped += count
            if len(buffer) >= size:
                self.flush_channel(channel)
        self.partials.clear()
        self.counter.count += shipped

    def flush(self) -> None:
        self.ship()
        super().flush()

    def _first(self, key: Any, record: Any, field: int | str | None) -> None:
        """A key's first record: kept as a copy, since a field of it may be changed in place
        or the reduce function may change its first argument, and this record may still be on
        its way to another output; ``field`` is the aggregated one (None for reduce)."""
        if len(self.partials) >= PARTIALS_LIMIT:
            self.ship()
        first = copy_record(record)
        self.partials[key] = [first, None if field is None else first[field], 1]

    def bind(self) -> tuple[Collect, CollectAll]:
        agg = self.aggregation
        assert self.config.key_selector is not None
        if self.passthrough:
            return self._bind_passthrough()
        if (agg.operator_type is OperatorType.SUM and agg.field is not None
                and key_field(self.config.key_selector) is not None):
            return self._bind_sum_of_fields()
        return self._bind_generic()

    def _failure(self, error: BaseException) -> OperatorFailure:
        return self.failure(error, "pre-aggregation")

    def _bind_sum_of_fields(self) -> tuple[Collect, CollectAll]:
        """The word-count path, inlined: key and value are fields of the record."""
        get, failure, first = self.partials.get, self._failure, self._first
        key_field_ = key_field(self.config.key_selector)  # type: ignore[arg-type]
        value_field = self.aggregation.field

        def collect(record: Any) -> None:
            try:
                key = record[key_field_]
                value = record[value_field]
                partial = get(key)
                if partial is None:
                    first(key, record, value_field)
                else:
                    partial[1] += value
                    partial[2] += 1
            except Exception as error:
                raise failure(error) from error

        # The loop repeats collect's body on purpose: a call per record is this path's cost.
        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                try:
                    key = record[key_field_]
                    value = record[value_field]
                    partial = get(key)
                    if partial is None:
                        first(key, record, value_field)
                    else:
                        partial[1] += value
                        partial[2] += 1
                except Exception as error:
                    raise failure(error) from error

        return collect, collect_all

    def _bind_generic(self) -> tuple[Collect, CollectAll]:
        get, failure, first = self.partials.get, self._failure, self._first
        assert self.key_of is not None
        key_of = self.key_of
        agg = self.aggregation
        if agg.operator_type is OperatorType.REDUCE:
            reduce_fn = self.reduce_fn
            assert reduce_fn is not None

            def collect(record: Any) -> None:
                try:
                    key = key_of(record)
                    partial = get(key)
                    if partial is None:
                        first(key, record, None)
                    else:
                        partial[0] = reduce_fn(partial[0], record)
                        partial[2] += 1
                except Exception as error:
                    raise failure(error) from error
        else:
            combine = AGGREGATORS[agg.operator_type]
            field = agg.field
            assert field is not None

            def collect(record: Any) -> None:
                try:
                    key = key_of(record)
                    value = record[field]
                    partial = get(key)
                    if partial is None:
                        first(key, record, field)
                    else:
                        partial[1] = combine(partial[1], value)
                        partial[2] += 1
                except Exception as error:
                    raise failure(error) from error

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all

    def _bind_passthrough(self) -> tuple[Collect, CollectAll]:
        collect = self.bind_passthrough(lambda key, record: (key, record, None, 1),
                                        self._failure)

        def collect_all(records: Iterable[Any]) -> None:
            for record in records:
                collect(record)

        return collect, collect_all
