"""The DataflowJob ``status``: the model the reconciler writes and the CRD's status schema.

Per-subtask detail uses a compact encoding (see :mod:`dataflow_operator.status.subtask_encoding`) so
that 10 JobVertices at parallelism 1,000 keep the whole object far below etcd's limits.
"""

from __future__ import annotations

import uuid
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from dataflow_engine.graph.states import ExecutionState, JobStatus


class SubtaskDetail(StrEnum):
    """How much per-subtask detail ``status.vertices[]`` carries."""

    #: Every subtask's state, attempt and record counts.
    FULL = "Full"
    #: Every subtask's state; attempts and per-subtask records left out.
    STATES = "States"
    #: Subtasks per state only.
    COUNTS = "Counts"
    #: No vertices at all (nor the plan's JobVertices): only beyond the operator's default
    #: bounds on a job's size.
    NONE = "None"


class StatusModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class Condition(StatusModel):
    """A Kubernetes condition (metav1.Condition)."""

    type: str = Field(description="A job's Compiled, Provisioned, Running, Succeeded, Failed, "
                      "Upgraded, RolledBack or Checkpointing; a snapshot's Completed.")
    status: str = Field(description="True, False or Unknown.")
    reason: str = Field(description="A CamelCase reason for the last transition.")
    message: str = Field(default="", description="What happened, for humans.")
    last_transition_time: str = Field(description="When status last changed (RFC 3339).")
    observed_generation: int = Field(description="The spec generation this condition is about.")


class PlannedVertex(StatusModel):
    id: str = Field(description="JobVertex id (stable, derived from operator uids).")
    name: str = Field(description="Chain name, e.g. 'Keyed Aggregation -> Filter'.")
    operators: list[str] = Field(description="Chained operators, head first.")
    parallelism: int
    slot_sharing_group: str


class PlannedExecutors(StatusModel):
    slot_sharing_group: str
    count: int = Field(description="Executors of this group.")
    slots_per_executor: int
    cpu: str = Field(description="CPU of one executor.")
    memory: str = Field(description="Memory of one executor.")


class PlanStatus(StatusModel):
    """The compiled plan of the observed generation."""

    hash: str = Field(description="Digest of the plan; a changed plan means a redeploy.")
    job_vertices: list[PlannedVertex]
    slots: dict[str, int] = Field(description="Slots per slot sharing group.")
    total_slots: int
    executors: list[PlannedExecutors]
    num_execution_vertices: int


class VertexStatus(StatusModel):
    """One JobVertex and its subtasks (ExecutionVertices)."""

    id: str
    name: str
    parallelism: int
    states: dict[str, int] = Field(description="Subtasks per ExecutionState name.")
    records_in: int = Field(default=0, description="Records in, summed over subtasks.")
    records_out: int = Field(default=0, description="Records out, summed over subtasks.")
    records_in_per_second: float | None = Field(
        default=None, description="A continuous job's records in per second over its last "
        "epochs, summed over subtasks.")
    records_out_per_second: float | None = Field(
        default=None, description="A continuous job's records out per second over its last "
        "epochs, summed over subtasks.")
    busy_ratio: float | None = Field(
        default=None, description="A continuous job's busy time per second of wall time over "
        "its last epochs, the mean of its subtasks' (0 to 1).")
    backlog: int | None = Field(
        default=None, description="A Kafka source's records waiting in its partitions when "
        "the latest epoch started.")
    subtasks: str = Field(
        default="",
        description=(
            "Every subtask's state, one letter each in subtask order: c=CREATED, s=SCHEDULED, "
            "d=DEPLOYING, i=INITIALIZING, R=RUNNING, F=FINISHED, x=CANCELING, X=CANCELED, "
            "E=FAILED, r=RECONCILING."
        ),
    )
    attempts: str = Field(
        default="",
        description="Attempt number per subtask, run-length encoded: '0*998,1,0'.",
    )
    subtask_records_in: str = Field(
        default="", description="Records in per subtask: base-36, run-length encoded."
    )
    subtask_records_out: str = Field(
        default="", description="Records out per subtask: base-36, run-length encoded."
    )


