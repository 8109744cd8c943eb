"""Flink's TimestampsAndWatermarksOperator: stamps each record with its event time and runs
the strategy's WatermarkGenerator (one per partition right after a Kafka source: see
split_watermarks).

As in Flink, the generator sees an event before the event is emitted (a punctuated watermark
precedes the record that caused it), periodic watermarks are asked for every
``auto_watermark_interval`` ms of processing time, upstream watermarks are dropped except the
final ``Long.MAX_VALUE`` of an ended input, and BATCH mode emits no watermark at all.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

from dataflow_engine.functions.references import parse_function_ref, resolve
from dataflow_engine.runtime.checkpoint.snapshots import OperatorSnapshot, RestoredState
from dataflow_engine.runtime.streamoperators.stream_operators import _FusableOperator
from dataflow_engine.runtime.tasks.fusion import FusedStep
from dataflow_engine.runtime.tasks.outputs import Collect, Output, input_copier
from dataflow_engine.runtime.time.durations import MAX_TIMESTAMP, MIN_TIMESTAMP
from dataflow_engine.runtime.time.split_watermarks import SplitWatermarks
from dataflow_engine.runtime.time.watermark_generators import (
    BoundedOutOfOrdernessWatermarks,
    NoWatermarksGenerator,
    WatermarkEmitter,
    WatermarkGenerator,
    WatermarksWithIdleness,
)
from dataflow_engine.spec.model import WatermarkStrategySpec, WatermarkStrategyType, duration_millis

TimestampAssigner = Callable[[Any, int], int]


def create_watermark_generator(strategy: WatermarkStrategySpec,
                               clock: Callable[[], int]) -> WatermarkGenerator:
    generator: WatermarkGenerator
    if strategy.type is WatermarkStrategyType.FOR_BOUNDED_OUT_OF_ORDERNESS:
        assert strategy.max_out_of_orderness is not None
        generator = BoundedOutOfOrdernessWatermarks(duration_millis(strategy.max_out_of_orderness))
    elif strategy.type is WatermarkStrategyType.FOR_MONOTONOUS_TIMESTAMPS:
        generator = BoundedOutOfOrdernessWatermarks(0)
    elif strategy.type is WatermarkStrategyType.FOR_GENERATOR:
        assert strategy.generator is not None
        # A WatermarkGenerator class or a factory of no arguments.
        generator = resolve(parse_function_ref(strategy.generator))()
    else:
        generator = NoWatermarksGenerator()
    if strategy.idleness is not None:
        generator = WatermarksWithIdleness(generator, duration_millis(strategy.idleness), clock)
    return generator


def _record_timestamp(value: Any, record_timestamp: int) -> int:
    """Flink's RecordTimestampAssigner: the timestamp the source gave the record."""
    if record_timestamp == MIN_TIMESTAMP:
        raise ValueError("the record carries no timestamp of its own (only a kafka source's "
                         "records do): give watermarkStrategy.timestampField or a timestamp "
                         "assigner function")
    return record_timestamp


def _field_assigner(field: int | str) -> TimestampAssigner:
    def extract_timestamp(value: Any, record_timestamp: int) -> int:
        return value[field]  # type: ignore[no-any-return]

    return extract_timestamp


