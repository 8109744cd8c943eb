"""The operator <-> driver protocol (dataflow_engine.rest): documents and requests survive the
wire as the driver writes and reads them, and what a reader cannot read parses to None."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from graph_specs import compiled, op, source

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.rest import (
    PROTOCOL_VERSION,
    CheckpointStatistics,
    CompletedCheckpointInfo,
    DriverStatusDocument,
    FailureInfo,
    KafkaPartitionInfo,
    OperatorInfo,
    SavepointEntry,
    SavepointFailureReason,
    SavepointTriggerRequest,
    SubtaskInfo,
    VertexInfo,
    parse_savepoint_response,
    parse_status,
    upgrade_target,
)
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequest, SavepointRequests
from dataflow_engine.runtime.jobmaster.rest_server import savepoint_action

pytestmark = pytest.mark.unit


def _wire(document: dict[str, Any]) -> Any:
    """Through JSON text, as over HTTP or in the status file."""
    return json.loads(json.dumps(document))


def _document() -> DriverStatusDocument:
    subtasks = (SubtaskInfo(index=0, state=ExecutionState.RUNNING, attempt=1, records_in=4,
                            busy_ms=1200, records_in_per_second=2.0,
                            records_out_per_second=17.5, busy_ratio=0.25,
                            records_out=35),
                SubtaskInfo(index=1, state=ExecutionState.FINISHED, records_in=5,
                            records_out=42))
    refused = SavepointEntry(
        nonce="upgrade-1", time=1_795_323_370_000,
        error="the upgraded plan cannot restore this job's state, so the job keeps running",
        reason=SavepointFailureReason.UPGRADE_REFUSED, stop=True)
    taken = SavepointEntry(nonce="manual-2", time=1_795_323_371_000, checkpoint_id=7,
                           path="/checkpoints/savepoints/savepoint-7-ab")
    return DriverStatusDocument(
        job_name="wordcount", job_id="4bd000e275d04cb69b917cab9299d20c",
        job_status=JobStatus.RUNNING, runtime_mode="STREAMING", spark_master="local[2]",
        spark_application_id="local-1", start_time=1_795_323_366_648,
        update_time=1_795_323_374_115, error=None,
        failure=FailureInfo(operator="boom", task_name="Map", subtask_index=1,
                            attempt_number=0, exception_type="ValueError", message="bad"),
        resource_profiles={2: "default", 1: "heavy"},
        vertices=(VertexInfo(id="88197b52", name="Flat Map", parallelism=2, max_parallelism=128,
                             subtasks=subtasks, backlog=3,
                             operators=(OperatorInfo(name="tokenize", type="flat_map",
                                                     records_in=9, records_out=77),)),),
        checkpoints=CheckpointStatistics(
            epochs=12, completed=3, failed=1, consecutive_failures=1,
            last_failure="checkpoint 12: not written within 1 s",
            last_completed=CompletedCheckpointInfo(id=11, time=1_795_323_373_000,
                                                   duration_ms=40, state_size=1024,
                                                   path="/checkpoints/chk-11"),
            restored_from="/checkpoints/chk-2",
            kafka_partitions=(KafkaPartitionInfo(source="clicks", topic="t", partition=0,
                                                 offset=10, lag=3),),
        ).with_savepoint(refused).with_savepoint(taken))


def test_a_status_document_round_trips_with_todays_wire_names() -> None:
    document = _document()
    written = _wire(document.to_json())
    assert written["schemaVersion"] == PROTOCOL_VERSION
    assert (written["jobStatus"], written["durationMs"]) == ("RUNNING", 7467)
    vertex = written["vertices"][0]
    assert (vertex["state"], vertex["finishedSubtasks"], vertex["recordsIn"],
            vertex["recordsOut"], vertex["maxParallelism"]) == ("RUNNING", 1, 9, 77, 128)
    assert vertex["subtasks"][0] == {"index": 0, "state": "RUNNING", "attempt": 1,
                                     "recordsIn": 4, "recordsOut": 35, "busyMs": 1200,
                                     "recordsInPerSecond": 2.0, "recordsOutPerSecond": 17.5,
                                     "busyRatio": 0.25}
    assert (vertex["recordsInPerSecond"], vertex["busyRatio"], vertex["backlog"]) == (
        2.0, 0.125, 3)
    checkpoints = written["checkpoints"]
    assert checkpoints["lastCompleted"]["durationMs"] == 40
    assert checkpoints["consecutiveFailures"] == 1
    assert checkpoints["kafkaPartitions"] == [
        {"source": "clicks", "topic": "t", "partition": 0, "offset": 10, "lag": 3}]
    assert checkpoints["savepoints"][1] == {
        "nonce": "manual-2", "time": 1_795_323_371_000, "id": 7,
        "path": "/checkpoints/savepoints/savepoint-7-ab", "error": None, "reason": None,
        "stop": False, "kind": "savepoint", "drained": False}
    assert written["failure"]["subtaskIndex"] == 1
    assert written["resourceProfiles"] == {"1": "heavy", "2": "default"}

    read = parse_status(written)
    assert read == document
    assert read.vertices[0].state is ExecutionState.RUNNING


def test_the_failure_reason_survives_the_round_trip() -> None:
    read = parse_status(_wire(_document().to_json()))
    assert read is not None and read.checkpoints is not None
    refused = read.checkpoints.savepoint("upgrade-1")
    assert refused is not None and not refused.completed
    assert refused.reason is SavepointFailureReason.UPGRADE_REFUSED
    assert _wire(refused.to_json())["reason"] == "UPGRADE_REFUSED"
    taken = read.checkpoints.savepoint("manual-2")
    assert taken is not None and taken.completed and taken.checkpoint_id == 7
    assert read.checkpoints.savepoint("never-asked") is None


@pytest.mark.parametrize("document", [
    None, "RUNNING", [], {},
    {"jobStatus": "RUNNING"},
    "another version",
    "a state nobody knows",
    "a reason nobody knows",
    "counts that are not numbers",
])
def test_a_document_of_another_version_or_a_malformed_one_parses_to_none(
        document: Any) -> None:
    written = _wire(_document().to_json())
    if document == "another version":
        document = {**written, "schemaVersion": PROTOCOL_VERSION + 1}
    elif document == "a state nobody knows":
        written["vertices"][0]["subtasks"][0]["state"] = "DREAMING"
        document = written
    elif document == "a reason nobody knows":
        written["checkpoints"]["savepoints"][0]["reason"] = "BAD_LUCK"
        document = written
    elif document == "counts that are not numbers":
        written["vertices"][0]["subtasks"][0]["recordsIn"] = "many"
        document = written
    assert parse_status(document) is None


def test_fields_a_newer_driver_added_are_ignored() -> None:
    written = _wire(_document().to_json())
    written["somethingNew"] = {"x": 1}
    written["vertices"][0]["subtasks"][0]["somethingNew"] = 1
    assert parse_status(written) == _document()


def test_a_savepoint_request_round_trips_from_the_operator_to_the_run() -> None:
    job = compiled(source(), op("m", "map", "src"), op("s", "sum", {"from": "m", "keyBy": 0}),
                   op("out", "print", "s"), parallelism=2)
    request = SavepointTriggerRequest(nonce="upgrade-abc", stop=True,
                                      upgrade_to=upgrade_target(job, True))
    body = _wire(request.to_json())
    assert body["schemaVersion"] == PROTOCOL_VERSION
    assert body["upgradeTo"]["allowNonRestoredState"] is True
    assert set(body["upgradeTo"]["vertices"][0]) == {"id", "parallelism", "maxParallelism",
                                                     "operatorUids"}
    assert SavepointTriggerRequest.model_validate(body) == request

    requests = SavepointRequests()
    requests.accepting = True
    reply = _wire(savepoint_action(requests, body).to_json())
    shapes = tuple(VertexShape(v.id, v.parallelism, v.max_parallelism,
                               tuple(node.uid for node in v.operators))
                   for v in job.job_graph.vertices)
    assert requests.take() == [SavepointRequest("upgrade-abc", True, shapes, True)]
    answer = parse_savepoint_response(reply)
    assert answer is not None and (answer.accepted, answer.nonce, answer.stop) == (
        True, "upgrade-abc", True)


def test_a_request_without_a_version_is_this_version_and_one_of_another_is_refused() -> None:
    requests = SavepointRequests()
    requests.accepting = True
    savepoint_action(requests, {"nonce": "old-operator", "stop": False})
    assert requests.take() == [SavepointRequest("old-operator")]
    for body in ({"nonce": "n", "schemaVersion": PROTOCOL_VERSION + 1},
                 {"nonce": "n", "stop": "yes"}, {"stop": True}, {"nonce": ""},
                 {"nonce": "n", "upgradeTo": {"vertices": [{"id": "v"}]}}):
        with pytest.raises(ValueError, match="not a savepoint request"):
            savepoint_action(requests, body)
    assert requests.take() == []
    assert parse_savepoint_response({"error": "no"}) is None


def test_the_protocol_imports_nothing_of_the_runtime() -> None:
    code = ("import sys, dataflow_engine.rest; "
            "print(sorted(m for m in sys.modules if m.startswith('dataflow_engine.runtime')))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.strip() == "[]"
