"""What the latency benchmarks (bench_latency, bench_nexmark) share: when a continuous job's
input started being due, and how latencies are summarised."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def first_epoch() -> Iterator[list[float]]:
    """Holds, once the job inside the block asked its datagen source for its first epoch, the
    wall time it did: record ``i`` at ``rate`` rows/s is due ``i / rate`` seconds later.
    (Imported here: bench_nexmark's PyFlink process has no dataflow_engine.)"""
    from dataflow_engine.runtime.streamoperators import sources

    started: list[float] = []
    original = sources.DatagenEnumerator.next_splits

    def recording(self: Any, now: float) -> tuple[Any, ...]:
        if not started:
            started.append(time.time())
        return original(self, now)

    sources.DatagenEnumerator.next_splits = recording  # type: ignore[method-assign]
    try:
        yield started
    finally:
        sources.DatagenEnumerator.next_splits = original  # type: ignore[method-assign]


@contextlib.contextmanager
def epoch_seconds() -> Iterator[list[float]]:
    """Holds the wall time of every epoch a continuous job inside the block runs, from its
    source splits asked for to its snapshots back at the driver."""
    from dataflow_engine.runtime.jobmaster import epochs

    seconds: list[float] = []
    original = epochs.ContinuousExecution._run_epoch

    def timed(self: Any, *args: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, *args)
        finally:
            seconds.append(time.perf_counter() - started)

    epochs.ContinuousExecution._run_epoch = timed  # type: ignore[method-assign]
    try:
        yield seconds
    finally:
        epochs.ContinuousExecution._run_epoch = original  # type: ignore[method-assign]


def quantile(latencies: list[float], q: float) -> float:
    ordered = sorted(latencies)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def percentiles(latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = quantile(ordered, 0.99)
    return (f"p50 {statistics.median(ordered):6.3f} s  p99 {p99:6.3f} s  "
            f"max {ordered[-1]:6.3f} s")
