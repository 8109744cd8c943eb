"""A continuous job's recent rates per subtask: records in and out per second, and the share of
the time it was busy (Flink's busyTimeMsPerSecond / 1000), what the status shows and the
operator's autoscaler reads.

The counters are summed over epochs and sampled as each epoch ends; a rate is the difference
of the newest totals and the oldest kept ones, at least ``span`` seconds older when epochs that
old exist, over the time between. A subtask is busy while its epoch's task runs, and idle
between epochs' tasks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from dataflow_engine.runtime.taskmanager.stream_task import SubtaskMetrics

#: (vertex id, subtask index).
SubtaskKey = tuple[str, int]


@dataclass(frozen=True, slots=True)
class SubtaskRates:
    records_in_per_second: float
    records_out_per_second: float
    #: Busy time per second of wall time, 0 to 1.
    busy_ratio: float


@dataclass(frozen=True, slots=True)
class _Sample:
    time: float
    #: (records in, records out, busy ms) per subtask.
    totals: dict[SubtaskKey, tuple[int, int, int]]


class RateWindow:
    def __init__(self, span: float = 10.0) -> None:
        self.span = span
        self._samples: deque[_Sample] = deque()

    def add(self, time: float, totals: Mapping[SubtaskKey, SubtaskMetrics]) -> None:
        """Samples the totals at ``time`` (seconds, monotonic); drops samples no rate needs."""
        self._samples.append(_Sample(time, {
            key: (m.records_in, m.records_out, m.busy_ms) for key, m in totals.items()}))
        while len(self._samples) > 2 and self._samples[1].time <= time - self.span:
            self._samples.popleft()

    def rates(self) -> dict[SubtaskKey, SubtaskRates]:
        """Each subtask's rates over the window; none before two samples."""
        if len(self._samples) < 2:
            return {}
        first, last = self._samples[0], self._samples[-1]
        elapsed = last.time - first.time
        if elapsed <= 0:
            return {}
        rates = {}
        for key, (records_in, records_out, busy_ms) in last.totals.items():
            was_in, was_out, was_busy = first.totals.get(key, (0, 0, 0))
            rates[key] = SubtaskRates(
                (records_in - was_in) / elapsed, (records_out - was_out) / elapsed,
                min(1.0, max(0.0, (busy_ms - was_busy) / 1000 / elapsed)))
        return rates
