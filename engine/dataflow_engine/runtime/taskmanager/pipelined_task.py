"""A StreamTask that lives as long as its job (Flink's StreamTask proper), for pipelined jobs.

It runs the same OperatorChain and RecordWriters as a task of an epoch, but in a thread of its
slot, reading its :class:`~dataflow_engine.runtime.network.input_gate.InputGate` (or, for a
source, the splits the driver hands it) until its input ends or the job is cancelled. Frames
leave through its :class:`~dataflow_engine.runtime.network.result_partition.ResultPartition`
when a RecordWriter fills one, and whatever is buffered leaves as soon as the task has nothing
to read, so records wait in buffers only while the task is busy.

A checkpoint is Flink's aligned barrier: a source takes its snapshot when the driver's barrier
reaches it between two splits, any other task once the barrier came on every input; each then
hands the barrier on and acknowledges its snapshot and committables to the driver, which
completes the checkpoint when every subtask acknowledged it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

from dataflow_engine.runtime.network.input_gate import BufferOrEvent, InputGate
from dataflow_engine.runtime.network.result_partition import ResultPartition
from dataflow_engine.runtime.network.wire import MessageKind
from dataflow_engine.runtime.streamoperators.stream_operators import (
    CollectSinkOperator,
    SourceOperator,
)
from dataflow_engine.runtime.taskmanager.barrier_alignment import BarrierAligner
from dataflow_engine.runtime.taskmanager.operator_chain import OperatorChain
from dataflow_engine.runtime.taskmanager.stream_task import StreamTask, SubtaskEpochResult
from dataflow_engine.runtime.tasks.descriptors import EpochInput, InputKind, TaskDescriptor
from dataflow_engine.runtime.tasks.frames import decode_batch
from dataflow_engine.runtime.tasks.outputs import each
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP

#: What a task tells the driver: ``(kind, vertex id, subtask, ...)``.
Report = Callable[[tuple[Any, ...]], None]

#: Seconds between two reports of a task's counters.
METRICS_INTERVAL = 1.0


class PipelinedStreamTask(StreamTask):
    def __init__(self, descriptor: TaskDescriptor, subtask_index: int, attempt_number: int,
                 start: EpochInput, gate: InputGate, partition: ResultPartition,
                 report: Report, buffer_timeout: float) -> None:
        super().__init__(descriptor, subtask_index, attempt_number, epoch=start)
        self.gate = gate
        self.partition = partition
        self.report = report
        self.buffer_timeout = buffer_timeout
        self.aligner = BarrierAligner(len(gate.producers))
        #: The checkpoint this task's output belongs to until its next barrier.
        self.checkpoint_id = start.epoch
        self.busy = 0.0
        self._last_flush = self._next_metrics = 0.0
        self.collect_sinks: list[CollectSinkOperator] = []

    @property
    def key(self) -> tuple[str, int]:
        return self.descriptor.vertex_id, self.task.subtask_index

    def run(self) -> None:
        """The task's life: restore, open, process until the end of input or a cancel."""
        descriptor, epoch = self.descriptor, self.epoch
        assert epoch is not None
        chain = self._create_chain()
        self.collect_sinks = [op for op in chain.all_operators
                              if isinstance(op, CollectSinkOperator)]
        restored_ended = False
        try:
            restored_ended = self._start_epoch(chain, epoch)
            if restored_ended:  # its consumers still wait for its final watermark
                for writer in self.writers:
                    writer.emit_watermark(MAX_TIMESTAMP)
                self._finished(chain, ended_before=True)
                return
            chain.open()
            if descriptor.input_kind is InputKind.SOURCE:
                self._run_source(chain)
            else:
                self._run_inputs(chain)
        except BaseException:
            if not restored_ended:
                with contextlib.suppress(Exception):  # the original failure is the one to report
                    chain.close()
            raise
        if not restored_ended:
            chain.close()

    # -- the loops ------------------------------------------------------------------------

    def _run_source(self, chain: OperatorChain) -> None:
        source = chain.head
        assert isinstance(source, SourceOperator)
        ship = self.partition.ship
        timers = self.time.processing_time if chain.uses_processing_time else None
        while True:
            item = self._next(chain)
            message = item.payload
            assert isinstance(message, tuple)
            if message[0] == "split":
                started = time.perf_counter()
                source.assign_split(message[1])
                ship(self._source_frames(chain, timers))
                self.busy += time.perf_counter() - started
                self.report(("split-done", *self.key))  # the driver may hand out the next
            elif message[0] == "barrier":
                self._checkpoint(chain, message[1])
            elif message[0] == "end":
                self._end_input(chain)
                return
            else:  # cancel
                return

    def _run_inputs(self, chain: OperatorChain) -> None:
        gate, aligner, ship = self.gate, self.aligner, self.partition.ship
        head = chain.head
        process_all = head.process_all or each(head.process_element)
        timers = self.time.processing_time if chain.uses_processing_time else None
        while True:
            item = self._next(chain)
            kind = item.kind
            if kind is MessageKind.DATA:
                started = time.perf_counter()
                assert isinstance(item.payload, bytes)
                ship(self._push(self._input_records(chain, (decode_batch(item.payload),)),
                                process_all, timers))
                self.busy += time.perf_counter() - started
            elif kind is MessageKind.BARRIER:
                if aligner.barrier(item.connection, item.checkpoint_id):
                    self._checkpoint(chain, item.checkpoint_id)
                    gate.unblock_all()
                else:
                    gate.block(item.connection)
            elif kind is MessageKind.END_OF_PARTITION:
                completed = aligner.end_of_partition(item.connection)
                if completed is not None:
                    self._checkpoint(chain, completed)
                    gate.unblock_all()
                if aligner.all_ended:
                    gate.release(item)
                    self._end_input(chain)
                    return
            else:  # cancel
                return
            gate.release(item)

    def _next(self, chain: OperatorChain) -> BufferOrEvent:
        """The next item of the gate. While there is none, buffered frames leave, due
        processing-time callbacks run and the counters are reported."""
        gate, timers = self.gate, self.time.processing_time
        item = gate.take(0)
        while item is None:
            self._flush()
            self._ship_collected_records()
            chain.flush_printed()
            now = time.monotonic()
            if now >= self._next_metrics:
                self._next_metrics = now + METRICS_INTERVAL
                self.report(("metrics", *self.key, self._metrics()))
            wait = self._next_metrics - now
            if timers.next_due != MAX_TIMESTAMP:
                wait = min(wait, max(0.0, (timers.next_due - timers.clock()) / 1000))
            item = gate.take(wait)
            self._fire_due_timers()
        self._fire_due_timers()  # also between frames of a busy task (few records each)
        if time.monotonic() - self._last_flush >= self.buffer_timeout:
            self._flush()  # a busy task's buffers still leave every buffer timeout
        return item

    def _fire_due_timers(self) -> None:
        timers = self.time.processing_time
        if timers.next_due != MAX_TIMESTAMP and timers.clock() >= timers.next_due:
            started = time.perf_counter()
            timers.fire_due()
            self._ship_pending()
            self.busy += time.perf_counter() - started

    # -- output -----------------------------------------------------------------------------

    def _ship_pending(self) -> None:
        if self.pending:
            self.partition.ship(self.pending)
            self.pending.clear()

    def _ship_collected_records(self) -> None:
        """Collect sinks' records go to the driver as soon as the task is idle (a restart
        from a checkpoint may deliver some again, as Flink's collect sink without
        checkpoints does)."""
        for sink in self.collect_sinks:
            if sink.records:
                self.report(("collected", *self.key, sink.name, list(sink.records)))
                sink.records.clear()

    def _flush(self) -> None:
        for writer in self.writers:
            writer.flush()
        self._ship_pending()
        self._last_flush = time.monotonic()

    # -- checkpoints and the end ------------------------------------------------------------

    def _checkpoint(self, chain: OperatorChain, checkpoint_id: int) -> None:
        """The barrier of ``checkpoint_id`` passes this task: what precedes it leaves first,
        then the barrier, then the snapshot goes to the driver and the sinks roll over to
        the next checkpoint's output."""
        chain.prepare_snapshot_pre_barrier()
        self._flush()
        self._ship_collected_records()  # before the ack: a stop's savepoint has them all
        self.partition.broadcast(MessageKind.BARRIER, checkpoint_id)
        snapshot = self._snapshot(chain, ended=False)
        self.report(("ack", *self.key, checkpoint_id, SubtaskEpochResult(
            self._metrics(), snapshot, chain.committables())))
        self.checkpoint_id = checkpoint_id + 1
        chain.roll_over(self.checkpoint_id)

    def _end_input(self, chain: OperatorChain) -> None:
        """The input ended: the operators finish, and the end of partition follows the last
        frame."""
        self._finish_input(chain)
        self._ship_collected_records()
        self._finished(chain, ended_before=False)

    def _finished(self, chain: OperatorChain, ended_before: bool) -> None:
        self._flush()
        self.partition.broadcast(MessageKind.END_OF_PARTITION)
        committables = () if ended_before else chain.committables()
        self.report(("finished", *self.key, SubtaskEpochResult(
            self._metrics(), self._snapshot(chain, ended=True), committables)))

    def _metrics(self) -> Any:
        return self.metrics(round(self.busy * 1000))
