"""Flink's StreamTask: runs one subtask (ExecutionVertex) as one Spark task.

:func:`run_stream_task` is the function partition ``i`` of a JobVertex's RDD runs. It builds the
OperatorChain, opens it, pushes every input record (or every source record) into the head, and
after the end of input finishes the chain, flushes the RecordWriters and ships collect-sink
results. Its output is frames (see :mod:`~dataflow_engine.runtime.tasks.record_writer`), yielded
as soon as RecordWriters fill them, so memory stays bounded; metrics are reported through an
accumulator when it succeeds.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import os
import pickle
import struct
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from dataflow_engine.functions import shipped
from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.checkpoint.committer import Committable
from dataflow_engine.runtime.checkpoint.snapshots import SubtaskSnapshot, TaskRestore
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.secrets import SecretValues
from dataflow_engine.runtime.streamoperators.stream_operators import (
    CollectSinkOperator,
    SourceOperator,
)
from dataflow_engine.runtime.taskmanager.operator_chain import LifecycleListener, OperatorChain
from dataflow_engine.runtime.tasks.descriptors import EpochInput, InputKind, TaskDescriptor
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.frames import Batch, Columns, decode_batch, pickled
from dataflow_engine.runtime.tasks.outputs import CollectAll, each
from dataflow_engine.runtime.tasks.record_writer import RecordWriter, pack_long
from dataflow_engine.runtime.tasks.writer_factory import create_record_writer
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP
from dataflow_engine.runtime.time.elements import Watermark, WatermarkStatus
from dataflow_engine.runtime.time.processing_time import TaskTime
from dataflow_engine.runtime.time.valve import CombinedWatermark, StatusWatermarkValve
from dataflow_engine.spec.model import RuntimeMode

_unpack_long = struct.Struct(">q").unpack
_COLLECT_BATCH = 4096
#: Records between two looks at the clock for due processing-time callbacks: they may run up
#: to this many records late, which keeps reading the clock off the per-record path.
_CLOCK_EVERY = 16
#: Records pushed through a chain at a time when nothing waits for the clock.
_CHUNK = 256


@contextlib.contextmanager
def stdout_spooled(stem: str) -> Iterator[None]:
    """``sys.stdout`` goes to the spool file ``stem.out`` (line by line, so the relay sees
    each line as it is printed), renamed ``stem.done`` at the end for the relay to forget."""
    with (open(f"{stem}.out", "w", encoding="utf-8", buffering=1) as spooled,
          contextlib.redirect_stdout(spooled)):
        yield
    os.replace(f"{stem}.out", f"{stem}.done")


@dataclass(frozen=True, slots=True)
class SubtaskMetrics:
    """What a finished subtask reports: Flink's numRecordsIn/Out, per operator too."""

    vertex_id: str
    subtask_index: int
    attempt_number: int
    #: Records the task read from its inputs (0 for sources).
    records_in: int
    #: Records the task wrote to its RecordWriters (each record once, also when broadcast).
    records_out: int
    #: ``(operator name, numRecordsIn, numRecordsOut)``, head first.
    operators: tuple[tuple[str, int, int], ...]
    #: Wall time of the task, from its first record asked for to its last frame yielded: the
    #: time the subtask was busy (a continuous job's subtask is idle between epochs' tasks).
    busy_ms: int = 0

    def plus(self, later: SubtaskMetrics) -> SubtaskMetrics:
        """The counts of this and a later epoch of the same subtask, summed."""
        return SubtaskMetrics(
            self.vertex_id, self.subtask_index, later.attempt_number,
            self.records_in + later.records_in, self.records_out + later.records_out,
            tuple((name, a_in + b_in, a_out + b_out) for (name, a_in, a_out), (_, b_in, b_out)
                  in zip(self.operators, later.operators, strict=True)),
            self.busy_ms + later.busy_ms)

    def beyond(self, reported: SubtaskMetrics) -> SubtaskMetrics:
        """The records counted beyond ``reported``, count by count; none where this has not
        caught up with it yet (a restarted subtask reading again what it read since its
        checkpoint). Its busy time is 0: time spent is not replayed, so a caller counts it
        on its own."""
        return SubtaskMetrics(
            self.vertex_id, self.subtask_index, self.attempt_number,
            max(0, self.records_in - reported.records_in),
            max(0, self.records_out - reported.records_out),
            tuple((name, max(0, a_in - b_in), max(0, a_out - b_out))
                  for (name, a_in, a_out), (_, b_in, b_out)
                  in zip(self.operators, reported.operators, strict=True)))


@dataclass(frozen=True, slots=True)
class SubtaskEpochResult:
    """What a subtask hands the driver at the end of an epoch."""

    metrics: SubtaskMetrics
    #: The pickled :class:`~.snapshots.SubtaskSnapshot` the next epoch starts from.
    snapshot: bytes
    #: What sinks commit once a checkpoint covering this epoch completes (see
    #: :mod:`~dataflow_engine.runtime.checkpoint.committer`).
    committables: tuple[Committable, ...]


