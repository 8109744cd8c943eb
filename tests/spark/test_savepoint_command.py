"""``dataflow savepoint --wait`` as a user runs it: against ``dataflow run --status-port 0``,
whose port it finds in the driver's ``status-port`` file, a savepoint whose path it prints,
then a stop-with-savepoint that ends the run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.spark

DATAFLOW = str(Path(sys.executable).parent / "dataflow")


def _until(what: str, ready: Callable[[], bool], process: subprocess.Popen[bytes],
           log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, f"the run ended:\n{log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"no {what}:\n{log.read_text()[-3000:]}"
        time.sleep(0.1)


def _epochs(url: str) -> int:
    with urllib.request.urlopen(f"{url}/status", timeout=5) as answer:
        return int((json.load(answer).get("checkpoints") or {}).get("epochs", 0))


def test_savepoint_wait_prints_the_path_and_a_stop_ends_the_run(tmp_path: Path) -> None:
    storage, log = tmp_path / "checkpoints", tmp_path / "run.log"
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump({
        "apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
        "metadata": {"name": "ticks"},
        "spec": {"parallelism": 1, "runtimeMode": "STREAMING", "epochInterval": "200ms",
                 "checkpointing": {"interval": "10s", "storage": str(storage)},
                 "pipeline": [
                     {"name": "ticks", "type": "datagen", "args": {"rowsPerSecond": 50}},
                     {"name": "out", "type": "discard", "inputs": ["ticks"]}]}}))
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [DATAFLOW, "run", str(job), "--master", "local[1]", "--status-port", "0",
             "--no-progress"], stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True)
    try:
        port_file = storage / "status-port"
        _until("status-port file", port_file.exists, process, log)
        port = int(port_file.read_text())
        url = f"http://127.0.0.1:{port}"
        assert f"status server listening on {url}\n" in log.read_text()
        _until("epochs", lambda: _epochs(url) >= 1, process, log)

        taken = subprocess.run([DATAFLOW, "savepoint", "--wait", url], capture_output=True,
                               text=True, timeout=60, check=False)
        assert taken.returncode == 0, taken.stderr
        path = Path(taken.stdout.removesuffix("\n"))
        assert "\n" not in taken.stdout.strip() and path.parent == storage / "savepoints"
        assert (path / "_metadata").is_file()
        assert process.poll() is None  # a savepoint alone leaves the job running

        stopped = subprocess.run([DATAFLOW, "savepoint", "--stop", "--wait", url],
                                 capture_output=True, text=True, timeout=60, check=False)
        assert stopped.returncode == 0, stopped.stderr
        last = Path(stopped.stdout.strip())
        assert last != path and (last / "_metadata").is_file()
        assert process.wait(timeout=60) == 0, log.read_text()[-3000:]
        assert not port_file.exists()  # removed when the run ended
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
