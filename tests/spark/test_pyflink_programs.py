"""PyFlink DataStream programs run here once ``pyflink.`` becomes ``dataflow_engine.api.`` in
their imports, and print what PyFlink prints for them (records without a declared output type
print as Python objects, in PyFlink too)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

PROGRAMS = Path(__file__).parent / "pyflink_programs"


def run_program(name: str, tmp_path: Path) -> list[str]:
    source = (PROGRAMS / name).read_text()
    assert "from pyflink." in source and "dataflow_engine" not in source
    program = tmp_path / name
    program.write_text(source.replace("pyflink.", "dataflow_engine.api."))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.strip()]


def test_windowed_counts_with_late_data(tmp_path: Path) -> None:
    # The watermark never passes a window's end before the input ends: nothing is late, and
    # the final watermark fires every window.
    assert sorted(run_program("windowed_counts.py", tmp_path)) == [
        "('a', 0, 5000, 2)", "('a', 5000, 10000, 1)", "('b', 0, 5000, 1)",
        "('b', 10000, 15000, 1)"]


def test_count_with_timeout(tmp_path: Path) -> None:
    # A key reports its count once a minute of event time passed without a record of it. The
    # input is read long before a periodic watermark (200 ms) is due, so, in Flink as here,
    # only the final watermark fires timers, and only each key's last timer still matches.
    assert sorted(run_program("count_with_timeout.py", tmp_path)) == [
        "('hello', 2)", "('hi', 3)"]


def test_connected_streams_and_execute_and_collect(tmp_path: Path) -> None:
    # execute_and_collect gives records of the declared TUPLE<STRING, STRING> (a map1 that
    # returned an int in a STRING field would fail the job, in PyFlink too)
    assert run_program("connected_rates.py", tmp_path) == [
        "('order', '1')", "('order', '2')", "('order', '3')", "('rate', 'eur')",
        "('rate', 'usd')"]
