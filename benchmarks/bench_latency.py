"""Latency of a continuous job, on demand: ``python benchmarks/bench_latency.py [--seconds 30]``.

A steady input (a datagen source at ``--rate`` rows per second) goes through a keyBy exchange
into a KeyedProcessFunction that stamps each record with the wall time it reached it, then to
a collect sink. A record's latency is that time minus the time the record was due at the
source (the job's first epoch plus ``index / rate``), so waiting for the next epoch counts.
Printed per epoch interval (after a warm-up run): p50, p99 and max, against the same pipeline
written by hand as Spark Structured Streaming (rate source, ``repartition`` by key,
``foreachBatch`` stamping each row; processing-time trigger of the same interval), measured in
the same run.
Target: p99 under 2 s at 1 s epochs. Then the same job pipelined (``spec.execution:
PIPELINED``: long-lived tasks, records streaming between them) at each ``--buffer-timeouts``
(its ``epochInterval``); target p50 at most 100 ms.

First, what an epoch costs with (almost) no input: the same job at 10 rows/s with epochs back to
back, against what Spark itself takes for a job of the same shape written by hand (two
partitions of Python tasks, a shuffle, two more Python tasks: ``parallelize →
mapPartitionsWithIndex → partitionBy → mapPartitions → count``) and for a single stage of
Python tasks, in the same run: the part of an epoch that a job per epoch cannot go below.
Target: an empty epoch in at most 50 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.runtime import RunnerConfig, run_job
from dataflow_engine.runtime.jobmaster.runner import WORKER_DAEMON
from dataflow_engine.spec.model import DataflowJobSpec, duration_millis
from latency_probe import epoch_seconds, first_epoch, percentiles

KEYS = 100


def make_row(index: int) -> tuple[int, int]:
    return index % KEYS, index


class StampArrival:
    """KeyedProcessFunction: ``(index, wall time now)`` per record."""

    def process_element(self, value: Any, ctx: Any) -> Iterator[tuple[int, float]]:
        yield value[1], time.time()


def latency_spec(rate: int, rows: int, interval: str, sink: str,
                 execution: str = "EPOCHS") -> DataflowJobSpec:
    """``rows`` rows at ``rate`` per second, a keyBy exchange, the stamping function, ``sink``."""
    return DataflowJobSpec.model_validate({
        "parallelism": 2, "runtimeMode": "STREAMING", "epochInterval": interval,
        "execution": execution,
        "pipeline": [
            {"name": "rows", "type": "datagen", "function": "bench_latency:make_row",
             "args": {"rowsPerSecond": rate, "numberOfRows": rows}},
            {"name": "stamp", "type": "process", "function": "bench_latency:StampArrival",
             "inputs": [{"from": "rows", "keyBy": 0}]},
            {"name": "out", "type": sink, "inputs": ["stamp"]}]})


def compiled_latencies(spark: Any, rate: int, seconds: int, interval: str,
                       execution: str = "EPOCHS") -> list[float]:
    spec = latency_spec(rate, rate * seconds, interval, "collect", execution)
    with first_epoch() as started:
        result = run_job(compile_job(spec, "latency"), RunnerConfig(spark_session=spark))
    result.check()
    return [seen - (started[0] + index / rate) for index, seen in result.collected["out"]]


def empty_epoch_seconds(spark: Any, epochs: int) -> list[float]:
    """Epoch durations of the latency job at 10 rows/s with epochs back to back."""
    spec = latency_spec(10, epochs, "1ms", "discard")
    with epoch_seconds() as seconds:
        run_job(compile_job(spec, "empty-epochs"), RunnerConfig(spark_session=spark)).check()
    return seconds[1:]  # the first also starts the Python workers


def spark_job_seconds(spark: Any, runs: int, shuffle: bool) -> list[float]:
    """A hand-written PySpark job of an epoch's shape (or one stage of it), timed."""
    sc = spark.sparkContext
    seconds = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        rdd = sc.parallelize(range(2), 2)
        if shuffle:
            rdd = (rdd.mapPartitionsWithIndex(lambda index, _: [(index, b"")])
                   .partitionBy(2).mapPartitions(lambda pairs: [sum(1 for _ in pairs)]))
        else:
            rdd = rdd.mapPartitions(lambda items: [sum(1 for _ in items)])
        rdd.count()
        seconds.append(time.perf_counter() - started)
    return seconds[1:]


