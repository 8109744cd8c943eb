"""What Spark's launcher is told as PySpark starts a driver's JVM: the operator's settings file
and the class archive its JVM maps.

Both go through the environment PySpark's ``launch_gateway`` reads (``PYSPARK_SUBMIT_ARGS``
for spark-submit's arguments, ``SPARK_SUBMIT_OPTS`` for the JVM's options), since settings such
as ``spark.driver.memory`` and a JVM's class archive apply only as the JVM starts."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from dataflow_engine.rest.endpoints import CLASS_ARCHIVE_ENV

#: A JVM whose classpath or build differs from the archive's ignores it, and says nothing.
QUIET_SHARING = "-Xlog:cds=off,cds+dynamic=off"


def class_archive_options() -> list[str]:
    """The JVM options that map the class archive ``DATAFLOW_CLASS_ARCHIVE`` names; none when
    it is unset or unreadable."""
    archive = os.environ.get(CLASS_ARCHIVE_ENV, "")
    if not archive or not os.access(archive, os.R_OK):
        return []
    return [f"-XX:SharedArchiveFile={archive}", QUIET_SHARING]


def prepare_driver_launch(properties_file: Path | None) -> None:
    """Sets this process's environment for the driver JVM PySpark is about to launch: it reads
    ``properties_file`` as spark-submit's ``--properties-file``, and maps the class archive.

    A settings file rather than a ``SPARK_CONF_DIR``: Spark's launcher puts a configuration
    directory first on the JVM's classpath, and a JVM with a directory that is not empty
    there cannot map a class archive (docs/image.md)."""
    if properties_file is not None:
        submit_args = os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell")
        os.environ["PYSPARK_SUBMIT_ARGS"] = (
            f"--properties-file {shlex.quote(str(properties_file))} {submit_args}")
    sharing = class_archive_options()
    if sharing:
        # First: the operator's or the user's options come after, and a JVM takes the last.
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
            [*sharing, *filter(None, [os.environ.get("SPARK_SUBMIT_OPTS")])])
