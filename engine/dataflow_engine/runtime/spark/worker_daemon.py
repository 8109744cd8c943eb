"""The executors' Python worker daemon (``spark.python.daemon.module``): PySpark's own, started
with ``sys.path`` rid of archives that only slow every task down.

PySpark's worker calls ``importlib.invalidate_caches()`` as each task starts, and Python 3.11's
zip importer then reads the table of contents of its archive again, once per importer: the
Spark jar that the JVM puts on the workers' ``PYTHONPATH`` (thousands of entries and not one
Python file) and pyspark.zip, whose every imported sub-package has an importer of its own. On
this project's machines that was a third of a second per task whatever the task did, so most of
an epoch's cost (``benchmarks/bench_latency.py``). Before PySpark is imported, this module
leaves out of ``sys.path``:

* an archive that holds no Python file (the Spark jars);
* an archive whose packages are found in a directory on ``sys.path`` too, with the same
  ``version.py``: the pyspark.zip and py4j zip of a pip-installed PySpark, which are copies of
  the installed packages. A different version keeps its archive, and its place in front.

Workers are forked from the daemon, so each inherits the shorter path. Importing this module
does not import PySpark; running it (``python -m``) runs PySpark's daemon.
"""

from __future__ import annotations

import os
import sys
import zipfile
from importlib.machinery import PathFinder


def _packages(archive: zipfile.ZipFile) -> set[str] | None:
    """The top-level modules and packages of Python in an archive (None: not one file)."""
    names = [name for name in archive.namelist() if name.endswith(".py")]
    if not names:
        return None
    return {name.split("/", 1)[0].removesuffix(".py") for name in names}


def _same_elsewhere(archive: zipfile.ZipFile, package: str, directories: list[str]) -> bool:
    spec = PathFinder.find_spec(package, directories)
    if spec is None or spec.origin is None:
        return False
    version = f"{package}/version.py"
    if version not in archive.namelist():
        return True
    installed = os.path.join(os.path.dirname(spec.origin), "version.py")
    try:
        with open(installed, "rb") as file:
            return file.read() == archive.read(version)
    except OSError:
        return False


def redundant_archives(path: list[str]) -> set[str]:
    """The entries of ``path`` that are archives PySpark's workers are better off without."""
    directories = [entry for entry in path if os.path.isdir(entry)]
    dropped = set()
    for entry in path:
        if not zipfile.is_zipfile(entry):
            continue
        with zipfile.ZipFile(entry) as archive:
            packages = _packages(archive)
            if packages is None or all(_same_elsewhere(archive, package, directories)
                                       for package in packages):
                dropped.add(entry)
    return dropped


def leave_out(dropped: set[str]) -> None:
    """Takes the archives off ``sys.path``, and their importers out of the cache."""
    sys.path[:] = [entry for entry in sys.path if entry not in dropped]
    for key in list(sys.path_importer_cache):
        if any(key == entry or key.startswith(entry + os.sep) for entry in dropped):
            del sys.path_importer_cache[key]


if __name__ == "__main__":
    leave_out(redundant_archives(sys.path))
    import runpy

    runpy.run_module("pyspark.daemon", run_name="__main__", alter_sys=True)
