"""Windowed benchmark, on demand: ``python benchmarks/bench_windows.py [--events 10000000]``.

Events ``(key, timestamp, value)``: 1-minute tumbling event-time windows with a sum per key,
and a KeyedProcessFunction with one event-time timer per key (counting the key's events until
the timer fires at the end of the data). The compiled job (sequence -> event -> timestamps ->
keyBy -> window sum, and keyBy -> process) against the same logic written by hand with
PySpark DataFrames (``groupBy(key, window(ts, '1 minute')).sum`` and ``groupBy(key).count``)
on the same SparkSession, in the same run, alternating; the same logic as hand-written RDD code
with Python functions; and the job's own functions alone in a plain loop, split ideally over
the cores: the floor for any engine that calls them. Targets: compiled / RDDs <= 1.2 and
compiled / floor <= 1.5.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from dataflow_engine.api.datastream.functions import KeyedProcessFunction, RuntimeContext
from dataflow_engine.api.datastream.state import ValueStateDescriptor
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.runtime import RunnerConfig, run_job
from dataflow_engine.runtime.jobmaster.runner import WORKER_DAEMON
from dataflow_engine.spec.model import DataflowJobSpec

KEYS = 1000
RDD_TARGET = 1.2
FLOOR_TARGET = 1.5
#: Milliseconds between consecutive events (all keys interleaved).
STEP_MS = 1
END_OF_DATA_MS = 10 ** 12


def make_event(i: int) -> tuple[int, int, int]:
    return i % KEYS, i * STEP_MS, i % 100


def event_time(event: Any, record_timestamp: int) -> int:
    return int(event[1])


def add_values(a: Any, b: Any) -> Any:
    return (a[0], a[1], a[2] + b[2])


class WindowSum:
    """Emits ``(key, window start, sum)`` for the reduced event of each window."""

    def process(self, key: Any, context: Any, elements: Any) -> Iterator[Any]:
        for event in elements:
            yield key, context.window().start, event[2]


class CountUntilTimer(KeyedProcessFunction):
    """One timer per key, at the end of the data; counts the key's events until then."""

    def open(self, runtime_context: RuntimeContext) -> None:
        self.count = runtime_context.get_state(ValueStateDescriptor("count"))

    def process_element(self, value: Any, ctx: Any) -> None:
        count = self.count.value()
        if count is None:
            count = 0
            ctx.timer_service().register_event_time_timer(END_OF_DATA_MS)
        self.count.update(count + 1)

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        yield ctx.get_current_key(), self.count.value()


def compiled_job(events: int, parallelism: int) -> Any:
    spec = DataflowJobSpec.model_validate({
        "parallelism": parallelism,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 0, "to": events - 1}},
            {"name": "event", "type": "map", "inputs": ["source"],
             "function": "bench_windows:make_event"},
            {"name": "stamp", "type": "timestamps", "inputs": ["event"],
             "function": "bench_windows:event_time",
             "watermarkStrategy": {"type": "forMonotonousTimestamps"}},
            {"name": "window", "type": "window", "inputs": [{"from": "stamp", "keyBy": 0}],
             "function": "bench_windows:add_values",
             "window": {"assigner": {"type": "tumbling", "time": "event", "size": "1m"},
                        "kind": "reduce", "windowFunction": "bench_windows:WindowSum"}},
            {"name": "counts", "type": "process", "inputs": [{"from": "stamp", "keyBy": 0}],
             "function": "bench_windows:CountUntilTimer"},
            {"name": "sums", "type": "collect", "inputs": ["window"]},
            {"name": "totals", "type": "collect", "inputs": ["counts"]},
        ],
    })
    return compile_job(spec, "bench-windows")


def handwritten(session: Any, events: int, parallelism: int) -> tuple[list[Any], list[Any]]:
    """The same logic as idiomatic PySpark DataFrame code."""
    from pyspark.sql import functions as F

    frame = session.range(0, events, numPartitions=parallelism).select(
        (F.col("id") % KEYS).alias("key"),
        (F.col("id") * STEP_MS).alias("ts"),
        (F.col("id") % 100).alias("value"))
    windowed = (frame.groupBy("key", F.window((F.col("ts") / 1000).cast("timestamp"),
                                              "1 minute"))
                .agg(F.sum("value").alias("total"))
                .select("key", (F.unix_timestamp(F.col("window.start")) * 1000).alias("start"),
                        "total"))
    counts = frame.groupBy("key").count()
    return ([tuple(row) for row in windowed.collect()], [tuple(row) for row in counts.collect()])


def window_key(event: tuple[int, int, int]) -> tuple[tuple[int, int], int]:
    return (event[0], event[1] - event[1] % 60_000), event[2]


def key_one(event: tuple[int, int, int]) -> tuple[int, int]:
    return event[0], 1


