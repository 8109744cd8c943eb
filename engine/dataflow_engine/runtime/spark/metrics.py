"""Subtask metrics travel to the driver in a Spark accumulator.

Spark merges an accumulator update only when the task attempt succeeds, so failed attempts
never count; the value maps (vertex, subtask) to its metrics, so a recomputed partition
replaces rather than adds. Merging builds a new dict, so a status reader on another thread
always sees a consistent value.
"""

from __future__ import annotations

from pyspark.accumulators import AccumulatorParam

from dataflow_engine.runtime.tasks.stream_task import SubtaskMetrics

MetricsByTask = dict[tuple[str, int], SubtaskMetrics]


class MetricsParam(AccumulatorParam[MetricsByTask]):
    def zero(self, value: MetricsByTask) -> MetricsByTask:
        return {}

    def addInPlace(self, value1: MetricsByTask, value2: MetricsByTask) -> MetricsByTask:
        return {**value1, **value2}