class TimestampsAndWatermarksOperator(_FusableOperator):
    METHOD = "extract_timestamp"
    USES_PROCESSING_TIME = True

    def setup(self, output: Output) -> None:
        self.strategy = WatermarkStrategySpec.model_validate(self.config.args["watermarkStrategy"])
        if self.config.function is not None:
            super().setup(output)
        else:
            self.output, self.records_out = output, output.counter
            field = self.strategy.timestamp_field
            self._assigner = (_field_assigner(field) if field is not None
                              else _record_timestamp)
        clock = self.time.processing_time.get_current_processing_time
        splits = self.time.source_splits
        self.generator: WatermarkGenerator
        try:
            if self.time.streaming and splits and self.config.node_id in splits.consumers:
                self.generator = SplitWatermarks(
                    functools.partial(create_watermark_generator, self.strategy), clock, splits)
            else:
                self.generator = create_watermark_generator(self.strategy, clock)
        except Exception as error:
            raise self.failure(error) from error
        self.emitter = WatermarkEmitter(output.emit_watermark, output.emit_watermark_status)

    @property
    def assigner(self) -> TimestampAssigner:
        return self.udf.call if self.user_function is not None else self._assigner

    def open(self) -> None:
        super().open()
        interval = self.time.auto_watermark_interval
        if self.time.streaming and interval > 0:
            service = self.time.processing_time

            def periodic_emit(due: int) -> None:
                self._periodic_emit()
                service.register_timer(service.get_current_processing_time() + interval,
                                       periodic_emit)

            service.register_timer(service.get_current_processing_time() + interval,
                                   periodic_emit)

    def _periodic_emit(self) -> None:
        try:
            self.generator.on_periodic_emit(self.emitter)
        except Exception as error:
            raise self.failure(error) from error

    def fused_step(self) -> FusedStep | None:
        """Inlined into a run of maps and filters in BATCH mode (where no watermark is
        generated) and when its generator only remembers the highest timestamp (the common
        bounded-out-of-orderness and monotonous cases)."""
        if not self.time.streaming:
            generator = None
        elif type(self.generator) is BoundedOutOfOrdernessWatermarks:
            generator = self.generator
        else:
            return None
        return FusedStep("stamp", self.assigner, self.failure, self.copy_input,
                         self.records_in, self.time.timestamp, generator)

    def processor(self, collect: Collect) -> Collect:
        extract, counter, failure = self.assigner, self.records_in, self.failure
        copying, atomic, copy = input_copier(self.copy_input)
        cell = self.time.timestamp
        on_event = self.generator.on_event if self.time.streaming else None
        emitter = self.emitter
        generator = self.generator
        if on_event is not None and type(generator) is BoundedOutOfOrdernessWatermarks:
            # The common generator, inlined: it only remembers the highest timestamp.
            def process_bounded(value: Any) -> None:
                counter.count += 1
                if copying and type(value) not in atomic:
                    value = copy(value)
                previous = cell.value
                try:
                    timestamp = extract(value, MIN_TIMESTAMP if previous is None else previous)
                except Exception as error:
                    raise failure(error) from error
                if timestamp > generator.max_timestamp:
                    generator.max_timestamp = timestamp
                cell.value = timestamp
                collect(value)
                cell.value = previous

            return process_bounded

        def process_element(value: Any) -> None:
            counter.count += 1
            if copying and type(value) not in atomic:
                value = copy(value)
            previous = cell.value
            try:
                timestamp = extract(value, MIN_TIMESTAMP if previous is None else previous)
                if on_event is not None:
                    on_event(value, timestamp, emitter)
            except Exception as error:
                raise failure(error) from error
            cell.value = timestamp
            collect(value)
            cell.value = previous

        return process_element

    def process_watermark(self, timestamp: int) -> None:
        if timestamp == MAX_TIMESTAMP and self.current_watermark != MAX_TIMESTAMP:
            self.current_watermark = timestamp
            self.emitter.current = MAX_TIMESTAMP
            self.output.emit_watermark(timestamp)

    def process_watermark_status(self, idle: bool) -> None:
        """The generator decides this stream's idleness, not the upstream."""

    def finish(self) -> None:
        if self.time.streaming:
            self._periodic_emit()

    def prepare_snapshot_pre_barrier(self) -> None:
        """An epoch's input ends with a periodic watermark (unless periodic watermarks are
        off), so that its records' windows can fire in the same epoch downstream."""
        if self.time.auto_watermark_interval > 0:
            self._periodic_emit()

    def initialize_state(self, state: RestoredState) -> None:
        """The generator's progress carries over between epochs and into a restore of the
        same subtask with the same strategy; otherwise a new generator starts, as every
        generator does after a restore in Flink. Its output re-emits its watermark each
        epoch (consumers ignore one they have)."""
        super().initialize_state(state)
        own = state.own
        if (own is not None and own[0] == self._fingerprint()
                and type(own[1]) is type(self.generator)):
            self.generator = own[1]
            clock = self.time.processing_time.get_current_processing_time
            if isinstance(self.generator, WatermarksWithIdleness):
                self.generator.clock = clock
            elif isinstance(self.generator, SplitWatermarks):
                assert self.time.source_splits is not None
                self.generator.bind(clock, self.time.source_splits)

    def snapshot_state(self) -> OperatorSnapshot:
        return dataclasses.replace(super().snapshot_state(),
                                   operator=(self._fingerprint(), self.generator))

    def _fingerprint(self) -> tuple[Any, str | None]:
        """What made the generator: a changed strategy makes a new one."""
        return self.config.args["watermarkStrategy"], self.config.function
