"""A job's own Python environment: its ``requirements`` installed over the image's packages.

The driver and every executor build it before Python runs any user code, at the same path
(a digest of the requirements and of this interpreter), because PySpark starts the executors'
Python workers with the driver's interpreter path. A built environment is kept in the cache
directory and reused; building one takes a lock there, so pods sharing a cache volume build it
once, and it appears under its final name only when pip has finished.

  python -m dataflow_engine.runtime.jobmaster.environment REQUIREMENTS [--cache DIR]
      prints the environment's python, building it first when needed
  python -m dataflow_engine.runtime.jobmaster.environment REQUIREMENTS [--cache DIR] --exec ARGS...
      runs ARGS with that python, PYSPARK_PYTHON set to it
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import venv
from pathlib import Path

DEFAULT_CACHE = Path(tempfile.gettempdir()) / "dataflow-venvs"


def read_requirements(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip()]


def environment_dir(requirements: list[str], cache: Path) -> Path:
    digest = hashlib.sha256("\n".join([sys.prefix, sys.version, *requirements]).encode())
    return cache / digest.hexdigest()[:16]


def ensure_environment(requirements: list[str], cache: Path = DEFAULT_CACHE) -> Path:
    """The python of an environment with ``requirements`` installed; built when missing."""
    target = environment_dir(requirements, cache)
    python = target / "bin" / "python"
    if python.exists():
        return python
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / f"{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if python.exists():  # built by another process while we waited
            return python
        scratch = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=cache))
        try:
            _build(scratch, requirements)
            scratch.rename(target)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return python


def _build(directory: Path, requirements: list[str]) -> None:
    venv.EnvBuilder(with_pip=False, symlinks=True, clear=True).create(directory)
    purelib = sysconfig.get_path("purelib", vars={"base": str(directory),
                                                 "platbase": str(directory)})
    # The image's packages (pyspark, this project, pip itself) stay importable beneath the
    # job's, with their own .pth files processed (an editable install is one).
    parents = [p for p in site.getsitepackages() if Path(p).is_dir()]
    Path(purelib).mkdir(parents=True, exist_ok=True)
    (Path(purelib) / "dataflow-parent.pth").write_text(
        "".join(f"import site; site.addsitedir({parent!r})\n" for parent in parents))
    requirements_file = directory / "requirements.txt"
    requirements_file.write_text("".join(f"{line}\n" for line in requirements))
    subprocess.run([str(directory / "bin" / "python"), "-m", "pip", "install", "--no-input",
                    "--disable-pip-version-check", "--no-warn-script-location",
                    "-r", str(requirements_file)], check=True, stdout=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m dataflow_engine.runtime.jobmaster.environment", description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("requirements", type=Path, help="a requirements file, one per line")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="where environments are kept")
    parser.add_argument("--exec", nargs=argparse.REMAINDER, dest="command",
                        help="run the environment's python with these arguments")
    args = parser.parse_args(argv)
    requirements = read_requirements(args.requirements)
    python = ensure_environment(requirements, args.cache) if requirements else Path(
        sys.executable)
    if args.command is None:
        print(python)
        return 0
    os.environ["PYSPARK_PYTHON"] = str(python)
    os.execv(python, [str(python), *args.command])


if __name__ == "__main__":
    sys.exit(main())
