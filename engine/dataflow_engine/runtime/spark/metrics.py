"""What subtasks report to the driver travels in a Spark accumulator.

Spark merges an accumulator update only when the task attempt succeeds, so failed attempts
never count; the value maps (vertex, subtask) to its result (its metrics, or in an epoch of a
continuous job its metrics, snapshot and committables), so a recomputed partition replaces
rather than adds. Merging builds a new dict, so a status reader on another thread always sees
a consistent value.
"""

from __future__ import annotations

from typing import Any

from pyspark.accumulators import AccumulatorParam

#: (vertex id, subtask index) -> SubtaskMetrics or SubtaskEpochResult.
TaskResults = dict[tuple[str, int], Any]


class TaskResultsParam(AccumulatorParam[TaskResults]):
    def zero(self, value: TaskResults) -> TaskResults:
        return {}

    def addInPlace(self, value1: TaskResults, value2: TaskResults) -> TaskResults:
        return {**value1, **value2}
