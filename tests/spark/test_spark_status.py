"""The status document: states derived from Spark's tasks, published on HTTP and in a file."""

from __future__ import annotations

import contextlib
import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.rest.status import aggregate_state
from dataflow_engine.runtime.jobmaster.rest_server import StatusServer, write_status_file
from kube_helpers import free_port

pytestmark = pytest.mark.spark

def get(port: int, path: str = "/status") -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_status_is_served_while_running_and_written_to_a_file(run: Any, tmp_path: Path) -> None:
    job = {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 120}},
            {"name": "slow", "type": "map", "inputs": ["source"],
             "function": "spark_fns:slow_identity"},
            {"name": "out", "type": "collect", "inputs": [{"from": "slow",
                                                           "partitioning": "rebalance"}]},
        ],
    }
    port, status_file = free_port(), tmp_path / "status" / "job.json"
    seen: list[dict[str, Any]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            with contextlib.suppress(OSError):
                seen.append(get(port))
            time.sleep(0.1)

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        result = run(job, "status-job", status_port=port, status_file=status_file,
                     poll_interval=0.1)
    finally:
        done.set()
        poller.join()
    assert result.job_status is JobStatus.FINISHED, result.error
    assert result.status_port == port
    running = [d for d in seen if d.get("jobStatus") == "RUNNING"]
    assert running, "the server answered while the job ran"
    states = {s["state"] for d in running for v in d["vertices"] for s in v["subtasks"]}
    assert "RUNNING" in states
    document = json.loads(status_file.read_text())
    assert document["jobName"] == "status-job" and document["jobStatus"] == "FINISHED"
    assert document["schemaVersion"] == 1
    assert document["error"] is None and document["failure"] is None
    assert document["sparkMaster"].startswith("local")
    first, second = document["vertices"]
    assert first["name"] == "Source: Sequence Source -> Map"
    # A bounded run's subtasks report their busy time (the slow map's 120 records of 20 ms
    # each, split between them), and no rates: those are a continuous job's, over its epochs.
    assert [{k: s[k] for k in ("index", "state", "attempt", "recordsIn", "recordsOut")}
            for s in first["subtasks"]] == [
        {"index": 0, "state": "FINISHED", "attempt": 0, "recordsIn": 0, "recordsOut": 60},
        {"index": 1, "state": "FINISHED", "attempt": 0, "recordsIn": 0, "recordsOut": 60}]
    assert sum(s["busyMs"] for s in first["subtasks"]) >= 2400
    assert {(s["recordsInPerSecond"], s["busyRatio"]) for s in first["subtasks"]} == {(0, 0)}
    assert second["recordsIn"] == 120 and second["finishedSubtasks"] == 2
    assert [o["name"] for o in second["operators"]] == ["out"]
    assert first["operators"] == [
        {"name": "source", "type": "sequence", "recordsIn": 0, "recordsOut": 120},
        {"name": "slow", "type": "map", "recordsIn": 120, "recordsOut": 120}]
    assert document["durationMs"] >= 0 and document["endTime"] >= document["startTime"]


def test_status_server_endpoints() -> None:
    server = StatusServer(0, "127.0.0.1")
    try:
        server.publish({"jobStatus": "RUNNING"})
        assert get(server.port) == {"jobStatus": "RUNNING"}
        assert get(server.port, "/status/") == {"jobStatus": "RUNNING"}
        with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/healthz") as response:
            assert response.read() == b"ok\n"
        with pytest.raises(urllib.error.HTTPError):
            get(server.port, "/nope")
    finally:
        server.close()


def test_status_file_is_replaced_atomically(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    write_status_file(path, {"a": 1})
    write_status_file(path, {"a": 2})
    assert json.loads(path.read_text()) == {"a": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]


@pytest.mark.parametrize(("states", "expected"), [
    (["FINISHED", "FINISHED"], "FINISHED"),
    (["FINISHED", "RUNNING"], "RUNNING"),
    (["FINISHED", "CREATED"], "RUNNING"),
    (["CREATED", "SCHEDULED"], "SCHEDULED"),
    (["CREATED", "CREATED"], "CREATED"),
    (["FAILED", "RUNNING"], "FAILED"),
    (["CANCELED", "FINISHED"], "CANCELED"),
])
def test_vertex_state_aggregates_like_flink(states: list[str], expected: str) -> None:
    assert aggregate_state([ExecutionState(s) for s in states]) is ExecutionState(expected)


def test_subtasks_that_never_ran_are_canceled_when_the_job_fails(run: Any) -> None:
    spec = {
        "parallelism": 2,
        "pipeline": [
            {"name": "source", "type": "sequence", "args": {"from": 1, "to": 4}},
            {"name": "boom", "type": "map", "inputs": ["source"],
             "function": "spark_fns:fail_on_three"},
            {"name": "pair", "type": "map", "inputs": ["boom"], "function": "with_one"},
            {"name": "counts", "type": "sum", "inputs": [{"from": "pair", "keyBy": 0}],
             "args": {"field": 1}, "parallelism": 3},
            {"name": "out", "type": "discard", "inputs": ["counts"], "parallelism": 3},
        ],
    }
    result = run(spec)
    assert result.job_status is JobStatus.FAILED
    first, second = result.vertices
    assert first.subtasks[1].state is ExecutionState.FAILED
    assert first.subtasks[1].attempt == 1  # local[2,2]: one retry, then the job fails
    assert {s.state for s in second.subtasks} == {ExecutionState.CANCELED}



def test_a_job_started_by_execute_async_is_cancelled_by_its_client() -> None:
    """The program goes on while the job runs; cancel() ends a bounded run (its Spark jobs
    are cancelled) and the result's future says so."""
    import spark_fns

    from dataflow_engine.api import StreamExecutionEnvironment
    from dataflow_engine.runtime.jobmaster.config import JobExecutionError

    env = StreamExecutionEnvironment.get_execution_environment().set_parallelism(1)
    env.from_sequence(1, 3000).map(spark_fns.slow_identity).print()  # a minute of work
    client = env.execute_async("cancelled")
    deadline = time.monotonic() + 120
    while client.get_job_status().result() is not JobStatus.RUNNING:
        assert time.monotonic() < deadline, "the job never started"
        time.sleep(0.2)
    started = time.monotonic()
    client.cancel().result()
    assert time.monotonic() - started < 30  # not the minute the job would take
    assert client.get_job_status().result() is JobStatus.CANCELED
    with pytest.raises(JobExecutionError, match="cancelled"):
        client.get_job_execution_result().result()
