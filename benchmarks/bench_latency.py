"""Latency of a continuous job, on demand: ``python benchmarks/bench_latency.py [--seconds 30]``.

A steady input (a datagen source at ``--rate`` rows per second) goes through a keyBy exchange
into a KeyedProcessFunction that stamps each record with the wall time it reached it, then to
a collect sink. A record's latency is that time minus the time the record was due at the
source (the job's first epoch plus ``index / rate``), so waiting for the next epoch counts.
Printed per epoch interval (after a warm-up run): p50, p99 and max, against the same pipeline
written by hand as Spark Structured Streaming (rate source, ``repartition`` by key,
``foreachBatch`` stamping each row; processing-time trigger of the same interval), measured in
the same run.
Target: p99 under 2 s at 1 s epochs.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.runtime import RunnerConfig, run_job
from dataflow_engine.spec.model import DataflowJobSpec, duration_millis
from latency_probe import first_epoch, percentiles

KEYS = 100


def make_row(index: int) -> tuple[int, int]:
    return index % KEYS, index


class StampArrival:
    """KeyedProcessFunction: ``(index, wall time now)`` per record."""

    def process_element(self, value: Any, ctx: Any) -> Iterator[tuple[int, float]]:
        yield value[1], time.time()


def compiled_latencies(spark: Any, rate: int, seconds: int, interval: str) -> list[float]:
    rows = rate * seconds
    spec = DataflowJobSpec.model_validate({
        "parallelism": 2, "runtimeMode": "STREAMING", "epochInterval": interval,
        "pipeline": [
            {"name": "rows", "type": "datagen", "function": "bench_latency:make_row",
             "args": {"rowsPerSecond": rate, "numberOfRows": rows}},
            {"name": "stamp", "type": "process", "function": "bench_latency:StampArrival",
             "inputs": [{"from": "rows", "keyBy": 0}]},
            {"name": "out", "type": "collect", "inputs": ["stamp"]}]})
    with first_epoch() as started:
        result = run_job(compile_job(spec, "latency"), RunnerConfig(spark_session=spark))
    result.check()
    return [seen - (started[0] + index / rate) for index, seen in result.collected["out"]]


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
    parser.add_argument("--intervals", default="1s,500ms", help="epoch intervals to measure")
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench-latency")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    print(f"{args.rate} rows/s for {args.seconds} s, keyBy exchange, parallelism 2, local[2]")
    compiled_latencies(spark, args.rate, 3, "1s")  # warm-up: Python workers, JIT, caches
    for interval in args.intervals.split(","):
        ours = compiled_latencies(spark, args.rate, args.seconds, interval)
        theirs = structured_streaming_latencies(spark, args.rate, args.seconds, interval)
        p99 = sorted(ours)[int(len(ours) * 0.99)]
        p99_ss = sorted(theirs)[int(len(theirs) * 0.99)]
        print(f"epochs of {interval:>5}: compiled   {percentiles(ours)}  ({len(ours)} rows)")
        print(f"{'':15} Structured Streaming {percentiles(theirs)}  ({len(theirs)} rows)")
        print(f"{'':15} p99 ratio compiled / Structured Streaming = {p99 / p99_ss:.2f}; "
              f"target p99 < 2 s at 1 s epochs: {'met' if p99 < 2 else 'missed'}")
    spark.stop()


if __name__ == "__main__":
    main()
