"""PySpark's workers start from the project's daemon: no archive on their path that each task
would read again."""

from __future__ import annotations

import sys
from typing import Any

import pytest

pytestmark = pytest.mark.spark


def test_workers_import_pyspark_from_a_directory_and_have_no_jar_on_their_path(
        spark: Any) -> None:
    def _worker_path(_: Any) -> list[Any]:  # nested: pickled by value for the worker
        import pyspark

        return [(list(sys.path), pyspark.__file__)]

    ((path, pyspark_file),) = spark.sparkContext.parallelize([0], 1).mapPartitions(
        _worker_path).collect()
    assert not [entry for entry in path if entry.endswith((".jar", ".zip"))
                and "pyspark" in entry], path
    assert ".zip" not in pyspark_file
