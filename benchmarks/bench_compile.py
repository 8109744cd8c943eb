"""Compile-time benchmark (on demand): ``python benchmarks/bench_compile.py``.

1. Two JobVertices joined ALL_TO_ALL at parallelism 10,000 each: time and peak traced memory of
   every stage, from spec to StreamGraph, JobGraph, ExecutionGraph, pipelined regions and slot
   plan. Anchors (Flink's own, JVM): 1.14 initialises this job in 627 ms with an ~12 MiB
   ExecutionGraph; 1.12 took 11.4 s and over 4 GiB. Target here: < 500 ms and < 20 MiB.
2. The same-run baseline: Flink 1.12's approach — one ExecutionEdge object per producer and
   consumer pair — against the grouped connections, both at parallelism 1,000.
3. The same two vertices at parallelism 32,768 (Flink's maximum): compile must stay linear,
   at most 100 ms and 32 MiB; printed beside the growth over parallelism 10,000.
4. ``dataflow compile --layer all --format json`` of that job, which streams its per-subtask
   arrays, against the same plan built whole and then dumped (what the command did before), in
   subprocesses of the same run: seconds, peak resident memory, bytes written.
5. A 1,000-operator pipeline at parallelism 100 (a keyBy every tenth operator).
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from dataflow_engine.compiler.validation import validate_spec
from dataflow_engine.graph.deployment import plan_slots
from dataflow_engine.graph.execution_graph import build_execution_graph
from dataflow_engine.graph.job_graph import StreamingJobGraphGenerator
from dataflow_engine.graph.stream_graph import StreamGraphGenerator
from dataflow_engine.spec.model import DataflowJobSpec

MiB = 1024 * 1024


def two_vertex_spec(parallelism: int) -> DataflowJobSpec:
    return DataflowJobSpec.model_validate({
        "parallelism": parallelism,
        "maxParallelism": 32768,
        "runtimeMode": "STREAMING",
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 0, "to": 1}},
            {"name": "map", "type": "map", "function": "identity",
             "inputs": [{"from": "source", "partitioning": "rebalance"}]},
            {"name": "sink", "type": "discard", "inputs": ["map"]},
        ],
    })


def long_pipeline_spec(operators: int, parallelism: int) -> DataflowJobSpec:
    pipeline: list[dict[str, Any]] = [
        {"name": "op0", "type": "sequence", "args": {"from": 0, "to": 1}}]
    for i in range(1, operators - 1):
        edge: dict[str, Any] = {"from": f"op{i - 1}"}
        if i % 10 == 0:
            edge["keyBy"] = 0
        pipeline.append({"name": f"op{i}", "type": "map", "function": "identity",
                         "inputs": [edge]})
    pipeline.append({"name": f"op{operators - 1}", "type": "discard",
                     "inputs": [f"op{operators - 2}"]})
    return DataflowJobSpec.model_validate(
        {"parallelism": parallelism, "runtimeMode": "STREAMING", "pipeline": pipeline})


def stages(spec: DataflowJobSpec) -> list[tuple[str, Callable[[dict[str, Any]], Any]]]:
    return [
        ("validate spec", lambda s: validate_spec(spec)),
        ("StreamGraph", lambda s: s.update(
            stream=StreamGraphGenerator(spec, "bench").generate())),
        ("JobGraph", lambda s: s.update(
            job=StreamingJobGraphGenerator(s["stream"]).create_job_graph())),
        ("ExecutionGraph", lambda s: s.update(execution=build_execution_graph(s["job"]))),
        ("pipelined regions", lambda s: s.update(regions=s["execution"].pipelined_regions())),
        ("slot plan", lambda s: s.update(slots=plan_slots(
            s["execution"], spec.group_resources(), spec.slots_per_executor))),
    ]


def timed(spec: DataflowJobSpec) -> tuple[list[float], dict[str, Any]]:
    state: dict[str, Any] = {}
    seconds = []
    gc.collect()
    for _, run in stages(spec):
        start = time.perf_counter()
        run(state)
        seconds.append(time.perf_counter() - start)
    return seconds, state


def traced(spec: DataflowJobSpec) -> list[int]:
    """Peak traced bytes per stage, relative to what was allocated before it."""
    state: dict[str, Any] = {}
    peaks = []
    gc.collect()
    tracemalloc.start()
    for _, run in stages(spec):
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        run(state)
        peaks.append(tracemalloc.get_traced_memory()[1] - before)
    total = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    peaks.append(total)
    return peaks


def best_of(runs: int, spec: DataflowJobSpec) -> list[float]:
    results = [timed(spec)[0] for _ in range(runs)]
    return [min(r[i] for r in results) for i in range(len(results[0]))]


def naive_edges(parallelism: int) -> float:
    """Flink 1.12's layout: one ExecutionEdge per (producer, consumer) pair."""

    class ExecutionEdge:
        __slots__ = ("input_number", "source", "target")

        def __init__(self, source: int, target: int) -> None:
            self.source, self.target, self.input_number = source, target, 0

    gc.collect()
    start = time.perf_counter()
    edges = [[ExecutionEdge(p, c) for p in range(parallelism)] for c in range(parallelism)]
    elapsed = time.perf_counter() - start
    del edges
    return elapsed