class DriverStatus(StatusModel):
    pod: str | None = Field(default=None, description="Driver pod (Kubernetes backend).")
    pid: int | None = Field(default=None, description="Driver process (local backend).")
    status_url: str | None = Field(default=None, description="Where the runner's status is.")
    spark_ui: str | None = Field(default=None, description="Spark UI address in the cluster.")
    spark_ui_forward: str | None = Field(
        default=None, description="The command that makes the Spark UI reachable from your "
        "machine, at http://localhost:4040.")
    logs: str | None = Field(
        default=None, description="Where the driver's log is: a kubectl command (Kubernetes "
        "backend) or a file on the operator's machine (local backend).")


class CompletedCheckpointStatus(StatusModel):
    id: int = Field(description="Checkpoint id (the epoch it was taken after).")
    time: str = Field(description="When it was triggered (RFC 3339).")
    duration_ms: int | None = Field(default=None, description="How long writing it took.")
    state_size: int | None = Field(default=None, description="Bytes of operator state in it.")
    path: str | None = Field(default=None, description="Where it is stored (unset: kept in "
                             "the driver's memory only).")


#: Kafka partitions status.checkpoints lists at most (those with the most lag).
KAFKA_PARTITIONS_SHOWN = 100


class KafkaPartitionStatus(StatusModel):
    source: str = Field(description="The kafka source operator.")
    topic: str
    partition: int
    offset: int = Field(description="The next offset the source reads.")
    lag: int = Field(description="Records that waited when the latest epoch started "
                     "(Flink's pendingRecords).")


class CheckpointingStatus(StatusModel):
    """A continuous job's epochs and checkpoints, as its current driver reports them."""

    epochs: int = Field(default=0, description="Epochs run by the current driver.")
    completed: int = Field(default=0, description="Checkpoints completed by the current driver.")
    failed: int = Field(default=0, description="Checkpoints that failed.")
    consecutive_failures: int = Field(
        default=0, description="Checkpoints failed since the last completed one (more than "
        "checkpointing.tolerableFailedCheckpoints fail the job).")
    last_failure: str | None = Field(default=None,
                                     description="Why the latest failed checkpoint failed.")
    last_completed: CompletedCheckpointStatus | None = Field(
        default=None, description="The latest completed checkpoint.")
    restored_from: str | None = Field(
        default=None, description="The checkpoint the current driver resumed from.")
    kafka_lag: int | None = Field(
        default=None, description="Records that waited in all Kafka partitions when the "
        "latest epoch started.")
    kafka_partitions: list[KafkaPartitionStatus] = Field(
        default_factory=list, description=f"Per Kafka partition: the next offset and its lag "
        f"(at most {KAFKA_PARTITIONS_SHOWN}, the most lagging first).")


class SavepointInfo(StatusModel):
    """A completed savepoint (flink-kubernetes-operator's savepointInfo entries)."""

    path: str = Field(description="The savepoint's directory (what initialSavepointPath or "
                      "`dataflow run --restore` take).")
    time: str = Field(description="When it completed (RFC 3339).")
    checkpoint_id: int | None = Field(default=None, description="Its checkpoint id.")
    trigger_type: str = Field(description="manual (savepointTriggerNonce), periodic, upgrade, "
                              "suspend or user (a DataflowSnapshot).")
    trigger_nonce: int | None = Field(default=None,
                                      description="The savepointTriggerNonce of a manual one.")
    snapshot: str | None = Field(default=None,
                                 description="The DataflowSnapshot that records it.")


