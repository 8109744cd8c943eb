"""The one writer of spark-defaults.conf: a setting is one line, or it is not written."""

from __future__ import annotations

import pytest

from dataflow_engine.spec.spark_properties import spark_defaults

pytestmark = pytest.mark.unit


def test_settings_are_key_equals_value_lines_sorted_with_backslashes_escaped() -> None:
    text = spark_defaults({"spark.b": "two words", "spark.a": "C:\\dir\\n",
                           "spark.kubernetes.executor.label.app.kubernetes.io/name": "x"})
    assert text == ("spark.a=C:\\\\dir\\\\n\n"
                    "spark.b=two words\n"
                    "spark.kubernetes.executor.label.app.kubernetes.io/name=x\n")


@pytest.mark.parametrize(("key", "value"), [
    ("spark.kubernetes.namespace=", "x"), ("spark.a:b", "x"), ("spark.a b", "x"),
    ("spark.a", "1\nspark.master local"), ("spark.a", "1\r2"), ("spark.a", "\x00"),
    ("spark.a", "x\u2028y"), ("!spark.a", "x"), ("spark.a\\", "x"),
])
def test_an_entry_that_would_not_read_back_as_one_setting_is_not_written(
        key: str, value: str) -> None:
    with pytest.raises(ValueError, match="Spark setting"):
        spark_defaults({"spark.fine": "1", key: value})