class MetricsSink(Protocol):
    def add(self, term: Any) -> None: ...


class StreamTask:
    def __init__(self, descriptor: TaskDescriptor, subtask_index: int, attempt_number: int,
                 listener: LifecycleListener | None = None,
                 epoch: EpochInput | None = None) -> None:
        self.descriptor = descriptor
        self.epoch = epoch
        self.task = TaskInfo(
            job_name=descriptor.job_name,
            task_name=descriptor.task_name,
            subtask_index=subtask_index,
            parallelism=descriptor.parallelism,
            max_parallelism=descriptor.max_parallelism,
            attempt_number=attempt_number,
            print_spool=descriptor.print_spool,
            epoch=epoch.epoch if epoch is not None else None,
        )
        self.listener = listener
        self.pending: list[bytes] = []
        self.writers: list[RecordWriter] = []
        self.chain: OperatorChain | None = None
        self.time = TaskTime(streaming=descriptor.runtime_mode is not RuntimeMode.BATCH,
                             auto_watermark_interval=descriptor.auto_watermark_interval)
        channels = (descriptor.input_channels[subtask_index]
                    if descriptor.input_channels else {})
        #: One StatusWatermarkValve per input (kept here so that epochs can carry them over).
        self.valves = {number: StatusWatermarkValve(channels.get(number, ()))
                       for number in range(1, descriptor.input_count + 1)}
        self.snapshot: bytes | None = None
        self.committables: tuple[Committable, ...] = ()

    def invoke(self, records: Iterable[Any]) -> Iterator[bytes]:
        """Runs the subtask (see :meth:`_invoke`). With a print spool (a local run), what its
        user functions print goes there too, so it reaches the program's stdout as PyFlink's
        Python workers' prints do."""
        spool = self.task.print_spool
        if spool is None:
            yield from self._invoke(records)
            return
        name = (f"{self.descriptor.operators[0].node_id}-{self.task.subtask_index}-"
                f"{self.task.attempt_number}-{uuid.uuid4().hex}.stdout")
        with stdout_spooled(os.path.join(spool, name)):
            yield from self._invoke(records)

    def _invoke(self, records: Iterable[Any]) -> Iterator[bytes]:
        """Set up, open, run, finish and close the chain, yielding frames as they fill.

        In STREAMING mode the end of input is first the end of event time (Flink's final
        ``Long.MAX_VALUE`` watermark fires every event-time timer), and processing-time
        callbacks still pending never run. BATCH mode has no watermarks: keyed operators fire
        their timers when they finish. An epoch that does not end the input ends with a
        snapshot instead (:attr:`snapshot`), which the next epoch's subtask starts from.
        """
        descriptor, pending, epoch = self.descriptor, self.pending, self.epoch
        shipped.install(descriptor.shipped)  # before any operator or key selector resolves
        chain = self._create_chain()
        ended = False
        try:
            if epoch is not None:
                ended = self._start_epoch(chain, epoch)
            if ended:  # a finished subtask: its consumers still wait for its final watermark
                collections.deque(records, maxlen=0)  # its producers' final watermarks
                for writer in self.writers:
                    writer.emit_watermark(MAX_TIMESTAMP)
                    writer.flush()
                yield from pending
                self.snapshot = self._snapshot(chain, ended=True)
                return
            chain.open()
            yield from self._run(chain, records)
            if epoch is None or epoch.end_of_input:
                self._finish_input(chain)
            else:
                self.time.processing_time.fire_due()
                chain.prepare_snapshot_pre_barrier()
            for writer in self.writers:
                writer.flush()
            self._ship_collected(chain)
            yield from pending
            pending.clear()
            if epoch is not None:
                self.snapshot = self._snapshot(chain, ended=epoch.end_of_input)
                self.committables = chain.committables()
        except BaseException:
            if not ended:
                with contextlib.suppress(Exception):  # the original failure is the one to report
                    chain.close()
            raise
        chain.close()

    def _create_chain(self) -> OperatorChain:
        """The subtask's RecordWriters and its OperatorChain writing to them."""
        descriptor = self.descriptor
        self.writers = [create_record_writer(output, self.task, self.pending,
                                             descriptor.batch_size, self.time.timestamp)
                        for output in descriptor.outputs]
        self.chain = OperatorChain(descriptor, self.task, self.writers, self.time,
                                   self.listener)
        return self.chain

    def _finish_input(self, chain: OperatorChain) -> None:
        """Flink's end of input: in STREAMING mode first the end of event time (pending
        processing-time callbacks never run), then the operators finish."""
        if self.time.streaming:
            self.time.processing_time.clear()
            chain.head.process_watermark(MAX_TIMESTAMP)
        chain.finish()

    def _start_epoch(self, chain: OperatorChain, epoch: EpochInput) -> bool:
        """Restores the previous epoch's (or a checkpoint's) state and assigns this epoch's
        source split; True if the subtask's input had already ended."""
        index = self.task.subtask_index
        data = epoch.restores[index] if epoch.restores else None
        data = getattr(data, "value", data)  # a large snapshot comes as a Spark broadcast
        head = chain.head
        if data is not None:
            restored = pickle.loads(data)
            if isinstance(restored, SubtaskSnapshot):
                restored = TaskRestore.own(restored, index, self.task.parallelism,
                                           self.task.max_parallelism)
            chain.initialize_state(restored)
            for number, valve in self.valves.items():
                if number in restored.inputs:
                    valve.restore(restored.inputs[number])
                else:  # restored from a checkpoint: channels start again, never behind
                    valve.current = head.current_watermark
            if restored.ended:
                return True
        if isinstance(head, SourceOperator):
            splits = epoch.splits.get(head.config.node_id)
            head.assign_split(splits[index] if splits is not None else None)
        return False

    def _snapshot(self, chain: OperatorChain, ended: bool) -> bytes:
        snapshot = SubtaskSnapshot(chain.snapshot_state(),
                                   {number: valve.snapshot()
                                    for number, valve in self.valves.items()}, ended)
        try:
            return snapshot.to_bytes()
        except Exception:
            chain.check_picklable()
            raise

    def _run(self, chain: OperatorChain, inputs: Iterable[Any]) -> Iterator[bytes]:
        """The mailbox loop of a task's input: the source's split, or the input's batches
        (decoded, as a shuffle's reader gives them; frames of a forward input)."""
        timers = self.time.processing_time if chain.uses_processing_time else None
        kind = self.descriptor.input_kind
        if kind is InputKind.SOURCE:
            yield from self._source_frames(chain, timers)
            return
        batches = self._forward_batches(inputs) if kind is InputKind.FORWARD_FRAMES else inputs
        head = chain.head
        yield from self._push(self._input_records(chain, batches),
                              head.process_all or each(head.process_element), timers)

    def _source_frames(self, chain: OperatorChain, timers: Any) -> Iterator[bytes]:
        """The records of the source's current split through its chain; a failure of the
        source's own reading is the source's."""
        source = chain.head
        assert isinstance(source, SourceOperator)
        try:
            yield from self._push(source.records(), source.collect_all, timers)
        except OperatorFailure:
            raise
        except Exception as error:
            raise source.failure(error) from error

    def _push(self, records: Iterable[Any], process_all: CollectAll,
              timers: Any) -> Iterator[bytes]:
        """``records`` pushed through the chain a chunk at a time (a fused run loops over a
        chunk in one call); between chunks frames leave and due processing-time callbacks run
        (the clock is read every ``_CLOCK_EVERY`` records, and only by chains that may have
        some). A chunk is read as it is processed, record by record: a source, or an input's
        valve, tells the chain about the record it just read (its timestamp, its Kafka
        partition), so each record passes the whole chain before the next is read."""
        ended: list[bool] = []

        def end() -> Iterator[Any]:
            ended.append(True)
            yield from ()

        remaining = itertools.chain(records, end())
        pending = self.pending
        size = _CLOCK_EVERY if timers is not None else _CHUNK
        while not ended:
            process_all(itertools.islice(remaining, size))
            if timers is not None and timers.clock() >= timers.next_due:
                timers.fire_due()
            if pending:
                yield from pending
                pending.clear()

    def _input_records(self, chain: OperatorChain, batches: Iterable[Batch]) -> Iterable[Any]:
        """The head's input: an event-time input's timestamps and watermarks go through the
        input's valve (each input's, for two), and what remains is the records."""
        if not self.descriptor.input_event_time:
            return itertools.chain.from_iterable(batches)
        if self.descriptor.input_count == 2:
            return self._two_input_event_time_records(chain,
                                                      itertools.chain.from_iterable(batches))
        return self._event_time_records(chain, batches)

    def _event_time_records(self, chain: OperatorChain, batches: Iterable[Batch]
                            ) -> Iterator[Any]:
        """Payloads of an event-time input: each record's timestamp goes to the subtask's cell,
        and watermarks and statuses go through the valve to the head operator. A batch of
        columns is read column by column, its marks between the records they followed."""
        cell, mark = self.time.timestamp, self._input_mark
        for batch in batches:
            if batch.__class__ is Columns:
                assert isinstance(batch, Columns) and batch.stamps is not None
                for rows, element in batch.runs():
                    for cell.value, payload in rows:  # (stamp, payload) pairs
                        yield payload
                    if element is not None:
                        mark(chain, element)
                continue
            for element in batch:
                if element.__class__ is tuple:
                    cell.value = element[0]
                    yield element[1]
                else:
                    mark(chain, element)

    def _input_mark(self, chain: OperatorChain, element: Watermark | WatermarkStatus) -> None:
        """A watermark or status of the one input, through its valve to the head operator
        (in BATCH mode watermarks mean nothing)."""
        if not self.time.streaming:
            return
        valve, head = self.valves[1], chain.head
        if element.__class__ is Watermark:
            assert isinstance(element, Watermark)
            advanced = valve.input_watermark(element.timestamp, element.channel)
            if advanced is not None:
                head.process_watermark(advanced)
        elif element.__class__ is WatermarkStatus:
            assert isinstance(element, WatermarkStatus)
            was_idle = valve.is_idle
            advanced = valve.input_status(element.idle, element.channel)
            if advanced is not None:
                head.process_watermark(advanced)
            if valve.is_idle != was_idle:
                head.process_watermark_status(valve.is_idle)

    def _forward_batches(self, frames: Iterable[Any]) -> Iterator[Batch]:
        """Batches of this subtask's forward channel in a persisted producer's frames."""
        wanted = self.descriptor.input_tag_offset + self.task.subtask_index
        iterator = iter(frames)
        for tag in iterator:
            batch = next(iterator)
            if _unpack_long(tag)[0] == wanted:
                yield decode_batch(batch)

    def _ship_collected(self, chain: OperatorChain) -> None:
        operators = chain.all_operators
        by_node = {op.config.node_id: op for op in operators}
        for position, tag in self.descriptor.collect_tags.items():
            sink = by_node[self.descriptor.operators[position].node_id]
            assert isinstance(sink, CollectSinkOperator)
            records = sink.records
            for start in range(0, len(records), _COLLECT_BATCH):
                self.pending.append(pack_long(tag))
                self.pending.append(pickled(records[start:start + _COLLECT_BATCH]))
            records.clear()

    def _two_input_event_time_records(self, chain: OperatorChain,
                                      items: Iterable[Any]) -> Iterator[Any]:
        """``(input, payload)`` of a two-input head; each input has its own valve, and the
        operator's watermark is their minimum (idle inputs left out)."""
        valves = self.valves
        combined = CombinedWatermark(valves)
        combined.current = chain.head.current_watermark
        head, cell = chain.head, self.time.timestamp
        streaming = self.time.streaming
        for number, element in items:
            kind = element.__class__
            if kind is tuple:
                cell.value = element[0]
                yield number, element[1]
                continue
            if not streaming:
                continue
            valve = valves[number]
            if kind is Watermark:
                valve.input_watermark(element.timestamp, element.channel)
            elif kind is WatermarkStatus:
                valve.input_status(element.idle, element.channel)
            advanced = combined.advance()
            if advanced is not None:
                head.process_watermark(advanced)

    def metrics(self, busy_ms: int) -> SubtaskMetrics:
        assert self.chain is not None
        operators = [self.chain.operators[i] for i in range(len(self.descriptor.operators))]
        head = operators[0]
        assert head is not None
        return SubtaskMetrics(
            vertex_id=self.descriptor.vertex_id,
            subtask_index=self.task.subtask_index,
            attempt_number=self.task.attempt_number,
            records_in=head.records_in.count,
            records_out=sum(w.counter.count for w in self.writers),
            operators=tuple((op.name, op.records_in.count, op.records_out.count)
                            for op in operators if op is not None),
            busy_ms=busy_ms,
        )


