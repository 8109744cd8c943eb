"""Servers run from Maven Central artifacts with the machine's Java (hack/kafka, hack/hdfs):
their jars, resolved by Maven from a pom.xml and cached per version of that file, and the
registry of the running ones, each with a state dir holding its data, logs and pid."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from localcluster import procs
from localcluster.config import cache_root

_COMPLETE = ".complete"
#: The servers' JVMs compile with C1 alone and collect with the serial collector: they serve a
#: developer's machine and the tests, not a production load. A broker's start took 7.5 CPU
#: seconds with the JVM's defaults and 3.9 so, an idle minute of it 3.1 and 2.3 (2 cores).
JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def lib_dir(pom: Path, name: str) -> Path:
    """Where the jars of ``pom`` live: keyed by the file's hash, so any change refetches."""
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:12]
    return cache_root() / name / digest / "lib"


def fetched(pom: Path, name: str) -> bool:
    return (lib_dir(pom, name) / _COMPLETE).is_file()


def fetch(pom: Path, name: str, force: bool = False) -> Path:
    """Copies ``pom``'s runtime dependencies into :func:`lib_dir` (Maven's own repository,
    ``~/.m2``, keeps the downloads); a no-op when already complete."""
    target = lib_dir(pom, name)
    if fetched(pom, name) and not force:
        return target
    mvn = shutil.which("mvn")
    if mvn is None:
        raise FileNotFoundError(f"fetching {name}'s jars needs Maven (mvn) on PATH")
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    result = subprocess.run(
        [mvn, "-B", "-q", "-f", str(pom), "dependency:copy-dependencies",
         f"-DoutputDirectory={target}", "-DincludeScope=runtime"],
        capture_output=True, text=True, check=False)
    if result.returncode != 0:
        shutil.rmtree(target, ignore_errors=True)
        raise RuntimeError(f"mvn could not resolve {name}'s jars (exit {result.returncode}):"
                           f"\n{result.stdout[-3000:]}{result.stderr[-3000:]}")
    (target / _COMPLETE).write_text(f"{pom}\n")
    return target


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    candidate = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not candidate or not Path(candidate).is_file():
        raise FileNotFoundError("needs Java 17 or newer (java on PATH or $JAVA_HOME)")
    return candidate


def registry(name: str) -> Path:
    """One file per running server of kind ``name``, naming its state dir."""
    return cache_root() / name


def register(name: str, state: Path) -> None:
    registry(name).mkdir(parents=True, exist_ok=True)
    (registry(name) / state.name).write_text(f"{state}\n")


def running(name: str, process: str) -> list[Path]:
    """State dirs of the servers of kind ``name`` whose ``process`` is alive, oldest first;
    entries of dead ones are dropped."""
    directory = registry(name)
    entries = sorted(directory.iterdir(), key=lambda p: p.stat().st_mtime) if (
        directory.is_dir()) else []
    alive = []
    for entry in entries:
        state = Path(entry.read_text().strip())
        pid = procs.read_pids(state).get(process)
        if pid is not None and procs.is_ours(pid, state):
            alive.append(state)
        else:
            entry.unlink(missing_ok=True)
    return alive


def remove(name: str, state: Path) -> list[str]:
    """Stops the processes of ``state``, unregisters and removes it; returns what had to be
    killed."""
    killed = procs.stop(procs.read_pids(state), state)
    (registry(name) / state.name).unlink(missing_ok=True)
    shutil.rmtree(state, ignore_errors=True)
    return killed


def wait_serving(what: str, process: subprocess.Popen[bytes], log: Path,
                 serving: Callable[[], bool], timeout: float,
                 give_up: Callable[[], object]) -> None:
    """Returns once ``serving()``; if the process exits or ``timeout`` passes first, calls
    ``give_up`` (which removes the state) and raises with the log's last lines."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            last_lines = procs.tail(log)
            give_up()
            raise RuntimeError(f"{what} exited with {process.returncode}:\n{last_lines}")
        if serving():
            return
        time.sleep(0.2)
    last_lines = procs.tail(log)
    give_up()
    raise TimeoutError(f"{what} did not start within {timeout:.0f}s:\n{last_lines}")


def down_targets(running: list[tuple[Path, str]], target: str | None, every: bool
                 ) -> list[Path]:
    """The state dirs a ``down`` command means: every running server, the one whose address
    (or state dir) is ``target``, or else the latest started; ``running`` holds each running
    server's state dir and address, oldest first."""
    if every:
        return [state for state, _ in running]
    if target is not None:
        return [state for state, address in running if target == address] or [
            Path(target).resolve()]
    if not running:
        raise RuntimeError("none is running")
    return [running[-1][0]]