class PendingSavepoint(StatusModel):
    """A savepoint asked of the driver (by savepointTriggerNonce) and not yet reported; one
    for an upgrade or a suspend is waited for while the request is handled."""

    request: str = Field(description="The request's id, as the driver echoes it.")
    trigger_type: str = Field(description="What asked for it: manual (savepointTriggerNonce).")
    trigger_nonce: int | None = None
    since: str = Field(description="When it was asked for (RFC 3339).")


#: Savepoints status.savepoints.history keeps, newest last.
SAVEPOINT_HISTORY = 10


class SavepointsStatus(StatusModel):
    last: SavepointInfo | None = Field(default=None, description="The newest savepoint.")
    history: list[SavepointInfo] = Field(
        default_factory=list, description=f"The last {SAVEPOINT_HISTORY}, newest last.")
    pending: PendingSavepoint | None = Field(default=None,
                                             description="A savepoint being taken.")
    last_trigger_nonce: int | None = Field(
        default=None, description="The savepointTriggerNonce last acted on.")
    last_error: str | None = Field(default=None,
                                   description="Why the last savepoint asked for failed.")
    periodic_triggered: str | None = Field(
        default=None, description="When the last periodic savepoint was asked for (RFC 3339).")
    periodic_checkpoint_triggered: str | None = Field(
        default=None, description="When the last periodic checkpoint was asked for (RFC 3339).")


class DeploymentStatus(StatusModel):
    """The driver deployment the operator started last, and how it ended if the operator
    stopped it with a savepoint: what a restart, an upgrade or a resume starts from."""

    id: str = Field(description="Stamped on its checkpoints (`dataflow run --deployment`): a "
                    "restarted driver resumes from its own newest checkpoint.")
    generation: int = Field(description="The generation it runs.")
    restore_from: str = Field(description="Where it started: none (from scratch), latest "
                              "(the storage's newest checkpoint) or a savepoint's path.")
    stopped_with_savepoint: str | None = Field(
        default=None, description="The savepoint the operator stopped it with (to upgrade "
        "or suspend it): its state is there, and no driver of it runs any more.")
    since: str | None = Field(default=None,
                              description="When the operator started it (RFC 3339).")

    @classmethod
    def new(cls, generation: int, restore_from: str, since: str) -> DeploymentStatus:
        """A new deployment (its own checkpoint lineage) starting from ``restore_from``."""
        return cls(id=f"{generation}-{uuid.uuid4().hex[:8]}", generation=generation,
                   restore_from=restore_from, since=since)


class ScaledVertexStatus(StatusModel):
    """One JobVertex in an autoscaler decision, with what explains it."""

    vertex: str = Field(description="The JobVertex id.")
    parallelism: int = Field(description="Its parallelism when decided.")
    new_parallelism: int
    target_rate: float = Field(description="Records per second it must process: what its "
                               "sources take in and catch up, through the graph.")
    true_rate: float | None = Field(default=None, description="Records per second one subtask "
                                    "processes while busy (unset: no busy time measured).")
    busy_ratio: float = Field(description="Busy time per second, mean of its subtasks.")
    backlog: float | None = Field(default=None, description="A source's records waiting.")
    reason: str


class ScalingDecisionStatus(StatusModel):
    time: str = Field(description="When it was decided (RFC 3339).")
    applied: list[ScaledVertexStatus] = Field(
        default_factory=list, description="Changes made (recommended only, in advisory mode).")
    pending: list[ScaledVertexStatus] = Field(
        default_factory=list, description="Scale-downs waiting for the scale-down delay.")
    advisory: bool = Field(default=False, description="Recommended, not applied.")
    omitted: int = Field(default=0, description="Changes and pending scale-downs beyond "
                         "those listed (the status keeps at most 50 of each).")


class MetricSampleStatus(StatusModel):
    time: float = Field(description="Epoch seconds.")
    vertices: dict[str, list[float | None]] = Field(
        description="By JobVertex id, its cumulative counters: records in, records out, busy "
        "ms (summed over subtasks), and for a source the records that reached its partitions "
        "and its backlog (else null).")


