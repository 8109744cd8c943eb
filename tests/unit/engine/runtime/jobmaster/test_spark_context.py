"""Which SparkContext a run uses: a local one made by a run is kept for the process's next
runs (starting one and its Python workers costs seconds), unless a run asks for other
settings; one for a cluster master is stopped after its run, since it holds executors."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyspark
import pytest

from dataflow_engine.runtime.jobmaster import runner
from dataflow_engine.runtime.jobmaster.config import RunnerConfig

pytestmark = pytest.mark.unit


class FakeContext:
    """PySpark's SparkContext as far as ``_spark_context`` uses it: one active per process."""

    _active_spark_context: FakeContext | None = None
    _gateway: object | None = None
    made: list[FakeContext] = []

    def __init__(self, master: str, conf: Any) -> None:
        self.master = master
        self.conf = dict(conf.getAll())
        self.stopped = False
        FakeContext._active_spark_context = self
        FakeContext.made.append(self)

    def setLogLevel(self, level: str) -> None:
        self.level = level

    def stop(self) -> None:
        self.stopped = True
        FakeContext._active_spark_context = None


class FakeConf:
    def __init__(self) -> None:
        self.items: dict[str, str] = {}

    def setAll(self, pairs: list[tuple[str, str]]) -> FakeConf:
        self.items.update(pairs)
        return self

    def getAll(self) -> list[tuple[str, str]]:
        return list(self.items.items())


@pytest.fixture(autouse=True)
def fake_spark(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(pyspark, "SparkContext", FakeContext)
    monkeypatch.setattr(pyspark, "SparkConf", FakeConf)
    monkeypatch.setattr(runner, "_kept", None)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    # What the launch of a JVM would be given: unset, and what a run sets undone after the
    # test (a delenv of a variable that is not set records nothing to undo).
    for launch in ("PYSPARK_SUBMIT_ARGS", "SPARK_SUBMIT_OPTS", "DATAFLOW_CLASS_ARCHIVE"):
        monkeypatch.setenv(launch, "")
        monkeypatch.delenv(launch)
    FakeContext._active_spark_context = None
    FakeContext._gateway = None
    FakeContext.made = []
    yield


def _context(job: str = "job", **config: Any) -> tuple[Any, bool]:
    return runner._spark_context(RunnerConfig(**config), job, {})


def test_a_local_context_is_kept_for_the_next_run_whatever_its_app_name() -> None:
    first, owned = _context("first")
    assert not owned and not first.stopped
    assert first.conf["spark.app.name"] == "dataflow:first"
    second, owned = _context("second", log_level="ERROR")
    assert second is first and not owned and second.level == "ERROR"
    assert len(FakeContext.made) == 1


def test_a_run_asking_for_other_settings_gets_a_new_context() -> None:
    first, _ = _context(spark_conf={"spark.sql.shuffle.partitions": "4"})
    second, owned = _context(spark_conf={"spark.sql.shuffle.partitions": "8"})
    assert first.stopped and second is not first and not owned
    assert second.conf["spark.sql.shuffle.partitions"] == "8"
    third, _ = _context(spark_conf={"spark.sql.shuffle.partitions": "8"})
    assert third is second and not second.stopped


def test_settings_from_secrets_count_as_settings() -> None:
    first, _ = runner._spark_context(RunnerConfig(), "job", {"spark.some.password": "a"})
    second, _ = runner._spark_context(RunnerConfig(), "job", {"spark.some.password": "b"})
    assert first.stopped and second.conf["spark.some.password"] == "b"


def test_a_context_for_a_cluster_master_is_the_runs_own() -> None:
    context, owned = _context(master="spark://master:7077")
    assert owned and runner._kept is None
    assert "spark.ui.enabled" not in context.conf


def test_a_context_the_program_made_is_used_as_it_is() -> None:
    mine = FakeContext("local[1]", FakeConf().setAll([("spark.app.name", "mine")]))
    context, owned = _context(spark_conf={"spark.sql.shuffle.partitions": "8"})
    assert context is mine and not owned and not mine.stopped


def test_a_properties_file_reaches_sparks_launcher_and_its_keys_are_not_overridden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    properties = tmp_path / "the job's spark-defaults.conf"
    properties.write_text("spark.python.worker.reuse false\nspark.driver.memory=1g\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "elsewhere"))
    context, _ = _context(properties_file=properties)
    assert shlex.split(os.environ["PYSPARK_SUBMIT_ARGS"]) == [
        "--properties-file", str(properties), "pyspark-shell"]
    # The file's keys are the launcher's to set; the runner's defaults stand back.
    assert "spark.python.worker.reuse" not in context.conf
    assert context.conf["spark.ui.showConsoleProgress"] == "false"


def test_a_properties_file_is_not_passed_to_a_jvm_already_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    properties = tmp_path / "spark.conf"
    properties.write_text("spark.driver.memory 1g\n")
    FakeContext._gateway = object()
    _context(properties_file=properties)
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ
