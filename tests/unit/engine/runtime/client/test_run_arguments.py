"""``dataflow run``'s options as the runner's settings, and the options it refuses."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dataflow_engine.runtime.client.command import add_run_arguments, run, runner_settings

pytestmark = pytest.mark.unit


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(["job.yaml", *argv])


def test_spark_settings_come_as_conf_pairs_and_a_properties_file(tmp_path: Path) -> None:
    properties = tmp_path / "spark-defaults.conf"
    properties.write_text("spark.driver.memory 1g\n")
    settings = runner_settings(_args("--conf", "spark.a= 1", "--properties-file",
                                     str(properties)))
    assert settings["spark_conf"] == {"spark.a": " 1"}
    assert settings["properties_file"] == properties
    assert runner_settings(_args())["properties_file"] is None


def test_a_missing_properties_file_is_refused_naming_the_option(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text("apiVersion: dataflow.io/v1alpha1\nkind: DataflowJob\nmetadata:\n"
                        "  name: j\nspec:\n  pipeline:\n  - {name: s, type: sequence, "
                        "args: {from: 1, to: 2}}\n  - {name: o, type: print, inputs: [s]}\n")
    args = _args("--properties-file", str(tmp_path / "absent.conf"))
    args.target, args.args = str(manifest), []
    assert run(args) == 2
    error = capsys.readouterr().err
    assert "--properties-file" in error and "absent.conf: no such file" in error
