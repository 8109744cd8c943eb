"""Stream operators: Flink's StreamMap, StreamFlatMap, StreamFilter, keyed aggregations,
KeyedProcessOperator, sources and sinks.

Life cycle (driven by :class:`~.operator_chain.OperatorChain`): ``setup(output)`` loads the user
function, ``open()`` opens it and builds ``process_element`` (a closure over the output's
callables: no attribute lookups per record), ``finish()`` is the end of input (keyed BATCH
operators emit their final values here), ``close()`` releases resources.

Watermarks reach an operator through ``process_watermark`` (between records, never inside
one); an operator without timers passes them on unchanged, as Flink's AbstractStreamOperator.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from itertools import pairwise
from typing import IO, Any, ClassVar

from dataflow_engine.runtime.checkpoint.committer import Committable, FileCommittable
from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, RestoredState
from dataflow_engine.runtime.functions.aggregations import AGGREGATORS, set_field
from dataflow_engine.runtime.functions.context import RuntimeContext, TaskInfo
from dataflow_engine.runtime.functions.output_tag import OutputTag
from dataflow_engine.runtime.functions.process_context import (
    KeyedProcessContext,
    NonKeyedTimerService,
    OnTimerContext,
    ProcessContext,
    TimeDomain,
    TimerService,
)
from dataflow_engine.runtime.functions.udf import UserFunction, load_user_function
from dataflow_engine.runtime.state.backend import HeapKeyedStateBackend
from dataflow_engine.runtime.state.key_groups import (
    assign_to_key_group,
    batch_key_order,
    key_hash,
)
from dataflow_engine.runtime.state.timer_service import InternalTimer, InternalTimerService
from dataflow_engine.runtime.streamoperators.sources import datagen_value, read_text_segments
from dataflow_engine.runtime.tasks.descriptors import OperatorConfig, PayloadKind
from dataflow_engine.runtime.tasks.failures import OperatorFailure, operator_failure
from dataflow_engine.runtime.tasks.fusion import FusedStep, fuse
from dataflow_engine.runtime.tasks.outputs import (
    ChainingOutput,
    Collect,
    CollectAll,
    Counter,
    CountingDiscardOutput,
    Output,
    input_copier,
    targets_of,
)
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.processing_time import TaskTime
from dataflow_engine.spec.model import RuntimeMode
from dataflow_engine.types.convert import converter, needs_conversion
from dataflow_engine.types.java_string import java_printer, printer


def _not_open(record: Any) -> None:
    raise RuntimeError("operator is not open")


class StreamOperator:
    #: May register processing-time callbacks: the task's loop then checks the clock.
    USES_PROCESSING_TIME: ClassVar[bool] = False

    def __init__(self, config: OperatorConfig, task: TaskInfo) -> None:
        self.config = config
        self.name = config.name
        self.task = task
        #: Set by the OperatorChain before setup: the subtask's timestamp cell and timers.
        self.time = TaskTime(streaming=True)
        #: The last watermark this operator received (Flink's combined watermark).
        self.current_watermark = MIN_TIMESTAMP
        #: Side outputs by OutputTag id (set by the OperatorChain before setup).
        self.side_outputs: dict[str, Output] = {}
        self._side_collects: dict[str, Collect] = {}
        self.records_in = Counter()
        self.records_out = Counter()
        self.output: Output = CountingDiscardOutput()
        self.process_element: Collect = _not_open
        #: A loop of ``process_element`` over many records (a fused run's), if it has one.
        self.process_all: CollectAll | None = None
        self.collect: Collect = _not_open
        self.collect_all: CollectAll = _not_open
        #: Set by a CopyingChainingOutput: copy every input record (no object reuse).
        self.copy_input = False

    def runtime_context(self) -> RuntimeContext:
        return self.task.runtime_context(self.name)

    def failure(self, error: BaseException) -> OperatorFailure:
        return operator_failure(
            error, operator=self.name, task_name=self.task.task_name,
            subtask_index=self.task.subtask_index, parallelism=self.task.parallelism,
            attempt_number=self.task.attempt_number)

    def setup(self, output: Output) -> None:
        self.output = output
        self.records_out = output.counter

    def open(self) -> None:
        self.collect, self.collect_all = self.output.bind()
        self._side_collects = {tag: output.bind()[0]
                               for tag, output in self.side_outputs.items()}
        self.process_element = self.create_processor(self.collect, self.collect_all)

    def emit_side_output(self, tag: str, value: Any) -> None:
        """Emits to the side output ``tag``; one nobody reads drops it, as in Flink."""
        collect = self._side_collects.get(tag)
        if collect is not None:
            collect(value)

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        return _not_open

    def process_watermark(self, timestamp: int) -> None:
        self.current_watermark = timestamp
        self.output.emit_watermark(timestamp)

    def process_watermark_status(self, idle: bool) -> None:
        self.output.emit_watermark_status(idle)

    def finish(self) -> None:
        """End of input."""

    def close(self) -> None:
        """Releases resources; also called after a failure."""

    # -- epochs and snapshots (Flink's StreamOperatorStateHandler) ---------------------------

    def initialize_state(self, state: RestoredState) -> None:
        """Loads a snapshot after setup and before :meth:`open` (Flink's initializeState)."""
        self.current_watermark = state.watermark

    def prepare_snapshot_pre_barrier(self) -> None:
        """The epoch ends: emit what must reach downstream before the snapshot is taken."""

    def snapshot_state(self) -> OperatorSnapshot:
        """This operator's state at the end of an epoch (Flink's snapshotState)."""
        return OperatorSnapshot(watermark=self.current_watermark)

    def committables(self) -> tuple[Committable, ...]:
        """What this sink publishes once a checkpoint covering the epoch completes."""
        return ()

    def roll_over(self, checkpoint_id: int) -> None:
        """A pipelined task took its snapshot and handed :meth:`committables` over: what this
        operator writes from now on belongs to checkpoint ``checkpoint_id`` (Flink's sinks
        roll their part files or transactions on checkpoints)."""


class AbstractUdfStreamOperator(StreamOperator):
    """An operator calling a user function, which it loads in setup, opens and closes."""

    #: The method of a function class this operator calls.
    METHOD: ClassVar[str] = "__call__"
    user_function: UserFunction | None = None

    @property
    def udf(self) -> UserFunction:
        assert self.user_function is not None, "setup() loads the user function"
        return self.user_function

    def setup(self, output: Output) -> None:
        super().setup(output)
        assert self.config.function is not None
        try:
            self.user_function = load_user_function(self.config.function, self.METHOD)
        except Exception as error:
            raise self.failure(error) from error

    def open(self) -> None:
        open_function(self, self.user_function)  # none for a timestamps operator's field
        super().open()

    def close(self) -> None:
        close_function(self, self.user_function)


def open_function(operator: StreamOperator, function: UserFunction | None) -> None:
    """A rich function's ``open(runtime_context)``; its failure is the operator's."""
    if function is not None and function.open is not None:
        try:
            function.open(operator.runtime_context())
        except Exception as error:
            raise operator.failure(error) from error


def close_function(operator: StreamOperator, function: UserFunction | None) -> None:
    if function is not None and function.close is not None:
        try:
            function.close()
        except Exception as error:
            raise operator.failure(error) from error


class _FusableOperator(AbstractUdfStreamOperator):
    """A stateless operator that a run of chained ones can inline (see tasks.fusion)."""

    IS_FILTER: ClassVar[bool] = False

    def fused_step(self) -> FusedStep | None:
        """This operator as a step of a fused run; None when it cannot be one."""
        return FusedStep("filter" if self.IS_FILTER else "map", self.udf.call, self.failure,
                         self.copy_input, self.records_in)

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        first = self.fused_step()
        if first is None:
            return self.processor(collect)
        run: list[_FusableOperator] = [self]
        steps = [first]
        while (isinstance(run[-1].output, ChainingOutput)
               and isinstance(run[-1].output.operator, _FusableOperator)):
            step = run[-1].output.operator.fused_step()
            if step is None:
                break
            run.append(run[-1].output.operator)
            steps.append(step)
        last = run[-1]  # open, as every operator downstream: its outputs are bound
        # A discarding sink after a step that passes on one record per input (not a filter)
        # counts what the step counts: the run shares that counter with it and drops the
        # records itself, rather than calling the sink once per record to count one.
        sink = last.output.operator if isinstance(last.output, ChainingOutput) else None
        if not isinstance(sink, DiscardingSinkOperator) or steps[-1].kind == "filter":
            sink = None
        targets = () if sink is not None else targets_of(last.output, last.collect)
        # One operator is a run too when a RecordWriter's copy is made in it, not in a call.
        if len(run) == 1 and sink is None and not any(copying for _, copying in targets):
            return self.processor(collect)
        assert targets or sink, "a run is fused once its last operator's outputs are bound"
        fused = fuse(steps, *targets)
        for op, counter in zip(run, fused.counters, strict=True):
            op.records_in = counter
        for op, successor in pairwise(run):
            op.records_out = successor.records_in
        if sink is not None:
            sink.records_in = last.records_out = fused.counters[-1]
        self.process_all = fused.process_all
        return fused.process_element

    def processor(self, collect: Collect) -> Collect:
        """``process_element`` of this operator alone."""
        raise NotImplementedError


class StreamMap(_FusableOperator):
    METHOD = "map"

    def processor(self, collect: Collect) -> Collect:
        fn, counter, failure = self.udf.call, self.records_in, self.failure
        copying, atomic, copy = input_copier(self.copy_input)

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            try:
                result = fn(value)
            except Exception as error:
                raise failure(error) from error
            collect(result)

        return process_element


class StreamFlatMap(AbstractUdfStreamOperator):
    METHOD = "flat_map"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        fn, counter, failure = self.udf.call, self.records_in, self.failure
        copying, atomic, copy = input_copier(self.copy_input)

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            try:
                collect_all(fn(value))
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        # The loop repeats process_element's body on purpose: a source pushes its records
        # through it a chunk at a time, and a call per record cost a word count's loop over
        # its lines 6% (measured alone; within the noise of a whole subtask).
        def process_all(values: Iterable[Any]) -> None:
            for value in values:
                counter.count += 1
                if copying and type(value) not in atomic:
                    value = copy(value)
                try:
                    collect_all(fn(value))
                except OperatorFailure:
                    raise
                except Exception as error:
                    raise failure(error) from error

        self.process_all = process_all
        return process_element


class StreamFilter(_FusableOperator):
    METHOD = "filter"
    IS_FILTER = True

    def processor(self, collect: Collect) -> Collect:
        fn, counter, failure = self.udf.call, self.records_in, self.failure
        copying, atomic, copy = input_copier(self.copy_input)

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            try:
                keep = fn(value)
            except Exception as error:
                raise failure(error) from error
            if keep:
                collect(value)

        return process_element


class _KeyedOperator(StreamOperator):
    """Input is ``(key, record)`` pairs, or ``(key, first, aggregate, count)`` partials when the
    producers pre-aggregated (BATCH)."""

    def __init__(self, config: OperatorConfig, task: TaskInfo, mode: RuntimeMode,
                 payload: PayloadKind) -> None:
        super().__init__(config, task)
        self.batch = mode is RuntimeMode.BATCH
        self.payload = payload
        #: key -> [first record or accumulator, aggregate]
        self.state: dict[Any, list[Any]] = {}

    def finish(self) -> None:
        """BATCH: each key's final value, in the order of the keys' sorted input (Flink sorts
        a BATCH keyed input by key; see ``batch_key_order``)."""
        if self.batch:
            emit, state = self.collect, self.state
            order = batch_key_order(self.config.key_type)
            for key in (sorted(state, key=order) if order is not None else state):
                first, aggregate = state[key]
                emit(self.final_value(first, aggregate))

    def final_value(self, first: Any, aggregate: Any) -> Any:
        return first

    def initialize_state(self, state: RestoredState) -> None:
        super().initialize_state(state)
        for part in state.keyed:
            for group, entries in part.items():
                if group in state.key_groups:
                    self.state.update(entries)

    def snapshot_state(self) -> OperatorSnapshot:
        groups: dict[int, dict[Any, list[Any]]] = {}
        max_parallelism, hash_key = self.config.max_parallelism, key_hash(self.config.key_type)
        for key, entry in self.state.items():
            groups.setdefault(assign_to_key_group(key, max_parallelism, hash_key), {})[key] = entry
        return OperatorSnapshot(groups, None, self.current_watermark)


class StreamGroupedAggregation(_KeyedOperator):
    """Keyed ``sum`` / ``min`` / ``max`` of ``args.field``."""

    def final_value(self, first: Any, aggregate: Any) -> Any:
        try:
            return set_field(first, self.config.args["field"], aggregate)
        except Exception as error:
            raise self.failure(error) from error

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        combine = AGGREGATORS[self.config.operator_type]
        field: int | str = self.config.args["field"]
        state, counter, failure = self.state, self.records_in, self.failure
        get = state.get
        if not self.batch:

            def process_streaming(pair: Any) -> None:
                counter.count += 1
                key, value = pair
                current = get(key)
                if current is None:
                    state[key] = [value, None]
                    collect(value)
                    return
                try:
                    value = set_field(current[0], field, combine(current[0][field], value[field]))
                except Exception as error:
                    raise failure(error) from error
                current[0] = value
                collect(value)

            return process_streaming
        if self.payload is PayloadKind.PARTIAL:

            def merge_partial(partial: Any) -> None:
                key, first, aggregate, count = partial
                counter.count += count
                current = get(key)
                if current is None:
                    state[key] = [first, aggregate]
                    return
                try:
                    current[1] = combine(current[1], aggregate)
                except Exception as error:
                    raise failure(error) from error

            return merge_partial

        def accumulate(pair: Any) -> None:
            counter.count += 1
            key, value = pair
            try:
                current = get(key)
                if current is None:
                    state[key] = [value, value[field]]
                else:
                    current[1] = combine(current[1], value[field])
            except Exception as error:
                raise failure(error) from error

        return accumulate


class _UdfKeyedOperator(AbstractUdfStreamOperator, _KeyedOperator):
    """A keyed operator with a user function (reduce, process), as in Flink."""


class BackendStateOperator(_UdfKeyedOperator):
    """A keyed operator whose state is a HeapKeyedStateBackend and an InternalTimerService
    (keyed process functions, windows): it snapshots both by key group."""

    backend: HeapKeyedStateBackend
    timers: InternalTimerService

    def initialize_state(self, state: RestoredState) -> None:
        StreamOperator.initialize_state(self, state)  # not _KeyedOperator's rolling values
        parts = state.keyed
        self.backend.restore(({group: data["state"] for group, data in part.items()
                               if "state" in data} for part in parts), state.key_groups)
        self.timers.restore(({group: data["timers"] for group, data in part.items()
                              if "timers" in data} for part in parts), state.key_groups)
        self.timers.current_watermark = state.watermark

    def snapshot_state(self) -> OperatorSnapshot:
        """``{"state": ..., "timers": [...]}`` per key group: the backend's state (for a
        window also its contents, trigger state and merging window sets) and the timers."""
        groups: dict[int, dict[str, Any]] = {}
        for group, states in self.backend.snapshot().items():
            groups.setdefault(group, {})["state"] = states
        for group, registered in self.timers.snapshot(self.backend.max_parallelism,
                                                      self.backend.hash_key).items():
            groups.setdefault(group, {})["timers"] = registered
        return OperatorSnapshot(groups, None, self.current_watermark)


class StreamGroupedReduce(_UdfKeyedOperator):
    """Keyed ``reduce``: ``fn(accumulated, next)``, rolling in STREAMING, final in BATCH."""

    METHOD = "reduce"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        assert self.user_function is not None
        fn = self.user_function.call
        state, counter, failure = self.state, self.records_in, self.failure
        streaming = not self.batch
        get = state.get

        def process(pair: Any) -> None:
            counter.count += 1
            key, value = pair
            current = get(key)
            if current is None:
                state[key] = [value, None]
            else:
                try:
                    value = fn(current[0], value)
                except Exception as error:
                    raise failure(error) from error
                current[0] = value
            if streaming:
                collect(value)

        if streaming or self.payload is not PayloadKind.PARTIAL:
            return process

        def merge_partial(partial: Any) -> None:
            key, accumulator, _, count = partial
            counter.count += count
            current = get(key)
            if current is None:
                state[key] = [accumulator, None]
                return
            try:
                current[0] = fn(current[0], accumulator)
            except Exception as error:
                raise failure(error) from error

        return merge_partial


def results_emitter(collect: Collect, side_output: Callable[[str, Any], None]
                    ) -> CollectAll:
    """Emits a process function's results: ``(output_tag, value)`` pairs go to that side
    output (PyFlink's way of writing to one), everything else to the main output."""

    def emit(results: Iterable[Any]) -> None:
        for item in results:
            if item.__class__ is tuple and len(item) == 2 and item[0].__class__ is OutputTag:
                side_output(item[0].tag_id, item[1])
            else:
                collect(item)

    return emit


class ProcessOperator(AbstractUdfStreamOperator):
    """Flink's ProcessOperator running PyFlink's ProcessFunction on a non-keyed stream:
    ``process_element(value, ctx)`` with ``ctx.timestamp()`` and the current times; timers and
    keyed state need a keyed stream."""

    METHOD = "process_element"

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        fn, counter, failure = self.udf.call, self.records_in, self.failure
        copying, atomic, copy = input_copier(self.copy_input)
        service = self.time.processing_time
        ctx = ProcessContext(self.time.timestamp, NonKeyedTimerService(
            service.get_current_processing_time, lambda: self.current_watermark))
        emit = results_emitter(collect, self.emit_side_output)

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            try:
                result = fn(value, ctx)
                if result is not None:
                    emit(result)
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error

        return process_element


class KeyedProcessOperator(BackendStateOperator):
    """Flink's KeyedProcessOperator running PyFlink's KeyedProcessFunction.

    ``process_element(value, ctx)`` and ``on_timer(timestamp, ctx)`` return (or yield) any
    number of records; a plain callable ``fn(value, ctx)`` works as ``process_element``. The
    function's ``open(runtime_context)`` gets keyed state (``runtime_context.get_state(...)``)
    scoped to the key being processed, and ``ctx.timer_service()`` registers timers for that
    key. Outputs keep the input's timestamp; an event-time timer's outputs get the timer's
    timestamp and a processing-time timer's none, as in Flink.
    """

    METHOD = "process_element"
    USES_PROCESSING_TIME = True

    def __init__(self, config: OperatorConfig, task: TaskInfo, mode: RuntimeMode,
                 payload: PayloadKind) -> None:
        super().__init__(config, task, mode, payload)
        self.batch = False  # nothing to flush: the function emits its own outputs
        self.backend = HeapKeyedStateBackend(config.max_parallelism,
                                             hash_key=key_hash(config.key_type))
        self.timers = InternalTimerService(self, self.backend, self.time.processing_time)

    def runtime_context(self) -> RuntimeContext:
        return self.task.runtime_context(self.name, self.backend)

    def setup(self, output: Output) -> None:
        super().setup(output)
        # The TaskTime is attached after construction: bind the timers to its clock now.
        self.timers.processing_time = self.time.processing_time
        timer_service = TimerService(self.timers)
        self.context = KeyedProcessContext(self.time.timestamp, timer_service)
        self.timer_context = OnTimerContext(self.time.timestamp, timer_service)
        self.on_timer = getattr(self.udf.instance, "on_timer", None)

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        fn, counter, failure = self.udf.call, self.records_in, self.failure
        ctx, backend = self.context, self.backend
        emit = self.emit_results = results_emitter(collect, self.emit_side_output)

        # A head takes its input a chunk at a time: the loop is the path, one record the rare.
        def process_all(pairs: Iterable[Any]) -> None:
            for pair in pairs:
                counter.count += 1
                key, value = pair
                ctx.current_key = backend.current_key = key
                try:
                    result = fn(value, ctx)
                    if result is not None:
                        emit(result)
                except OperatorFailure:
                    raise
                except Exception as error:
                    raise failure(error) from error

        def process_element(pair: Any) -> None:
            process_all((pair,))

        self.process_all = process_all
        return process_element

    def _fire(self, timer: InternalTimer, domain: TimeDomain) -> None:
        if self.on_timer is None:
            return
        cell, ctx = self.time.timestamp, self.timer_context
        previous = cell.value
        cell.value = timer.timestamp if domain is TimeDomain.EVENT_TIME else None
        ctx.current_key, ctx.domain = timer.key, domain
        try:
            result = self.on_timer(timer.timestamp, ctx)
            if result is not None:
                self.emit_results(result)
        except OperatorFailure:
            raise
        except Exception as error:
            raise self.failure(error) from error
        finally:
            cell.value = previous

    def on_event_time(self, timer: InternalTimer) -> None:
        self._fire(timer, TimeDomain.EVENT_TIME)

    def on_processing_time(self, timer: InternalTimer) -> None:
        self._fire(timer, TimeDomain.PROCESSING_TIME)

    def process_watermark(self, timestamp: int) -> None:
        self.timers.advance_watermark(timestamp)
        super().process_watermark(timestamp)

    def finish(self) -> None:
        if not self.time.streaming:  # BATCH: every timer fires at the end of input
            self.timers.advance_watermark(MAX_TIMESTAMP)
            self.timers.fire_processing_time(MAX_TIMESTAMP)


class SourceOperator(StreamOperator):
    """A source: the StreamTask pushes :meth:`records` of its split into :attr:`collect`.

    A bounded run reads the split planned with the job; each epoch of a continuous job reads
    the split the driver assigned for that epoch."""

    def __init__(self, config: OperatorConfig, task: TaskInfo) -> None:
        super().__init__(config, task)
        splits = config.splits
        self._split: Any = splits[task.subtask_index] if splits else None

    def open(self) -> None:
        self.collect, self.collect_all = self.output.bind()

    def assign_split(self, split: Any) -> None:
        self._split = split

    def split(self) -> Any:
        return self._split

    def records(self) -> Iterable[Any]:
        raise NotImplementedError

    def emits_fresh_records(self) -> bool:
        """Every record is a new object that nothing else refers to (the source made it by
        counting or decoding and keeps no reference): its one chained consumer may have it
        without a copy, since no one else could see it change or change it."""
        return False


class CollectionSource(SourceOperator):
    def records(self) -> Iterable[Any]:
        elements: Iterable[Any] = self.split() or ()
        return elements


class SequenceSource(SourceOperator):
    def records(self) -> Iterable[Any]:
        start, end = self.split() or (0, 0)
        return range(start, end)

    def emits_fresh_records(self) -> bool:
        return True


class DatagenSource(SourceOperator):
    """Flink's DataGeneratorSource: record ``i`` is ``function(i)`` (a GeneratorFunction's
    ``map``, or any callable), or ``(i, value)`` with a seeded pseudo-random ``value``.

    A split is a range of the global index; subtask ``s`` of ``p`` emits the indices
    ``i % p == s`` in it, so the position of the whole source is one number, whatever the
    parallelism it is restored with."""

    user_function: UserFunction | None = None

    def setup(self, output: Output) -> None:
        super().setup(output)
        if self.config.function is not None:
            try:
                self.user_function = load_user_function(self.config.function, "map")
            except Exception as error:
                raise self.failure(error) from error

    def open(self) -> None:
        open_function(self, self.user_function)
        super().open()

    def records(self) -> Iterable[Any]:
        start, end = self.split() or (0, 0)
        parallelism, index = self.task.parallelism, self.task.subtask_index
        indices = range(start + (index - start) % parallelism, end, parallelism)
        if self.user_function is not None:
            return map(self.user_function.call, indices)
        seed = int(self.config.args.get("seed", 0))
        return ((i, datagen_value(seed, i)) for i in indices)

    def emits_fresh_records(self) -> bool:
        """Its own ``(i, value)`` pairs are; what a user's generator function returns may be
        an object the function keeps."""
        return self.config.function is None

    def close(self) -> None:
        close_function(self, self.user_function)


class TextFileSource(SourceOperator):
    def records(self) -> Iterator[str]:
        return read_text_segments(self.split() or ())

    def emits_fresh_records(self) -> bool:
        return True


class PrintSinkOperator(StreamOperator):
    """Flink's PrintSink: ``identifier:i> record`` (1-based subtask, only when parallel)."""

    def __init__(self, config: OperatorConfig, task: TaskInfo) -> None:
        super().__init__(config, task)
        self._file: IO[str] | None = None

    @property
    def prefix(self) -> str:
        identifier = self.config.args.get("identifier")
        parallel = self.task.parallelism > 1
        subtask = f"{self.task.subtask_index + 1}" if parallel else ""
        if identifier is not None:
            return f"{identifier}:{subtask}> " if parallel else f"{identifier}> "
        return f"{subtask}> " if parallel else ""

    def open(self) -> None:
        spool = self.task.print_spool
        if spool is not None:
            name = (f"{self.config.node_id}-{self.task.subtask_index}-"
                    f"{self.task.attempt_number}-{uuid.uuid4().hex}.out")
            self._file = open(os.path.join(spool, name), "w", encoding="utf-8")  # noqa: SIM115
            write = self._file.write
        else:
            write = sys.stdout.write
        counter, prefix = self.records_in, self.prefix
        if not needs_conversion(self.config.input_type):
            def process_element(value: Any) -> None:  # printing reads the record: no copy
                counter.count += 1
                write(f"{prefix}{value}\n")

            self.process_element = process_element
            return
        form, failure = printer(self.config.input_type), self.failure

        def print_typed(value: Any) -> None:
            counter.count += 1
            try:
                line = form(value)
            except Exception as error:
                raise failure(error) from error
            write(f"{prefix}{line}\n")

        self.process_element = print_typed

    def flush(self) -> None:
        """What was printed reaches the relay (or stdout) now: the chain flushes its print
        sinks when they finish (in node order), a pipelined task also when it runs out of
        input, as its buffers of records."""
        (self._file or sys.stdout).flush()

    def close(self) -> None:
        """A spool file is renamed ``.done`` when closed, so that the relay can forget it
        (a continuous job opens one per subtask and epoch)."""
        if self._file is not None:
            self._file.close()
            path = self._file.name
            self._file = None
            os.replace(path, path.removesuffix(".out") + ".done")


_BUCKET_FIELDS = {"yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "mm": "%M",
                  "ss": "%S"}
_BUCKET_TOKEN = re.compile(r"yyyy|yy|MM|dd|HH|mm|ss|'([^']*)'|.")


def bucket_name(pattern: str, moment: time.struct_time) -> str:
    """A bucket's directory name: ``moment`` in a Java DateTimeFormatter ``pattern`` of the
    letters the spec allows (``yyyy-MM-dd--HH`` is Flink's default)."""
    parts = []
    for match in _BUCKET_TOKEN.finditer(pattern):
        token = match.group(0)
        if token in _BUCKET_FIELDS:
            parts.append(time.strftime(_BUCKET_FIELDS[token], moment))
        else:
            parts.append(match.group(1) if match.group(1) is not None else token)
    return "".join(parts)


class FileSinkOperator(StreamOperator):
    """One part file per subtask, written under a hidden temporary name.

    A bounded run renames it at end of input; its final name depends only on the subtask, so
    a retried attempt replaces (never adds to) what an earlier attempt committed. In a
    continuous job each epoch with records closes a part file (synced to disk) named after
    the subtask, the epoch and the attempt's own id, so that it never replaces a published
    one, and the driver renames it once a checkpoint covering the epoch completed (Flink's
    FileSink commits pending files on checkpoints). An attempt that fails while writing
    deletes its file; the driver removes the hidden files no checkpoint publishes.
    """

    def __init__(self, config: OperatorConfig, task: TaskInfo) -> None:
        super().__init__(config, task)
        self._name_part(task.epoch)
        self._file: IO[str] | None = None
        self._part: list[Callable[[str], Any]] = [lambda _text: None]
        self._pending: tuple[Committable, ...] = ()
        #: records_in when the part file was opened.
        self._part_start = 0

    def _name_part(self, epoch: int | None) -> None:
        """The next part file's names, in the bucket of now (a pipelined task's part files
        move on to the next bucket as time does)."""
        args, task = self.config.args, self.task
        directory = str(args["path"])
        bucket_format = args.get("bucketFormat")
        if bucket_format is not None:
            directory = os.path.join(directory, bucket_name(bucket_format, time.localtime()))
        token = uuid.uuid4().hex
        name = f"{args.get('partPrefix', 'part')}-{task.subtask_index:05d}"
        if epoch is not None:
            name += f"-{epoch:08d}-{token[:12]}"
        name += args.get("partSuffix", "")
        self.final_path = os.path.join(directory, name)
        self.temp_path = os.path.join(
            directory, f".{name}.{task.attempt_number}.{token}.inprogress")

    def open(self) -> None:
        self._open_part()
        part = self._part  # the part file's write, swapped when it rolls over
        encode: Callable[[Any], str] = (
            json.JSONEncoder(ensure_ascii=False).encode
            if self.config.args.get("format") == "json" else java_printer(self.config.input_type))
        counter, failure = self.records_in, self.failure

        def process_element(value: Any) -> None:  # encoded at once: no copy needed
            counter.count += 1
            try:
                line = encode(value)
            except Exception as error:
                raise failure(error) from error
            part[0](line)
            part[0]("\n")

        self.process_element = process_element

    def finish(self) -> None:
        if self.task.epoch is not None:
            self._close_part()
            return
        assert self._file is not None
        self._file.close()
        self._file = None
        os.replace(self.temp_path, self.final_path)

    def prepare_snapshot_pre_barrier(self) -> None:
        self._close_part()

    def _open_part(self) -> None:
        try:
            os.makedirs(os.path.dirname(self.final_path), exist_ok=True)
            self._file = open(self.temp_path, "w", encoding="utf-8")  # noqa: SIM115
        except OSError as error:
            raise self.failure(error) from error
        self._part[0] = self._file.write
        self._part_start = self.records_in.count

    def _close_part(self) -> None:
        """Closes this epoch's part file: pending (and durable) if it has records, else
        removed."""
        assert self._file is not None
        written = self.records_in.count > self._part_start
        self._file.flush()
        if written:
            os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        if written:
            self._pending = (FileCommittable(self.temp_path, self.final_path),)
        else:
            os.remove(self.temp_path)

    def roll_over(self, checkpoint_id: int) -> None:
        """The next part file (its writes go to the same file object the element function
        bound, so the new file takes its place)."""
        self._pending = ()
        self._name_part(checkpoint_id)
        self._open_part()

    def committables(self) -> tuple[Committable, ...]:
        return self._pending

    def close(self) -> None:
        if self._file is not None:  # not committed: this attempt failed
            self._file.close()
            self._file = None
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.temp_path)


class CollectSinkOperator(StreamOperator):
    """Keeps records for the driver; the StreamTask ships them after end of input."""

    def __init__(self, config: OperatorConfig, task: TaskInfo) -> None:
        super().__init__(config, task)
        self.records: list[Any] = []

    def open(self) -> None:
        append, counter = self.records.append, self.records_in
        copying, atomic, copy = input_copier(self.copy_input)
        convert = converter(self.config.input_type)
        failure = self.failure

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            try:
                append(convert(value))
            except Exception as error:
                raise failure(error) from error

        self.process_element = process_element


class DiscardingSinkOperator(StreamOperator):
    def open(self) -> None:
        counter = self.records_in

        def process_element(value: Any) -> None:
            counter.count += 1

        self.process_element = process_element
