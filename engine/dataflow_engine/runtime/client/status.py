"""The execution status the runner publishes: every ExecutionVertex's state, attempt and
record counts, as one JSON document (schema: ``docs/runtime-status.md``)."""

from __future__ import annotations

import dataclasses
import time
from collections import Counter as Tally
from dataclasses import dataclass, field
from typing import Any

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.runtime.client.errors import TaskFailure

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class SubtaskStatus:
    index: int
    state: ExecutionState
    #: Attempt of the Spark task running (or last running) this subtask; 0 for the first.
    attempt: int
    #: Final counts of the successful attempt; 0 until it finished (Spark reports them then).
    records_in: int
    records_out: int

    def to_json(self) -> dict[str, Any]:
        return {"index": self.index, "state": self.state.value, "attempt": self.attempt,
                "recordsIn": self.records_in, "recordsOut": self.records_out}


@dataclass(frozen=True, slots=True)
class OperatorStatus:
    name: str
    type: str
    records_in: int
    records_out: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "recordsIn": self.records_in,
                "recordsOut": self.records_out}


def aggregate_state(states: list[ExecutionState]) -> ExecutionState:
    """Flink's ExecutionJobVertex aggregate state of its subtasks."""
    tally = Tally(states)
    for state in (ExecutionState.FAILED, ExecutionState.CANCELING, ExecutionState.CANCELED,
                  ExecutionState.RUNNING, ExecutionState.INITIALIZING,
                  ExecutionState.DEPLOYING, ExecutionState.SCHEDULED):
        if tally[state] and (state is not ExecutionState.SCHEDULED
                             or tally[ExecutionState.FINISHED] == 0):
            return state
    if tally[ExecutionState.FINISHED]:
        return (ExecutionState.FINISHED if tally[ExecutionState.FINISHED] == len(states)
                else ExecutionState.RUNNING)
    return ExecutionState.CREATED


@dataclass(frozen=True, slots=True)
class VertexStatus:
    id: str
    name: str
    parallelism: int
    max_parallelism: int
    subtasks: tuple[SubtaskStatus, ...]
    operators: tuple[OperatorStatus, ...]

    @property
    def state(self) -> ExecutionState:
        return aggregate_state([s.state for s in self.subtasks])

    @property
    def finished_subtasks(self) -> int:
        return sum(1 for s in self.subtasks if s.state is ExecutionState.FINISHED)

    @property
    def records_in(self) -> int:
        return sum(s.records_in for s in self.subtasks)

    @property
    def records_out(self) -> int:
        return sum(s.records_out for s in self.subtasks)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.name, "parallelism": self.parallelism,
            "maxParallelism": self.max_parallelism, "state": self.state.value,
            "finishedSubtasks": self.finished_subtasks,
            "recordsIn": self.records_in, "recordsOut": self.records_out,
            "subtasks": [s.to_json() for s in self.subtasks],
            "operators": [o.to_json() for o in self.operators],
        }


@dataclass(frozen=True, slots=True)
class PartitionLag:
    """A Kafka partition of a source: the next offset to read, and the records that waited
    for the latest epoch when it started (Flink's pendingRecords)."""

    source: str
    topic: str
    partition: int
    offset: int
    lag: int

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "topic": self.topic, "partition": self.partition,
                "offset": self.offset, "lag": self.lag}


@dataclass(frozen=True, slots=True)
class SavepointStats:
    """One savepoint asked for: completed (with its path) or failed (with why)."""

    nonce: str
    #: Wall-clock time (seconds) when it completed or failed.
    time: float
    checkpoint_id: int | None = None
    path: str | None = None
    error: str | None = None
    #: Taken to stop the job (stop-with-savepoint).
    stop: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"nonce": self.nonce, "time": _millis(self.time), "id": self.checkpoint_id,
                "path": self.path, "error": self.error, "stop": self.stop}


#: Savepoints a status lists, newest last.
SAVEPOINT_HISTORY = 10


