"""The driver's status document: what ``GET /status`` serves and ``--status-file`` holds.

The one definition of its shape: the driver builds these models (and serialises them), the
operator parses the same models back (:func:`parse_status`), and ``docs/runtime-status.md``
describes each field. Times are epoch milliseconds; the derived fields (a vertex's aggregate
state and sums, the duration) are computed from the others, so they never disagree.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pydantic import computed_field

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_engine.rest.messages import Message, Model, parse_message
from dataflow_engine.rest.savepoints import SavepointEntry

#: Savepoints a document lists at most, newest last.
SAVEPOINT_HISTORY = 10


def aggregate_state(states: Sequence[ExecutionState]) -> ExecutionState:
    """Flink's ExecutionJobVertex aggregate state of its subtasks."""
    tally = Counter(states)
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


class SubtaskInfo(Model):
    """An ExecutionVertex."""

    index: int
    state: ExecutionState
    #: Attempt of the Spark task running (or last running) this subtask; 0 for the first.
    attempt: int = 0
    #: Final counts of the successful attempt; 0 until it finished (Spark reports them then).
    records_in: int = 0
    records_out: int = 0
    #: Wall time its tasks ran, summed over a continuous job's epochs.
    busy_ms: int = 0
    #: A continuous job's rates over its last epochs (0 before two epochs ended).
    records_in_per_second: float = 0.0
    records_out_per_second: float = 0.0
    #: Busy time per second of wall time, 0 to 1 (Flink's busyTimeMsPerSecond / 1000).
    busy_ratio: float = 0.0


class OperatorInfo(Model):
    """A chained operator, its counts summed over the subtasks."""

    name: str
    type: str
    records_in: int = 0
    records_out: int = 0


class VertexInfo(Model):
    """A JobVertex (an operator chain) and its subtasks."""

    id: str
    name: str
    parallelism: int
    max_parallelism: int
    subtasks: tuple[SubtaskInfo, ...]
    #: Head first.
    operators: tuple[OperatorInfo, ...] = ()
    #: A Kafka source's records waiting in its partitions when the latest epoch started
    #: (None: not a Kafka source).
    backlog: int | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def state(self) -> ExecutionState:
        return aggregate_state([s.state for s in self.subtasks])

    @computed_field  # type: ignore[prop-decorator]
    @property
    def finished_subtasks(self) -> int:
        return sum(1 for s in self.subtasks if s.state is ExecutionState.FINISHED)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def records_in(self) -> int:
        return sum(s.records_in for s in self.subtasks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def records_out(self) -> int:
        return sum(s.records_out for s in self.subtasks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def records_in_per_second(self) -> float:
        return sum(s.records_in_per_second for s in self.subtasks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def records_out_per_second(self) -> float:
        return sum(s.records_out_per_second for s in self.subtasks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def busy_ratio(self) -> float:
        """The mean of the subtasks' (what an autoscaler sizes the vertex by)."""
        return sum(s.busy_ratio for s in self.subtasks) / len(self.subtasks) if (
            self.subtasks) else 0.0


class KafkaPartitionInfo(Model):
    """A Kafka partition of a source: the next offset to read, and the records that waited
    for the latest epoch when it started (Flink's pendingRecords)."""

    source: str
    topic: str
    partition: int
    offset: int
    lag: int


class CompletedCheckpointInfo(Model):
    """The last completed checkpoint."""

    id: int
    #: When it was triggered.
    time: int
    duration_ms: int
    #: Bytes of operator state in it.
    state_size: int
    #: Where it is stored (None: in the driver's memory).
    path: str | None = None


class CheckpointStatistics(Model):
    """Flink's checkpoint statistics of a continuous job."""

    #: Epochs run so far (each a Spark job over the whole plan).
    epochs: int = 0
    completed: int = 0
    failed: int = 0
    #: Failed since the last completed one (more than tolerableFailedCheckpoints fail the job).
    consecutive_failures: int = 0
    #: Why the latest failed checkpoint failed.
    last_failure: str | None = None
    last_completed: CompletedCheckpointInfo | None = None
    #: Where the job started from (a checkpoint or savepoint path), if not from scratch.
    restored_from: str | None = None
    #: The last savepoints asked for, newest last.
    savepoints: tuple[SavepointEntry, ...] = ()
    #: Every Kafka partition the sources read, as of the latest epoch's start.
    kafka_partitions: tuple[KafkaPartitionInfo, ...] = ()

    def with_savepoint(self, savepoint: SavepointEntry) -> CheckpointStatistics:
        """These statistics with ``savepoint`` as the newest (the oldest beyond
        :data:`SAVEPOINT_HISTORY` dropped)."""
        return self.model_copy(
            update={"savepoints": (*self.savepoints, savepoint)[-SAVEPOINT_HISTORY:]})

    def savepoint(self, nonce: str) -> SavepointEntry | None:
        """The newest entry of the request ``nonce``, once the driver took (or failed) it."""
        return next((s for s in reversed(self.savepoints) if s.nonce == nonce), None)


class FailureInfo(Model):
    """The user function that failed the job."""

    operator: str
    task_name: str
    #: 0-based.
    subtask_index: int
    attempt_number: int
    exception_type: str
    message: str


class DriverStatusDocument(Message):
    """The execution status of a run: every ExecutionVertex's state, attempt and record
    counts, and a continuous job's checkpoints."""

    job_name: str
    #: This run (32 hex digits); also in its Spark job group.
    job_id: str
    job_status: JobStatus
    #: BATCH or STREAMING (AUTOMATIC resolved).
    runtime_mode: str
    #: As Spark reports them ("" before Spark started).
    spark_master: str = ""
    spark_application_id: str = ""
    start_time: int
    #: None while the job runs.
    end_time: int | None = None
    #: When this document was made.
    update_time: int
    #: When a continuous job's counters were last summed: its latest epoch's end (None: no
    #: epoch ended yet). Rates over these times are over whole epochs.
    metrics_time: int | None = None
    #: Why the job failed, one line.
    error: str | None = None
    failure: FailureInfo | None = None
    #: Spark ResourceProfile id -> slot sharing group, when executors are sized per group.
    resource_profiles: dict[int, str] = {}
    #: One per JobVertex, in topological order.
    vertices: tuple[VertexInfo, ...] = ()
    #: A continuous job's epochs and checkpoints (None: a run to the end of its input).
    checkpoints: CheckpointStatistics | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def duration_ms(self) -> int:
        """From the start to the end, or to this document while the job runs."""
        end = self.end_time if self.end_time is not None else self.update_time
        return end - self.start_time


def parse_status(document: object) -> DriverStatusDocument | None:
    """A driver's status document (decoded JSON), or None when it is not one this side reads:
    another protocol version, or malformed."""
    return parse_message(DriverStatusDocument, document)
