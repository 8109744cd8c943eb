"""What a driver's JVM is launched with: the settings file and the class archive."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from dataflow_engine.rest import CLASS_ARCHIVE_ENV
from dataflow_engine.runtime.jobmaster.driver_launch import (
    class_archive_options,
    prepare_driver_launch,
)

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the variables set, and what a test sets undone after it (a delenv of a variable
    that is not set records nothing to undo)."""
    for name in ("PYSPARK_SUBMIT_ARGS", "SPARK_SUBMIT_OPTS", CLASS_ARCHIVE_ENV):
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_a_readable_archive_is_mapped_before_the_options_already_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    archive = tmp_path / "spark-classes.jsa"
    archive.write_bytes(b"archive")
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, str(archive))
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "-XX:TieredStopAtLevel=1")
    prepare_driver_launch(None)
    assert os.environ["SPARK_SUBMIT_OPTS"].split() == [
        f"-XX:SharedArchiveFile={archive}", "-Xlog:cds=off,cds+dynamic=off",
        "-XX:TieredStopAtLevel=1"]
    assert "PYSPARK_SUBMIT_ARGS" not in os.environ


def test_no_archive_options_for_a_missing_archive_or_none(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert class_archive_options() == []
    monkeypatch.setenv(CLASS_ARCHIVE_ENV, str(tmp_path / "absent.jsa"))
    assert class_archive_options() == []
    prepare_driver_launch(None)
    assert "SPARK_SUBMIT_OPTS" not in os.environ


def test_the_properties_file_comes_before_the_submit_arguments_already_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    properties = tmp_path / "a dir" / "spark-defaults.conf"
    monkeypatch.setenv("PYSPARK_SUBMIT_ARGS", "--driver-memory 2g pyspark-shell")
    prepare_driver_launch(properties)
    assert shlex.split(os.environ["PYSPARK_SUBMIT_ARGS"]) == [
        "--properties-file", str(properties), "--driver-memory", "2g", "pyspark-shell"]