def report(title: str, spec: DataflowJobSpec, runs: int) -> tuple[float, int]:
    seconds = best_of(runs, spec)
    peaks = traced(spec)
    print(f"\n{title}")
    for (name, _), s, peak in zip(stages(spec), seconds, peaks, strict=False):
        print(f"  {name:<18} {s * 1000:9.1f} ms   peak {peak / MiB:7.2f} MiB")
    total_ms = sum(seconds) * 1000
    print(f"  {'total':<18} {total_ms:9.1f} ms   retained {peaks[-1] / MiB:7.2f} MiB")
    return total_ms, max(peaks)


_MANIFEST = """apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {{name: wide}}
spec:
  parallelism: {parallelism}
  maxParallelism: 32768
  runtimeMode: STREAMING
  pipeline:
    - {{name: source, type: sequence, args: {{from: 0, to: 1}}}}
    - {{name: map, type: map, function: identity,
        inputs: [{{from: source, partitioning: rebalance}}]}}
    - {{name: sink, type: discard, inputs: [map]}}
"""

#: The command's output built whole and dumped at once, as it was before it streamed.
_HELD = """import json, sys
from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.compiler.targets import load_target
from dataflow_engine.render import Layer
from dataflow_engine.render.plan_json import plan_json

def whole(value):
    if isinstance(value, dict):
        return {key: whole(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or hasattr(value, "__next__"):
        return [whole(item) for item in value]
    return value

target = load_target(sys.argv[1])
print(json.dumps(whole(plan_json(compile_job(target.spec, target.name), Layer.ALL)), indent=2))
"""


#: Runs a module or script as ``python -m``/``python FILE`` would, then prints its own peak
#: resident set (KiB) on stderr: VmHWM, which starts again at exec (the rusage's maximum keeps
#: the forked benchmark's).
_PEAK_REPORTING = """import atexit, runpy, sys

def peak():
    with open("/proc/self/status") as status:
        print(next(line.split()[1] for line in status if line.startswith("VmHWM:")),
              file=sys.stderr)

atexit.register(peak)
sys.argv = sys.argv[1:]
if sys.argv[0].endswith(".py"):
    runpy.run_path(sys.argv[0], run_name="__main__")
else:
    runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def _measured(*command: str) -> tuple[float, int, int]:
    """Seconds, peak resident bytes and bytes written of ``python -m MODULE|FILE ARGS...``."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", _PEAK_REPORTING, *command], stdout=out,
                              stderr=subprocess.PIPE, text=True, check=True)
        seconds = time.perf_counter() - start
        size = out.tell()
    return seconds, int(done.stderr.split()[-1]) * 1024, size


def compile_json(parallelism: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        manifest = os.path.join(directory, "wide.yaml")
        with open(manifest, "w") as file:
            file.write(_MANIFEST.format(parallelism=parallelism))
        held_script = os.path.join(directory, "held.py")
        with open(held_script, "w") as file:
            file.write(_HELD)
        streamed = _measured("dataflow_engine.cli", "compile", manifest, "--layer", "all",
                             "--format", "json")
        held = _measured(held_script, manifest)
    print(f"\ndataflow compile --layer all --format json, parallelism {parallelism:,}")
    for name, (seconds, peak, size) in (("streamed", streamed), ("held whole", held)):
        print(f"  {name:<11} {seconds:6.2f} s   peak RSS {peak / MiB:7.1f} MiB   "
              f"{size / MiB:6.1f} MiB written")
    print(f"  streamed/held: time x{streamed[0] / held[0]:.2f}, "
          f"memory x{streamed[1] / held[1]:.2f}")


def main() -> None:
    total_ms, peak = report("Two vertices, ALL_TO_ALL, parallelism 10,000 each",
                            two_vertex_spec(10_000), runs=5)
    print(f"  vs Flink 1.14 (627 ms, ~12 MiB): time x{total_ms / 627:.2f}, "
          f"memory x{peak / MiB / 12:.2f}; target < 500 ms and < 20 MiB: "
          f"{'met' if total_ms < 500 and peak < 20 * MiB else 'NOT met'}")

    small = two_vertex_spec(1_000)
    grouped_ms = sum(best_of(5, small)) * 1000
    naive_ms = min(naive_edges(1_000) for _ in range(3)) * 1000
    print("\nSame-run baseline at parallelism 1,000: per-pair ExecutionEdges (Flink 1.12) "
          "vs grouped connections")
    print(f"  naive edges only {naive_ms:8.1f} ms;  whole grouped compile {grouped_ms:8.1f} ms;"
          f"  ratio grouped/naive = {grouped_ms / naive_ms:.3f}")

    big_ms, big_peak = report("Two vertices, ALL_TO_ALL, parallelism 32,768 each (Flink's "
                              "maximum)", two_vertex_spec(32_768), runs=5)
    growth = (big_ms / total_ms) / (32_768 / 10_000)
    print(f"  time per subtask vs parallelism 10,000: x{growth:.2f} (1.00 is linear); "
          f"target <= 100 ms and <= 32 MiB: "
          f"{'met' if big_ms <= 100 and big_peak <= 32 * MiB else 'NOT met'}")

    compile_json(32_768)

    report("1,000 operators (keyBy every 10th), parallelism 100", long_pipeline_spec(1000, 100),
           runs=3)


if __name__ == "__main__":
    main()