def handwritten_rdd(session: Any, events: int, parallelism: int) -> tuple[list[Any], list[Any]]:
    """The same logic as hand-written PySpark RDD code with Python functions (what the
    compiled job is made of), for scale: events made in Python, computed once."""
    import operator

    rdd = session.sparkContext.range(0, events, numSlices=parallelism).map(make_event).cache()
    sums = rdd.map(window_key).reduceByKey(operator.add, parallelism).map(
        lambda pair: (pair[0][0], pair[0][1], pair[1])).collect()
    counts = rdd.map(key_one).reduceByKey(operator.add, parallelism).collect()
    rdd.unpersist()
    return sums, counts


class _DictValueState:
    """The least a ValueState can be: one dict entry per key."""

    def __init__(self) -> None:
        self.key: Any = None
        self.values: dict[Any, Any] = {}

    def value(self) -> Any:
        return self.values.get(self.key)

    def update(self, value: Any) -> None:
        self.values[self.key] = value


class _BareContext:
    """The least a runtime context, a ctx and a timer service can be."""

    def __init__(self, state: _DictValueState) -> None:
        self.state = state
        self.timers: set[tuple[Any, int]] = set()

    def get_state(self, descriptor: Any) -> _DictValueState:
        return self.state

    def timer_service(self) -> _BareContext:
        return self

    def register_event_time_timer(self, timestamp: int) -> None:
        self.timers.add((self.state.key, timestamp))


def functions_alone(events: int) -> float:
    """Seconds for the job's own functions over every event in one plain Python loop, with a
    dict for the window sums and one for the keyed state: what any engine that calls them per
    record pays, before it moves a single record."""
    state = _DictValueState()
    context = _BareContext(state)
    counter = CountUntilTimer()
    counter.open(context)  # type: ignore[arg-type]
    window_sums: dict[tuple[int, int], Any] = {}
    get = window_sums.get
    start = time.perf_counter()
    for i in range(events):
        event = make_event(i)
        timestamp = event_time(event, 0)
        slot = (event[0], timestamp - timestamp % 60_000)
        current = get(slot)
        window_sums[slot] = event if current is None else add_values(current, event)
        state.key = event[0]
        counter.process_element(event, context)
    return time.perf_counter() - start


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--parallelism", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master(f"local[{args.parallelism}]").appName("bench")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", str(args.parallelism))
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.python.daemon.module", WORKER_DAEMON)
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    job = compiled_job(args.events, args.parallelism)
    config = RunnerConfig(spark_session=session)

    def ours() -> tuple[list[Any], list[Any]]:
        result = run_job(job, config).check()
        return ([tuple(r) for r in result.collected["sums"]],
                [tuple(r) for r in result.collected["totals"]])

    print(f"{args.events:,} events, {KEYS} keys, parallelism {args.parallelism}, "
          f"{os.cpu_count()} cores")
    _, expected = timed(lambda: handwritten(session, args.events, args.parallelism))
    _, got = timed(ours)
    assert sorted(got[0]) == sorted(expected[0]), "window sums differ"
    assert sorted(got[1]) == sorted(expected[1]), "counts differ"
    print(f"  {len(expected[0]):,} window results, {len(expected[1])} per-key counts")
    _, by_rdd = timed(lambda: handwritten_rdd(session, args.events, args.parallelism))
    assert sorted(by_rdd[0]) == sorted(expected[0]) and sorted(by_rdd[1]) == sorted(
        expected[1]), "RDD results differ"
    hand_times, rdd_times, our_times = [], [], []
    for _ in range(args.runs):
        hand_times.append(timed(lambda: handwritten(session, args.events, args.parallelism))[0])
        our_times.append(timed(ours)[0])
        rdd_times.append(timed(lambda: handwritten_rdd(session, args.events,
                                                        args.parallelism))[0])
    hand, rdd, our = (statistics.median(t) for t in (hand_times, rdd_times, our_times))

    def show(label: str, median: float, times: list[float]) -> None:
        print(f"  {label:32s} {median:6.2f}s (runs {', '.join(f'{t:.2f}' for t in times)})")

    show("hand-written DataFrames:", hand, hand_times)
    show("hand-written RDDs (Python):", rdd, rdd_times)
    show("compiled job:", our, our_times)
    alone = functions_alone(args.events)
    floor = alone / args.parallelism
    print(f"  the job's functions alone, one plain loop: {alone:.2f}s; split ideally over "
          f"{args.parallelism} cores: {floor:.2f}s = {floor / hand:.2f}x the DataFrames "
          "(the floor for any engine calling them per record)")
    print(f"  ratio compiled / hand-written RDDs: {our / rdd:.2f} (target <= {RDD_TARGET}); "
          f"compiled / floor: {our / floor:.2f} (target <= {FLOOR_TARGET}); "
          f"compiled / hand-written DataFrames: {our / hand:.2f}")
    session.stop()


if __name__ == "__main__":
    main()