def current_attempt_number() -> int:
    """The Spark task attempt running this code (0 outside Spark)."""
    try:
        from pyspark import TaskContext
    except ImportError:  # pragma: no cover - executors always have pyspark
        return 0
    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


def run_stream_task(descriptor: TaskDescriptor, results: MetricsSink, epoch: EpochInput | None,
                    secret_values: SecretValues, subtask_index: int,
                    records: Iterable[Any]) -> Iterator[bytes]:
    """The partition function of a JobVertex's RDD: partition ``i`` is subtask ``i``.

    Its metrics (and, in an epoch, its snapshot and committables) reach the driver through
    the ``results`` accumulator, which Spark merges only for a successful attempt. The values
    of the job's Secret references come with the task (executors mount no Secret)."""
    if secret_values:
        secrets.install(secret_values)
    task = StreamTask(descriptor, subtask_index, current_attempt_number(), epoch=epoch)
    started = time.perf_counter()
    yield from task.invoke(records)
    metrics = task.metrics(round((time.perf_counter() - started) * 1000))
    result: SubtaskMetrics | SubtaskEpochResult = metrics
    if epoch is not None:
        assert task.snapshot is not None
        result = SubtaskEpochResult(metrics, task.snapshot, task.committables)
    results.add({(metrics.vertex_id, metrics.subtask_index): result})