@dataclass(frozen=True, slots=True)
class CheckpointStats:
    """Flink's checkpoint statistics of a continuous job."""

    #: Epochs run so far (each a Spark job over the whole plan).
    epochs: int = 0
    completed: int = 0
    failed: int = 0
    #: Failed since the last completed one (more than tolerableFailedCheckpoints fail the job).
    consecutive_failures: int = 0
    #: Why the latest failed checkpoint failed.
    last_failure: str | None = None
    #: The last completed checkpoint: id, trigger time (s), duration (ms), state size (bytes)
    #: and where it is stored (None: in the driver's memory).
    last_id: int | None = None
    last_time: float | None = None
    last_duration_ms: int | None = None
    last_size: int | None = None
    last_path: str | None = None
    #: Where the job started from (a checkpoint or savepoint path), if not from scratch.
    restored_from: str | None = None
    #: The last savepoints asked for, newest last.
    savepoints: tuple[SavepointStats, ...] = ()
    #: Every Kafka partition the sources read, as of the latest epoch's start.
    kafka_partitions: tuple[PartitionLag, ...] = ()

    def with_savepoint(self, savepoint: SavepointStats) -> CheckpointStats:
        return dataclasses.replace(
            self, savepoints=(*self.savepoints, savepoint)[-SAVEPOINT_HISTORY:])

    def to_json(self) -> dict[str, Any]:
        last = None
        if self.last_id is not None:
            assert self.last_time is not None
            last = {"id": self.last_id, "time": _millis(self.last_time),
                    "durationMs": self.last_duration_ms, "stateSize": self.last_size,
                    "path": self.last_path}
        return {"epochs": self.epochs, "completed": self.completed, "failed": self.failed,
                "consecutiveFailures": self.consecutive_failures,
                "lastFailure": self.last_failure, "lastCompleted": last,
                "restoredFrom": self.restored_from,
                "savepoints": [savepoint.to_json() for savepoint in self.savepoints],
                "kafkaPartitions": [lag.to_json() for lag in self.kafka_partitions]}


@dataclass(frozen=True, slots=True)
class JobExecutionStatus:
    job_name: str
    job_id: str
    job_status: JobStatus
    runtime_mode: str
    spark_master: str
    spark_application_id: str
    start_time: float
    end_time: float | None
    vertices: tuple[VertexStatus, ...]
    failure: TaskFailure | None = None
    error: str | None = None
    update_time: float = field(default_factory=time.time)
    #: Spark ResourceProfile id -> slot sharing group, when executors are sized per group.
    resource_profiles: dict[int, str] = field(default_factory=dict)
    #: A continuous job's epochs and checkpoints (None: a run to the end of its input).
    checkpoints: CheckpointStats | None = None

    @property
    def duration_ms(self) -> int:
        return int(((self.end_time or time.time()) - self.start_time) * 1000)

    def to_json(self) -> dict[str, Any]:
        failure = None
        if self.failure is not None:
            f = self.failure
            failure = {"operator": f.operator, "taskName": f.task_name,
                       "subtaskIndex": f.subtask_index, "attemptNumber": f.attempt_number,
                       "exceptionType": f.exception_type, "message": f.message}
        return {
            "schemaVersion": SCHEMA_VERSION,
            "jobName": self.job_name,
            "jobId": self.job_id,
            "jobStatus": self.job_status.value,
            "runtimeMode": self.runtime_mode,
            "sparkMaster": self.spark_master,
            "sparkApplicationId": self.spark_application_id,
            "startTime": _millis(self.start_time),
            "endTime": _millis(self.end_time) if self.end_time is not None else None,
            "durationMs": self.duration_ms,
            "updateTime": _millis(self.update_time),
            "error": self.error,
            "failure": failure,
            "resourceProfiles": {str(k): v for k, v in sorted(self.resource_profiles.items())},
            "vertices": [v.to_json() for v in self.vertices],
            "checkpoints": self.checkpoints.to_json() if self.checkpoints is not None else None,
        }


def _millis(seconds: float) -> int:
    return int(seconds * 1000)