class AutoscalerStatus(StatusModel):
    """What the autoscaler decided and what it keeps between decisions (bounded, and kept
    across operator restarts)."""

    overrides: dict[str, int] = Field(
        default_factory=dict, description="Parallelism it set, by JobVertex id: the job runs "
        "with these as spec.parallelismOverrides (none in advisory mode).")
    waiting: str | None = Field(default=None, description="Why it cannot decide now.")
    decisions: list[ScalingDecisionStatus] = Field(
        default_factory=list, description="The latest decisions, oldest first.")
    samples: list[MetricSampleStatus] = Field(
        default_factory=list, description="The metric samples of its current window.")
    pending_since: dict[str, float] = Field(
        default_factory=dict, description="Scale-downs recommended since (epoch seconds), "
        "by JobVertex id.")
    pending_from: dict[str, int] = Field(
        default_factory=dict, description="The parallelism each pending scale-down was "
        "recommended from.")


class DataflowJobStatus(StatusModel):
    observed_generation: int | None = Field(
        default=None, description="The generation the operator last acted on.")
    job_status: JobStatus | None = Field(default=None, description="Flink's JobStatus name.")
    conditions: list[Condition] = Field(default_factory=list)
    plan: PlanStatus | None = None
    deployed_generation: int | None = Field(
        default=None, description="The generation whose plan is running.")
    vertices: list[VertexStatus] = Field(default_factory=list)
    subtask_detail: SubtaskDetail = Field(
        default=SubtaskDetail.FULL,
        description=(
            "How much per-subtask detail vertices[] carries: Full (every subtask's state, "
            "attempt and records), States (every subtask's state only), Counts (subtasks per "
            "state and records per vertex only) or None (neither vertices[] nor "
            "plan.jobVertices; `dataflow compile` shows the plan). Detail is left out only "
            "when the status would exceed the operator's status byte budget."))
    subtasks: str | None = Field(default=None, description="Running/total subtasks, e.g. 3/5.")
    restarts: int = Field(default=0, description="Driver restarts of this deployment.")
    start_time: str | None = None
    end_time: str | None = None
    driver: DriverStatus | None = None
    error: str | None = Field(default=None, description="The failure, if the job failed.")
    checkpoints: CheckpointingStatus | None = Field(
        default=None, description="Epochs and checkpoints of a continuous (streaming) job.")
    savepoints: SavepointsStatus = Field(
        default_factory=SavepointsStatus,
        description="Savepoints of a continuous job: the newest, the history, one pending.")
    deployment: DeploymentStatus | None = Field(
        default=None, description="The driver deployment started last.")
    last_stable_spec: str | None = Field(
        default=None, description="The spec (JSON) of the last deployment that was healthy: "
        "RUNNING, every subtask running, and a checkpoint completed if it checkpoints. A "
        "rollback (spec.job.upgrade.rollbackTimeout) goes back to it.")
    last_stable_generation: int | None = Field(
        default=None, description="The generation of lastStableSpec.")
    last_stable_deployment: str | None = Field(
        default=None, description="The deployment (its id) that ran lastStableSpec: an "
        "autoscaler's rescale deploys the same generation anew, and is rolled back as an "
        "upgrade is.")
    autoscaler: AutoscalerStatus | None = Field(
        default=None, description="The autoscaler's decisions (spec.job.autoscaler).")


#: One letter per ExecutionState in ``VertexStatus.subtasks``.
STATE_LETTERS: dict[ExecutionState, str] = {
    ExecutionState.CREATED: "c",
    ExecutionState.SCHEDULED: "s",
    ExecutionState.DEPLOYING: "d",
    ExecutionState.INITIALIZING: "i",
    ExecutionState.RUNNING: "R",
    ExecutionState.FINISHED: "F",
    ExecutionState.CANCELING: "x",
    ExecutionState.CANCELED: "X",
    ExecutionState.FAILED: "E",
    ExecutionState.RECONCILING: "r",
}
