"""Lambdas, closures, partials and bound methods run from Python on real Spark: shipped to the
Python workers by value, as PySpark ships its own functions."""

from __future__ import annotations

import functools
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from dataflow_engine.api import CollectSink, StreamExecutionEnvironment

pytestmark = pytest.mark.spark


class Scaler:
    def __init__(self, factor: int) -> None:
        self.factor = factor

    def scale(self, value: int) -> int:
        return value * self.factor


def _at_least(limit: int, value: int) -> bool:
    return value >= limit


def test_unimportable_functions_run_on_the_workers_with_their_closures() -> None:
    offset = 100  # captured: only shipping by value can carry it to a worker
    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(2)
    (env.from_sequence(1, 12)
     .map(Scaler(3).scale)                              # a bound method
     .filter(functools.partial(_at_least, 9))           # a partial
     .map(lambda x: x + offset)                         # a closure
     .key_by(lambda x: x % 2)                           # a lambda key selector
     .reduce(lambda a, b: a + b)                        # a lambda reduce
     .name("totals").sink_to(CollectSink()).name("out"))
    result = env.execute("shipped")
    result.check()
    scaled = [3 * x + offset for x in range(1, 13) if 3 * x >= 9]
    expected = {parity: sum(v for v in scaled if v % 2 == parity) for parity in (0, 1)}
    finals: dict[int, int] = {}
    for value in result.collected["out"]:  # rolling sums per key: the last is the total
        finals[value % 2] = value
    assert finals == expected


def test_a_job_file_with_lambdas_runs_with_dataflow_run(tmp_path: Path) -> None:
    (tmp_path / "lambdas-job.py").write_text(textwrap.dedent("""
        from dataflow_engine.api import StreamExecutionEnvironment

        def job():
            env = StreamExecutionEnvironment.get_execution_environment()
            words = env.from_collection(["a b", "b c", "c"])
            words.flat_map(lambda line: line.split()).map(lambda w: w.upper()).print()
            return env
    """))
    done = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", "run",
                           str(tmp_path / "lambdas-job.py"), "--master", "local[2]",
                           "--no-progress"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = sorted(line.split("> ", 1)[-1] for line in done.stdout.splitlines() if line)
    assert printed == ["A", "B", "B", "C", "C"]
