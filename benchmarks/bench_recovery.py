"""Recovery after a killed driver, on demand: ``python benchmarks/bench_recovery.py [--runs 3]``.

A continuous job (a datagen source at ``--rate`` rows per second, a keyBy exchange, a
KeyedProcessFunction, an exactly-once file sink committed at each checkpoint) runs under
``dataflow run`` until it has committed output; then its whole process group is killed
(SIGKILL) and ``dataflow run`` starts again at once, as the operator's restart strategy would
start a new driver. Printed per run and as medians: the seconds from the kill to the new
driver's job RUNNING (restored from the newest checkpoint), and to its first output committed
(output flows again: the sink publishes only at a checkpoint).

Baselines measured in the same run, what a restart with a new driver cannot go below: a new
Python process that starts a SparkContext of the same master and runs one job of Python tasks,
and the same through a SparkSession (what drivers started before they ran on a bare
SparkContext). The ratio is recovery / the SparkContext baseline.
Flink restarts a failed region in seconds without a new JobManager; here every restart is a new
driver (docs/differences-from-flink.md).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

MASTER = "local[2]"

SPARK_START = """
import sys
from pyspark import SparkConf, SparkContext
conf = SparkConf().setMaster(sys.argv[1]).set("spark.ui.enabled", "false")
if sys.argv[2] == "session":
    from pyspark.sql import SparkSession
    context = SparkSession.builder.config(conf=conf).getOrCreate().sparkContext
else:
    context = SparkContext(conf=conf)
context.parallelize(range(4), 2).map(lambda x: x + 1).collect()
context.stop()
"""


class CountPerKey:
    """KeyedProcessFunction: ``(key, n)``, the n-th record of its key (keyed state to restore)."""

    def open(self, runtime_context: Any) -> None:
        from dataflow_engine.api.common import Types
        from dataflow_engine.api.datastream.state import ValueStateDescriptor

        self.seen = runtime_context.get_state(ValueStateDescriptor("seen", Types.LONG()))

    def process_element(self, value: Any, ctx: Any) -> Any:
        seen = (self.seen.value() or 0) + 1
        self.seen.update(seen)
        yield value[0], seen


def key_row(index: int) -> tuple[int, int]:
    return index % 100, index


def job_manifest(output: Path, storage: Path, rate: int) -> dict[str, Any]:
    return {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
            "metadata": {"name": "recovery"}, "spec": {
                "parallelism": 2, "runtimeMode": "STREAMING", "epochInterval": "200ms",
                "checkpointing": {"interval": "200ms", "storage": str(storage)},
                "pipeline": [
                    {"name": "rows", "type": "datagen", "function": "bench_recovery:key_row",
                     "args": {"rowsPerSecond": rate}},
                    {"name": "counts", "type": "process",
                     "function": "bench_recovery:CountPerKey",
                     "inputs": [{"from": "rows", "keyBy": 0}]},
                    {"name": "out", "type": "file", "inputs": ["counts"],
                     "args": {"path": str(output), "format": "json"}}]}}


def _environment() -> dict[str, str]:
    here = str(Path(__file__).resolve().parent)
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [here, os.environ.get("PYTHONPATH", "")])))


def start_driver(job: Path, status: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dataflow_engine.cli", "run", str(job), "--master", MASTER,
         "--status-file", str(status)], env=_environment(), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, start_new_session=True)


def committed_parts(output: Path) -> int:
    return sum(1 for part in output.glob("part-*") if part.stat().st_size)


def wait_for(what: str, condition: Any, process: subprocess.Popen[bytes],
             timeout: float = 300) -> float:
    """The time ``condition()`` first held; fails naming ``what`` if the driver died first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return time.monotonic()
        if process.poll() is not None:
            raise SystemExit(f"the driver ended before {what}: "
                             f"{process.communicate()[1].decode()[-2000:]}")
        time.sleep(0.02)
    raise SystemExit(f"no {what} within {timeout:.0f} s")


def restored_and_running(status: Path) -> bool:
    try:
        document = json.loads(status.read_text())
    except (OSError, ValueError):
        return False
    return bool(document.get("jobStatus") == "RUNNING"
                and (document.get("checkpoints") or {}).get("restoredFrom"))


def recovery(workdir: Path, rate: int) -> tuple[float, float]:
    """(kill → RUNNING restored, kill → first output committed) of one kill and restart."""
    output, storage, job = workdir / "out", workdir / "checkpoints", workdir / "job.yaml"
    job.write_text(yaml.safe_dump(job_manifest(output, storage, rate)))
    first = start_driver(job, workdir / "status-0.json")
    try:
        wait_for("committed output", lambda: committed_parts(output) >= 3, first)
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    killed, before = time.monotonic(), committed_parts(output)
    status = workdir / "status-1.json"
    second = start_driver(job, status)
    try:
        running = wait_for("the restored job running", lambda: restored_and_running(status),
                           second)
        flowing = wait_for("output after the restart",
                           lambda: committed_parts(output) > before, second)
    finally:
        os.killpg(second.pid, signal.SIGKILL)
        second.wait()
    return running - killed, flowing - killed


def spark_start(kind: str) -> float:
    """Seconds for a new process to start Spark (``context`` or ``session``) and run a job."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", SPARK_START, MASTER, kind], check=True,
                   env=_environment(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=int, default=2000, help="rows per second")
    args = parser.parse_args()
    spark_start("context")  # warm the file cache: every measured start finds the jars read
    rows: list[tuple[float, float, float, float]] = []
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-recovery-") as workdir:
            running, flowing = recovery(Path(workdir), args.rate)
        context, session = spark_start("context"), spark_start("session")
        rows.append((running, flowing, context, session))
        print(f"run {run + 1}: RUNNING after {running:.1f} s, output after {flowing:.1f} s; "
              f"Spark start + a job: SparkContext {context:.1f} s, SparkSession {session:.1f} s",
              flush=True)
    running, flowing, context, session = (statistics.median(c) for c in zip(*rows, strict=True))
    print(f"\nmedian of {args.runs} ({MASTER}, {args.rate} rows/s):")
    print(f"  kill -> restored job RUNNING   {running:5.1f} s")
    print(f"  kill -> output flows again     {flowing:5.1f} s   "
          f"x{flowing / context:.2f} of a new SparkContext's start and first job")
    print(f"  new SparkContext + first job   {context:5.1f} s")
    print(f"  new SparkSession + first job   {session:5.1f} s")


if __name__ == "__main__":
    main()
