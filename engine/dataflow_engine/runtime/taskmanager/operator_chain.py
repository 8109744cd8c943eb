"""Flink's OperatorChain: the operators of one subtask and the outputs that connect them.

Operators are created and set up from the tail of the chain to the head (an operator's output
must exist before the operator is set up), opened tail first too (so every downstream operator
is ready before the head emits), then finished and closed head first (an operator may still
emit while finishing). A chain is a tree: an operator may have several chained outputs, and
its network outputs (RecordWriters) come first among its outputs, as in Flink.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import Any

from dataflow_engine.runtime.checkpoint.committer import Committable
from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, TaskRestore
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.streamoperators.factory import create_operator
from dataflow_engine.runtime.streamoperators.stream_operators import (
    PrintSinkOperator,
    SourceOperator,
    StreamOperator,
)
from dataflow_engine.runtime.tasks.descriptors import PayloadKind, TaskDescriptor
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import (
    BroadcastingOutputCollector,
    ChainingOutput,
    CopyingChainingOutput,
    CountingDiscardOutput,
    Output,
    RecordWriterOutput,
    WithSideOutputs,
)
from dataflow_engine.runtime.tasks.record_writer import RecordWriter
from dataflow_engine.runtime.time.processing_time import TaskTime
from dataflow_engine.runtime.time.split_watermarks import SourceSplits
from dataflow_engine.spec.model import OperatorType
from dataflow_engine.types.convert import converter, keeps_objects, needs_conversion
from dataflow_engine.types.typeinfo import TypeInformation, immutable_values

#: Receives ``(phase, operator name)`` as each life-cycle step runs (for tests and tracing).
LifecycleListener = Callable[[str, str], None]


def _tail_first(descriptor: TaskDescriptor) -> list[int]:
    """Post-order over chained outputs (side outputs too): every operator after all of its
    successors."""
    order: list[int] = []

    def visit(index: int) -> None:
        config = descriptor.operators[index]
        for successor in config.chained_outputs:
            visit(successor)
        for chained, _ in config.side_outputs.values():
            for successor in chained:
                visit(successor)
        order.append(index)

    visit(0)
    return order


def _source_splits(descriptor: TaskDescriptor) -> SourceSplits | None:
    """A Kafka source's partitions get watermarks of their own from the timestamps operators
    chained right after it, as Flink's KafkaSource makes them with fromSource's strategy."""
    head = descriptor.operators[0]
    if head.operator_type is not OperatorType.KAFKA:
        return None
    consumers = frozenset(descriptor.operators[i].node_id for i in head.chained_outputs
                          if descriptor.operators[i].operator_type is OperatorType.TIMESTAMPS)
    return SourceSplits(consumers) if consumers else None


def _conversion(record_type: TypeInformation | None,
                failure: Callable[[BaseException], OperatorFailure]
                ) -> Callable[[Any], Any] | None:
    """The conversion of an operator's records to its declared type on their way to the
    network; a record that does not fit fails that operator."""
    if not needs_conversion(record_type):
        return None
    convert = converter(record_type)

    def converted(record: Any) -> Any:
        try:
            return convert(record)
        except Exception as error:
            raise failure(error) from error

    return converted


class OperatorChain:
    def __init__(self, descriptor: TaskDescriptor, task: TaskInfo,
                 writers: Sequence[RecordWriter], time: TaskTime,
                 listener: LifecycleListener | None = None) -> None:
        self.descriptor = descriptor
        self.listener = listener
        self.streaming = time.streaming
        self.operators: list[StreamOperator | None] = [None] * len(descriptor.operators)
        self.tail_first = _tail_first(descriptor)
        time.source_splits = _source_splits(descriptor)
        for index in self.tail_first:
            config = descriptor.operators[index]
            payload = descriptor.input_payload if index == 0 else PayloadKind.RECORD
            operator = create_operator(config, task, descriptor.runtime_mode, payload, time)
            fresh = isinstance(operator, SourceOperator) and operator.emits_fresh_records()
            main = self._outputs(config.chained_outputs, config.writer_outputs, writers,
                                 _conversion(config.output_type, operator.failure),
                                 config.output_type, fresh)
            side_outputs = {tag: self._outputs(chained, written, writers, None, None)
                            for tag, (chained, written) in config.side_outputs.items()}
            operator.side_outputs = side_outputs
            self._notify("setup", operator.name)
            operator.setup(WithSideOutputs(main, list(side_outputs.values())) if side_outputs
                           else main)
            self.operators[index] = operator
        #: In node order, the order their lines reach stdout (see :meth:`flush_printed`).
        self.print_sinks = sorted(
            (op for op in self.operators if isinstance(op, PrintSinkOperator)),
            key=lambda sink: sink.config.node_id)

    def _outputs(self, chained_positions: Sequence[int], writer_positions: Sequence[int],
                 writers: Sequence[RecordWriter], convert: Callable[[Any], Any] | None,
                 record_type: TypeInformation | None, fresh: bool = False) -> Output:
        """One output of an operator (main or a side output): its RecordWriters first, which
        ``convert`` records (chained operators get them as made, as PyFlink's fused Python
        operators do). Without object reuse each chained operator copies its input, except
        records of a declared immutable type (whose Flink copy is the record itself) and the
        sole reader of ``fresh`` records, which nothing else can see change.

        A RecordWriter keeps records until its batch leaves, where Flink's serializes each at
        once: it gets a copy of any record that could change before then (an operator may
        change what it emitted, or keep it in its state and change it there), with or without
        object reuse. That is a record whose conversion keeps some of its objects (one of no
        declared type, or with PICKLED_BYTE_ARRAY fields; conversion makes the rest anew),
        unless a source made it for this output alone. A field aggregation's writer copies
        what it keeps itself."""
        reuse = self.descriptor.object_reuse
        chained = [self._operator(i) for i in chained_positions]
        shared = (reuse or immutable_values(record_type)
                  or (fresh and len(chained) == 1 and not writer_positions))
        changeable = keeps_objects(record_type) and not fresh
        outputs: list[Output] = [
            RecordWriterOutput(writers[w], changeable and not writers[w].copies_what_it_keeps,
                               convert)
            for w in writer_positions]
        outputs += [ChainingOutput(op) if shared else CopyingChainingOutput(op) for op in chained]
        return _single(outputs)

    def _operator(self, index: int) -> StreamOperator:
        operator = self.operators[index]
        assert operator is not None, "successors are set up before their predecessors"
        return operator

    def _notify(self, phase: str, name: str) -> None:
        if self.listener is not None:
            self.listener(phase, name)

    @property
    def head(self) -> StreamOperator:
        return self._operator(0)

    @property
    def uses_processing_time(self) -> bool:
        """Whether the task must read the clock between records to fire processing-time
        callbacks: never in BATCH mode, where every timer fires at the end of input."""
        return self.streaming and any(type(op).USES_PROCESSING_TIME for op in self.all_operators)

    @property
    def all_operators(self) -> list[StreamOperator]:
        """Head first (the order operators finish and close in)."""
        return [self._operator(i) for i in reversed(self.tail_first)]

    def open(self) -> None:
        for index in self.tail_first:
            operator = self._operator(index)
            self._notify("open", operator.name)
            operator.open()

    def finish(self) -> None:
        for operator in self.all_operators:
            self._notify("finish", operator.name)
            operator.finish()
        self.flush_printed()

    def flush_printed(self) -> None:
        """What the print sinks hold reaches the relay (or stdout), a sink at a time in node
        order: the relay shows one pass's files in that order too, so two sinks of a subtask
        print in an order that does not depend on when the relay looked (finishing goes head
        first, which puts a later branch's sink before an earlier one's)."""
        for sink in self.print_sinks:
            sink.flush()

    # -- epochs -------------------------------------------------------------------------------

    def initialize_state(self, restore: TaskRestore) -> None:
        """Each operator loads its state by uid (one without state in the snapshot starts
        empty: an operator added by an upgrade)."""
        for operator in self.all_operators:
            state = restore.operators.get(_uid(operator))
            if state is not None:
                self._notify("initialize_state", operator.name)
                operator.initialize_state(state)

    def prepare_snapshot_pre_barrier(self) -> None:
        for operator in self.all_operators:
            operator.prepare_snapshot_pre_barrier()

    def snapshot_state(self) -> dict[str, OperatorSnapshot]:
        return {_uid(operator): operator.snapshot_state() for operator in self.all_operators}

    def committables(self) -> tuple[Committable, ...]:
        return tuple(c for operator in self.all_operators for c in operator.committables())

    def roll_over(self, checkpoint_id: int) -> None:
        """A pipelined task's barrier passed: what follows belongs to ``checkpoint_id``."""
        for operator in self.all_operators:
            operator.roll_over(checkpoint_id)

    def check_picklable(self) -> None:
        """Names the operator whose state cannot be pickled (then raises its error)."""
        for operator in self.all_operators:
            try:
                pickle.dumps(operator.snapshot_state(), pickle.HIGHEST_PROTOCOL)
            except Exception as error:
                raise operator.failure(RuntimeError(
                    f"its state cannot be snapshotted (pickled): {error}")) from error

    def close(self) -> None:
        """Closes every operator, head first; the first error is raised after all closed."""
        first_error: BaseException | None = None
        for operator in self.all_operators:
            self._notify("close", operator.name)
            try:
                operator.close()
            except Exception as error:
                first_error = first_error or error
        if first_error is not None:
            raise first_error


def _uid(operator: StreamOperator) -> str:
    return operator.config.uid or operator.name


def _single(outputs: list[Output]) -> Output:
    if not outputs:
        return CountingDiscardOutput()
    if len(outputs) == 1:
        return outputs[0]
    return BroadcastingOutputCollector(outputs)
