"""spark-defaults.conf read back by Spark's own loader: every entry the writer accepts is the one
setting it was, and hostile entries the policy would refuse never reach the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.compiler.policy import STRICT, spark_conf_problems
from dataflow_engine.spec.spark_properties import spark_defaults

pytestmark = pytest.mark.spark

HOSTILE = {
    "spark.kubernetes.namespace=": "victim",
    "spark.kubernetes.executor.podTemplateFile=": "/opt/dataflow/pyfiles/0/t.yaml",
    "spark.kubernetes.executor.podNamePrefix:": "x",
    "spark.sql.shuffle.partitions": "1\nspark.kubernetes.namespace target",
    "spark.app.name": "a\rspark.master local",
}
FINE = {
    "spark.sql.shuffle.partitions": "4",
    "spark.executor.extraJavaOptions": "-Da=b:c -Dd=\\\\server\\share #not-a-comment",
    "spark.kubernetes.executor.label.app.kubernetes.io/name": "x",
    "spark.kubernetes.executor.annotation.note": "  spaced = and : colons ",
    "spark.app.name": "\u00e9t\u00e9 \\u0041",
}


def _read_with_spark(spark: Any, path: Path) -> dict[str, str]:
    """Spark's loader of spark-defaults.conf (java.util.Properties, UTF-8, values trimmed)."""
    loaded = spark.sparkContext._jvm.org.apache.spark.util.Utils.getPropertiesFromFile(str(path))
    return {key: loaded.apply(key) for key in spark.sparkContext._jvm.scala.jdk.javaapi
            .CollectionConverters.asJava(loaded.keys())}


def test_every_written_setting_reads_back_as_itself(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "spark-defaults.conf"
    path.write_text(spark_defaults(FINE), encoding="utf-8")
    assert _read_with_spark(spark, path) == {key: value.strip() for key, value in FINE.items()}


def test_hostile_entries_are_refused_before_any_file_is_written(spark: Any,
                                                                tmp_path: Path) -> None:
    for key, value in HOSTILE.items():
        assert list(spark_conf_problems({key: value}, "spec.sparkConf", STRICT)), key
        with pytest.raises(ValueError):
            spark_defaults({key: value})
    # What the old writer ("key value" lines, no checks) made of them, read by Spark: each
    # entry became a setting of the operator's, which is why they are refused.
    path = tmp_path / "old.conf"
    path.write_text("".join(f"{key} {value}\n" for key, value in HOSTILE.items()),
                    encoding="utf-8")
    smuggled = _read_with_spark(spark, path)
    assert {"spark.kubernetes.namespace", "spark.kubernetes.executor.podTemplateFile",
            "spark.kubernetes.executor.podNamePrefix", "spark.master"} <= set(smuggled)
