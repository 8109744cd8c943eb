"""Flink's IntervalJoinOperator: joins two keyed event-time streams on time intervals.

A record of input 1 (left) at time ``t`` meets every record of input 2 (right) with the same
key and a time in ``[t + lower, t + upper]`` (bounds inclusive; exclusive ones arrive moved by
1 ms). Both sides are buffered per key and timestamp in keyed map state, joined as each record
arrives, and dropped by an event-time cleanup timer once no future record can meet them.
Records behind the watermark are late and dropped, and results carry the larger of the two
timestamps, as in Flink.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dataflow_engine.runtime.state.descriptors import MapStateDescriptor
from dataflow_engine.runtime.state.timer_service import InternalTimer
from dataflow_engine.runtime.streamoperators.stream_operators import (
    KeyedProcessOperator,
    results_emitter,
)
from dataflow_engine.runtime.tasks.failures import OperatorFailure
from dataflow_engine.runtime.tasks.outputs import Collect, CollectAll, Output
from dataflow_engine.runtime.time.durations import MIN_TIMESTAMP

_LEFT, _RIGHT = "__interval_join__left", "__interval_join__right"


class ProcessJoinContext:
    """``ProcessJoinFunction.Context`` of the pair being joined."""

    __slots__ = ("left_timestamp", "right_timestamp")

    def __init__(self) -> None:
        self.left_timestamp = MIN_TIMESTAMP
        self.right_timestamp = MIN_TIMESTAMP

    def get_left_timestamp(self) -> int:
        return self.left_timestamp

    def get_right_timestamp(self) -> int:
        return self.right_timestamp

    def get_timestamp(self) -> int:
        return max(self.left_timestamp, self.right_timestamp)


class IntervalJoinOperator(KeyedProcessOperator):
    METHOD = "process_element"

    def setup(self, output: Output) -> None:
        super().setup(output)
        bounds = self.config.args["intervalJoin"]
        self.lower: int = bounds["lowerBound"]
        self.upper: int = bounds["upperBound"]
        self.left = self.backend.get_map_state(MapStateDescriptor(_LEFT))
        self.right = self.backend.get_map_state(MapStateDescriptor(_RIGHT))
        self.join_context = ProcessJoinContext()

    def create_processor(self, collect: Collect, collect_all: CollectAll) -> Collect:
        counter, failure, backend = self.records_in, self.failure, self.backend
        cell, timers = self.time.timestamp, self.timers
        self.emit_results = emit = self._emitter(collect)
        join = self.udf.call
        context = self.join_context
        lower, upper = self.lower, self.upper

        def process_element(item: Any) -> None:
            counter.count += 1
            number, (key, value) = item
            backend.current_key = key
            timestamp = cell.value
            if timestamp is None:
                raise failure(RuntimeError(
                    "an interval join needs records with timestamps: "
                    "assign_timestamps_and_watermarks() upstream"))
            watermark = timers.current_watermark
            if watermark != MIN_TIMESTAMP and timestamp < watermark:
                return  # late
            left = number == 1
            ours, theirs = (self.left, self.right) if left else (self.right, self.left)
            bucket = ours.get(timestamp)
            if bucket is None:
                ours.put(timestamp, [value])
            else:
                bucket.append(value)
                ours.put(timestamp, bucket)
            low, high = (timestamp + lower, timestamp + upper) if left else (
                timestamp - upper, timestamp - lower)
            try:
                for other_time, others in theirs.items():
                    if low <= other_time <= high:
                        for other in others:
                            if left:
                                context.left_timestamp, context.right_timestamp = (
                                    timestamp, other_time)
                                pair = (value, other)
                            else:
                                context.left_timestamp, context.right_timestamp = (
                                    other_time, timestamp)
                                pair = (other, value)
                            previous, cell.value = cell.value, context.get_timestamp()
                            try:
                                result = join(pair[0], pair[1], context)
                                if result is not None:
                                    emit(result)
                            finally:
                                cell.value = previous
            except OperatorFailure:
                raise
            except Exception as error:
                raise failure(error) from error
            relative_upper = upper if left else -lower
            cleanup = timestamp + relative_upper if relative_upper > 0 else timestamp
            timers.register_event_time_timer(_LEFT if left else _RIGHT, cleanup)

        return process_element

    def _emitter(self, collect: Collect) -> Callable[[Any], None]:
        return results_emitter(collect, self.emit_side_output)

    def on_event_time(self, timer: InternalTimer) -> None:
        if timer.namespace == _LEFT:
            self.left.remove(timer.timestamp - self.upper if self.upper > 0 else timer.timestamp)
        else:
            self.right.remove(timer.timestamp + self.lower if self.lower <= 0
                              else timer.timestamp)

    def on_processing_time(self, timer: InternalTimer) -> None:
        """An interval join registers no processing-time timers."""
