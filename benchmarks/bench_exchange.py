"""Exchange benchmark, on demand: ``python benchmarks/bench_exchange.py [--records 400000]``.

The per-record cost of crossing a rebalance exchange without Spark: a RecordWriter batching
records into frames for two consumer subtasks, and the consumers decoding the frames. Records
of a declared plain type (strings, numbers, tuples of them) travel marshalled; the baseline,
in the same run, is the same records with no declared type, which travel pickled.
Target: typed / untyped < 1 for tuples and strings (a lone LONG, which marshal writes no
faster, stays pickled: its ratio is 1 up to noise).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.runtime.functions.context import TaskInfo
from dataflow_engine.runtime.tasks.descriptors import OutputConfig, PayloadKind
from dataflow_engine.runtime.tasks.frames import decode_batch
from dataflow_engine.runtime.tasks.record_writer import RecordWriter
from dataflow_engine.types import Types
from dataflow_engine.types.typeinfo import TypeInformation

BATCH_SIZE = 1024  # TaskDescriptor's default
SHAPES: list[tuple[str, TypeInformation, Any]] = [
    ("TUPLE<STRING, INT>", Types.TUPLE([Types.STRING(), Types.INT()]),
     lambda i: (f"word{i % 5000}", i % 1000)),
    ("TUPLE<STRING, LONG, DOUBLE>", Types.TUPLE([Types.STRING(), Types.LONG(), Types.DOUBLE()]),
     lambda i: (f"user-{i % 20000}", i, i * 0.5)),
    ("STRING", Types.STRING(), lambda i: f"line {i} of the text"),
    ("LONG", Types.LONG(), lambda i: i * 7919),
]


def seconds_to_cross(records: list[Any], record_type: TypeInformation | None) -> float:
    config = OutputConfig(
        producer=0, partitioner=PartitionerKind.REBALANCE, key_selector=None,
        consumer_name="consumer", consumer_parallelism=2, consumer_max_parallelism=128,
        consumer_ranges=((0, 2),), payload=PayloadKind.RECORD, tag_offset=0,
        record_type=record_type)
    task = TaskInfo(job_name="bench", task_name="producer", subtask_index=0, parallelism=1,
                    max_parallelism=128, attempt_number=0)
    pending: list[bytes] = []
    started = time.perf_counter()
    writer = RecordWriter(config, task, pending, BATCH_SIZE)
    _, collect_all = writer.bind()
    collect_all(records)
    writer.flush()
    received = sum(len(list(decode_batch(batch))) for batch in pending[1::2])
    elapsed = time.perf_counter() - started
    assert received == len(records)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=400_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.records:,} records across a rebalance to 2 subtasks, median of {args.runs}")
    print(f"{'records':<28} {'typed ns/rec':>13} {'untyped ns/rec':>15} {'ratio':>6}")
    for name, record_type, make in SHAPES:
        records = [make(i) for i in range(args.records)]
        typed, untyped = [], []
        for _ in range(args.runs):  # alternating, so both see the same machine
            typed.append(seconds_to_cross(records, record_type))
            untyped.append(seconds_to_cross(records, None))
        typed_ns = statistics.median(typed) / args.records * 1e9
        untyped_ns = statistics.median(untyped) / args.records * 1e9
        print(f"{name:<28} {typed_ns:>13.0f} {untyped_ns:>15.0f} {typed_ns / untyped_ns:>6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
