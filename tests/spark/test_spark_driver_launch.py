"""A `dataflow run` driver's JVM as PySpark launches it: it reads the Spark settings of
--properties-file (the operator's, for its drivers) and maps the class archive of Spark's
classes that hack/setup made (docker/class-archive.sh), its start at half the CPU."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dataflow_engine.rest import CLASS_ARCHIVE_ENV
from short_lived_jvms import CLASS_ARCHIVE

pytestmark = pytest.mark.spark

JOB = """\
apiVersion: dataflow.io/v1alpha1
kind: DataflowJob
metadata: {name: launched}
spec:
  parallelism: 1
  pipeline:
  - {name: numbers, type: sequence, args: {from: 1, to: 3}}
  - {name: out, type: print, inputs: [numbers]}
"""


def test_a_driver_reads_its_properties_file_and_maps_the_class_archive(tmp_path: Path) -> None:
    if not CLASS_ARCHIVE.is_file():
        pytest.fail(f"no class archive at {CLASS_ARCHIVE}: hack/setup makes it", pytrace=False)
    (tmp_path / "job.yaml").write_text(JOB)
    log = tmp_path / "cds.log"
    # JVM options only the file gives: -Xshare:on fails the JVM if it cannot map the archive,
    # and the log says what it mapped.
    properties = tmp_path / "spark-defaults.conf"
    properties.write_text(f"spark.driver.extraJavaOptions -Xshare:on -Xlog:cds=info:file={log}\n")
    env = {**os.environ, CLASS_ARCHIVE_ENV: str(CLASS_ARCHIVE)}
    for elsewhere in ("SPARK_CONF_DIR", "PYSPARK_SUBMIT_ARGS"):  # the file alone configures
        env.pop(elsewhere, None)
    done = subprocess.run([sys.executable, "-m", "dataflow_engine.cli", "run", "job.yaml",
                           "--master", "local[1]", "--no-progress",
                           "--properties-file", str(properties)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert sorted(line for line in done.stdout.splitlines() if line) == ["1", "2", "3"]
    mapped = log.read_text()
    assert f"Opened archive {CLASS_ARCHIVE}." in mapped
    assert "Mapped dynamic region" in mapped
