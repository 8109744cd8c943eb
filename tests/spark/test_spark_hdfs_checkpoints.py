"""Checkpoints and savepoints on a Hadoop filesystem: a real HDFS (``hack/hdfs``, a NameNode
and a DataNode from Hadoop's Maven Central artifacts) reached through the driver's Spark. A
driver gone mid-stream resumes from the newest checkpoint in HDFS with every window published
once; a stop-with-savepoint lands in HDFS and a run restores from it; a URI no filesystem
serves fails the job naming the field."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from test_spark_continuous import committed_lines, expected_windows, windowed_job

from conftest import RunJob
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.runtime.checkpoint.filesystems import HadoopFileSystem
from dataflow_engine.runtime.checkpoint.savepoints import (
    SavepointRefused,
    SavepointRequest,
    SavepointRequests,
)
from dataflow_engine.runtime.checkpoint.storage import CheckpointStorage, load_checkpoint
from hack_servers import HACK

pytestmark = pytest.mark.spark


def _completed(hdfs: HadoopFileSystem, storage: str) -> list[int]:
    return sorted(int(name.removeprefix("chk-")) for name in hdfs.names(storage)
                  if name.startswith("chk-") and hdfs.is_file(f"{storage}/{name}/_metadata"))


def _after_checkpoints(hdfs: HadoopFileSystem, storage: str, checkpoint_id: int,
                       action: Any) -> None:
    """Calls ``action`` once checkpoint ``checkpoint_id`` completed in ``storage`` (one
    is retained: older ones are gone by then)."""
    def watch() -> None:
        while (_completed(hdfs, storage) or [0])[-1] < checkpoint_id:
            time.sleep(0.1)
        action()

    threading.Thread(target=watch, daemon=True).start()


def test_a_stopped_driver_resumes_from_its_checkpoint_in_hdfs(
        run: RunJob, spark: Any, hdfs_uri: str, tmp_path: Path) -> None:
    storage, output = f"{hdfs_uri}/{uuid.uuid4().hex}/checkpoints", tmp_path / "out"
    hdfs = HadoopFileSystem.of_active_spark_context(storage)
    checkpointing = {"interval": "200ms", "storage": storage,
                     "savepointStorage": str(tmp_path / "savepoints")}
    sink = {"type": "file", "args": {"path": str(output), "format": "json"}}

    stop = threading.Event()
    _after_checkpoints(hdfs, storage, 3, stop.set)
    gone = run(windowed_job(None, 1500, sink=sink, checkpointing=checkpointing), stop=stop)
    assert gone.job_status is JobStatus.CANCELED, gone.error
    assert not any(tmp_path.glob("**/chk-*"))  # the checkpoints are in HDFS only
    latest = CheckpointStorage(storage, filesystem=hdfs).latest()
    assert latest is not None and latest.path == f"{storage}/chk-{_completed(hdfs, storage)[-1]}"

    rows = int(latest.sources["events"]) + 1500
    resumed = run(windowed_job(rows, 1500, sink=sink, checkpointing=checkpointing))
    assert resumed.job_status is JobStatus.FINISHED, resumed.error
    assert resumed.status.checkpoints is not None
    assert resumed.status.checkpoints.restored_from == latest.path
    assert committed_lines(output) == expected_windows(rows)
    assert len(_completed(hdfs, storage)) == 1  # retained: 1, older ones deleted in HDFS


def test_a_savepoint_in_hdfs_restores_and_an_unknown_scheme_is_named(
        run: RunJob, spark: Any, hdfs_uri: str) -> None:
    storage = f"{hdfs_uri}/{uuid.uuid4().hex}/checkpoints"
    hdfs = HadoopFileSystem.of_active_spark_context(storage)
    checkpointing = {"interval": "200ms", "storage": storage}
    requests = SavepointRequests()

    def stop_with_savepoint() -> None:
        while True:
            try:
                requests.request(SavepointRequest("to-hdfs", stop=True))
                return
            except SavepointRefused:  # the run has not started its epochs yet
                time.sleep(0.05)

    _after_checkpoints(hdfs, storage, 2, stop_with_savepoint)
    first = run(windowed_job(None, 1500, sink={"type": "discard"},
                             checkpointing=checkpointing), savepoints=requests)
    assert first.job_status is JobStatus.FINISHED, first.error
    assert first.status.checkpoints is not None
    savepoint = first.status.checkpoints.savepoints[-1]
    assert savepoint.error is None and savepoint.path is not None
    assert savepoint.path.startswith(f"{storage}/savepoints/savepoint-")
    emitted = int(load_checkpoint(savepoint.path, hdfs).sources["events"])

    restored = run(windowed_job(emitted + 300, 1500, sink={"type": "discard"},
                                checkpointing={"interval": "200ms"}),
                   restore=savepoint.path)
    assert restored.job_status is JobStatus.FINISHED, restored.error
    assert restored.operator_metrics()["events"][1] == 300  # on from the savepoint's position

    unknown = run(windowed_job(100, 1500, sink={"type": "discard"}, checkpointing={
        "interval": "200ms", "storage": "nosuchfs://somewhere/checkpoints"}))
    assert unknown.job_status is JobStatus.FAILED
    assert "spec.checkpointing.storage: no filesystem for nosuchfs://somewhere" in (
        unknown.error or ""), unknown.error


def test_hack_hdfs_up_list_and_down_manage_an_instance_of_its_own() -> None:
    def hack_hdfs(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(HACK / "hdfs"), *args], capture_output=True, text=True,
                              timeout=300, check=False)

    uri = hack_hdfs("up").stdout.strip().splitlines()[-1]
    assert uri.startswith("hdfs://127.0.0.1:")
    state = Path(next(line.split("\t")[0] for line in hack_hdfs("list").stdout.splitlines()
                      if line.endswith("\t" + uri)))
    assert (state / "data").is_dir()  # the NameNode's and DataNode's directories
    port = int(uri.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    assert hack_hdfs("down", uri).returncode == 0
    assert not state.exists() and uri not in hack_hdfs("list").stdout
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    refused = hack_hdfs("down", str(Path.home()))
    assert refused.returncode == 1 and "not the state dir" in refused.stderr
