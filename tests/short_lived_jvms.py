"""JVM options for the JVMs that tests start for a run or two: the drivers of `dataflow run`
and spark-submit's launcher, through Spark's SPARK_SUBMIT_OPTS, and the drivers and executors
of the operators the tests start (their --jvm-options, tests/operator_helpers.py).

They compile with C1 only. C2 took half the CPU of such a JVM (a word count's driver: 17 CPU
seconds, 8.5 with C1 only), compiling code that never ran long enough to repay it, and on the
2-core machine that CI's two workers share, CPU is what the tests wait for. A JVM that lives
for a whole tier (the spark tier's session) keeps C2: :func:`long_lived`."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dataflow_engine.rest import CLASS_ARCHIVE_ENV

SHORT_LIVED = "-XX:TieredStopAtLevel=1"
_VARIABLE = "SPARK_SUBMIT_OPTS"
#: The class archive hack/setup makes of the environment's Spark (docker/class-archive.sh).
CLASS_ARCHIVE = Path(sys.prefix) / "spark-classes.jsa"


def use_for_short_lived_jvms() -> None:
    """Sets the options for every JVM this process starts, unless the user set their own; the
    drivers this process starts, and those of the local operators it starts, map the class
    archive of the environment's Spark when hack/setup made one (a driver's start at half the
    CPU)."""
    os.environ.setdefault(_VARIABLE, SHORT_LIVED)
    if CLASS_ARCHIVE.is_file():
        os.environ.setdefault(CLASS_ARCHIVE_ENV, str(CLASS_ARCHIVE))


@contextmanager
def long_lived() -> Iterator[None]:
    """A JVM started in this block keeps the JVM's default compilers."""
    ours = os.environ.get(_VARIABLE) == SHORT_LIVED
    if ours:
        del os.environ[_VARIABLE]
    try:
        yield
    finally:
        if ours:
            os.environ[_VARIABLE] = SHORT_LIVED