def report_empty_epochs(spark: Any, rows: int = 40) -> None:
    epochs = empty_epoch_seconds(spark, rows)
    ours = statistics.median(epochs)
    by_hand = statistics.median(spark_job_seconds(spark, len(epochs), shuffle=True))
    one_stage = statistics.median(spark_job_seconds(spark, len(epochs), shuffle=False))
    print(f"empty epoch (median of {len(epochs)}): {ours * 1000:.0f} ms; Spark's own job of the "
          f"same shape {by_hand * 1000:.0f} ms (ratio {ours / by_hand:.2f}), one stage of "
          f"Python tasks {one_stage * 1000:.0f} ms; target <= 50 ms: "
          f"{'met' if ours <= 0.05 else 'missed'}")


def structured_streaming_latencies(spark: Any, rate: int, seconds: int,
                                   interval: str) -> list[float]:
    from pyspark.sql import functions as F

    latencies: list[float] = []
    lock = threading.Lock()

    def stamp(batch: Any, batch_id: int) -> None:
        rows = (batch.repartition(2, "key")
                .select(F.unix_micros(F.col("timestamp")).alias("due"),
                        F.unix_micros(F.current_timestamp()).alias("seen")).collect())
        with lock:
            latencies.extend((row.seen - row.due) / 1e6 for row in rows)

    stream = (spark.readStream.format("rate").option("rowsPerSecond", rate).load()
              .withColumn("key", F.col("value") % KEYS))
    query = (stream.writeStream.foreachBatch(stamp)
             .trigger(processingTime=f"{duration_millis(interval)} milliseconds").start())
    time.sleep(seconds)
    query.stop()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2000, help="rows per second")
    parser.add_argument("--seconds", type=int, default=30, help="seconds of input per run")
    parser.add_argument("--intervals", default="1s,500ms",
                        help="epoch intervals to measure (empty: only the empty epochs)")
    parser.add_argument("--buffer-timeouts", default="100ms,10ms",
                        help="buffer timeouts of the pipelined runs (spec.execution PIPELINED)")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-latency")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.python.daemon.module", WORKER_DAEMON)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{args.rate} rows/s for {args.seconds} s, keyBy exchange, parallelism 2, local[2]")
    compiled_latencies(spark, args.rate, 3, "1s")  # warm-up: Python workers, JIT, caches
    report_empty_epochs(spark)
    for interval in filter(None, args.intervals.split(",")):
        ours = compiled_latencies(spark, args.rate, args.seconds, interval)
        theirs = structured_streaming_latencies(spark, args.rate, args.seconds, interval)
        p99 = sorted(ours)[int(len(ours) * 0.99)]
        p99_ss = sorted(theirs)[int(len(theirs) * 0.99)]
        print(f"epochs of {interval:>5}: compiled   {percentiles(ours)}  ({len(ours)} rows)")
        print(f"{'':15} Structured Streaming {percentiles(theirs)}  ({len(theirs)} rows)")
        print(f"{'':15} p99 ratio compiled / Structured Streaming = {p99 / p99_ss:.2f}; "
              f"target p99 < 2 s at 1 s epochs: {'met' if p99 < 2 else 'missed'}")
    for timeout in filter(None, args.buffer_timeouts.split(",")):
        ours = compiled_latencies(spark, args.rate, args.seconds, timeout, "PIPELINED")
        p50 = sorted(ours)[len(ours) // 2]
        print(f"pipelined, buffer timeout {timeout:>5}: {percentiles(ours)}  ({len(ours)} "
              f"rows); target p50 <= 100 ms: {'met' if p50 <= 0.1 else 'missed'}")
    spark.stop()


if __name__ == "__main__":
    main()
