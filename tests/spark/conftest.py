"""One SparkSession for every Spark test: local, 2 cores, task retries on (``local[2,2]``: a
failed task is retried once, which the file-sink retry test needs), quiet; stopped when the
spark tier ends (its tests that start jobs without the fixture find it active until then,
and one such test's context, which a local run keeps, is stopped when the fixture starts)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.compiler.compile import compile_job
from dataflow_engine.runtime import JobExecutionResult, RunnerConfig, run_job
from dataflow_engine.runtime.jobmaster.runner import WORKER_DAEMON
from dataflow_engine.spec.model import DataflowJobSpec
from kube_helpers import REPO_ROOT
from lifetimes import until_last_use
from short_lived_jvms import long_lived

RunJob = Callable[..., JobExecutionResult]


@pytest.fixture(scope="session")
def spark(request: pytest.FixtureRequest) -> Iterator[Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    kept = SparkContext._active_spark_context  # a local run's, kept for the next runs
    if kept is not None:
        kept.stop()

    with long_lived():  # it serves the whole tier
        session = (
            SparkSession.builder.master("local[2,2]")
            .appName("dataflow-spark-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.python.daemon.module", WORKER_DAEMON)
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("ERROR")
    with until_last_use(request, tier="spark") as stack:
        stack.callback(session.stop)
        yield session


@pytest.fixture
def run(spark: Any) -> RunJob:
    """``run(spec_dict, name=None, **config) -> JobExecutionResult`` on the shared session."""

    def _run(spec: dict[str, Any] | DataflowJobSpec, name: str | None = None,
             **config: Any) -> JobExecutionResult:
        model = spec if isinstance(spec, DataflowJobSpec) else DataflowJobSpec.model_validate(spec)
        job_name = name or f"test-{uuid.uuid4().hex[:8]}"
        return run_job(compile_job(model, job_name), RunnerConfig(spark_session=spark, **config))

    return _run


@pytest.fixture(scope="session")
def pyflink_examples() -> Path:
    """PyFlink's DataStream examples (``pyflink/examples/datastream``) of the pinned
    apache-flink wheel, fetched once into the cache by ``hack/pyflink-examples``."""
    done = subprocess.run([str(REPO_ROOT / "hack" / "pyflink-examples")], capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return Path(done.stdout.splitlines()[-1])
