"""The DataflowSnapshot resource: its spec and status models, and the CRD's schema source.

A DataflowSnapshot is one savepoint or checkpoint of a DataflowJob of its namespace, as
flink-kubernetes-operator's FlinkStateSnapshot: creating one takes it (or, with
``savepoint.alreadyExists``, imports a path taken elsewhere); its status says where it is and
how it went. The operator records every savepoint it takes itself (periodic, for an upgrade or
a suspend, for a savepointTriggerNonce) as one too, labelled with its trigger, so that
``kubectl get dfsnap`` is a job's whole history.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import Field, model_validator

from dataflow_engine.spec.model import API_GROUP, JOB_NAME_PATTERN, STORAGE_PATTERN, SpecModel
from dataflow_operator.status.model import Condition, StatusModel

SNAPSHOT_KIND = "DataflowSnapshot"
SNAPSHOT_PLURAL = "dataflowsnapshots"
#: Who took a snapshot the operator made: periodic, upgrade, suspend or manual
#: (savepointTriggerNonce). A snapshot without it was made by a user.
LABEL_TRIGGER = f"{API_GROUP}/snapshot-trigger"
PERIODIC, IMPORT, USER = "periodic", "import", "user"


class JobReference(SpecModel):
    """A DataflowJob of the snapshot's namespace."""

    name: str = Field(pattern=JOB_NAME_PATTERN, description="The DataflowJob's name.")


class SavepointSnapshotSpec(SpecModel):
    """A savepoint: taken of the running job, or imported from a path taken elsewhere."""

    already_exists: bool = Field(
        default=False, description="The savepoint exists at path already (taken by another "
        "job, another cluster, or `dataflow savepoint`): it is imported, not taken.")
    path: str | None = Field(
        default=None, min_length=1, max_length=1024, pattern=STORAGE_PATTERN,
        description="The savepoint's directory; only with alreadyExists (a savepoint taken "
        "here goes where the job's savepointStorage says).")
    dispose_on_delete: bool | None = Field(
        default=None, description="Deleting this DataflowSnapshot deletes the savepoint's "
        "files, through the job's running driver and only under the job's savepoint "
        "directory, never one the job would restore from; otherwise they are kept (an Event "
        "says why). Default: true for a savepoint taken here, false for an imported one.")

    @property
    def disposes(self) -> bool:
        if self.dispose_on_delete is not None:
            return self.dispose_on_delete
        return not self.already_exists

    @model_validator(mode="after")
    def _path_for_an_import(self) -> SavepointSnapshotSpec:
        if self.already_exists and self.path is None:
            raise ValueError("alreadyExists imports a savepoint: give its path")
        if self.path is not None and not self.already_exists:
            raise ValueError("a savepoint taken here is written to the job's savepointStorage; "
                             "path is only for alreadyExists")
        return self


class CheckpointSnapshotSpec(SpecModel):
    """A checkpoint taken on request, kept (and deleted) as the job's checkpoints are."""


class DataflowSnapshotSpec(SpecModel):
    """One savepoint or checkpoint of a DataflowJob of this namespace; immutable."""

    job_reference: JobReference = Field(
        description="The DataflowJob of this namespace the snapshot is of.")
    savepoint: SavepointSnapshotSpec | None = Field(
        default=None, description="A savepoint (give this or checkpoint).")
    checkpoint: CheckpointSnapshotSpec | None = Field(
        default=None, description="A checkpoint (give this or savepoint).")

    @model_validator(mode="after")
    def _one_kind(self) -> DataflowSnapshotSpec:
        if (self.savepoint is None) == (self.checkpoint is None):
            raise ValueError("give exactly one of savepoint and checkpoint")
        return self

    @property
    def kind(self) -> str:
        return "savepoint" if self.savepoint is not None else "checkpoint"


class SnapshotState(StrEnum):
    """flink-kubernetes-operator's snapshot states."""

    TRIGGER_PENDING = "TRIGGER_PENDING"
    IN_PROGRESS = "IN_PROGRESS"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    #: Not taken because its job does not exist or cannot take it (not running).
    ABANDONED = "ABANDONED"

    @property
    def final(self) -> bool:
        return self in (SnapshotState.COMPLETED, SnapshotState.FAILED, SnapshotState.ABANDONED)


class DataflowSnapshotStatus(StatusModel):
    state: SnapshotState = Field(default=SnapshotState.TRIGGER_PENDING,
                                 description="TRIGGER_PENDING, IN_PROGRESS, COMPLETED, FAILED "
                                 "or ABANDONED.")
    trigger_type: str | None = Field(
        default=None, description="user (this object), periodic, upgrade, suspend, manual "
        "(savepointTriggerNonce) or import (alreadyExists).")
    trigger_id: str | None = Field(default=None,
                                   description="The request's id, as the driver echoes it.")
    trigger_timestamp: str | None = Field(default=None,
                                          description="When it was asked for (RFC 3339).")
    result_timestamp: str | None = Field(
        default=None, description="When it completed or failed (RFC 3339).")
    path: str | None = Field(default=None, description="Where it is: what initialSavepoint "
                             "(snapshotRef) or `dataflow run --restore` take.")
    checkpoint_id: int | None = Field(default=None, description="Its checkpoint id.")
    error: str | None = Field(default=None, description="Why it failed or was abandoned.")
    conditions: list[Condition] = Field(
        default_factory=list, description="Completed: True once it completed, False with the "
        "reason once it failed or was abandoned.")
    observed_generation: int | None = None
