"""Savepoints asked of a running driver (``POST /savepoints``) and what it reports of them.

The operator (for a savepointTriggerNonce, an upgrade or a suspend) and ``dataflow savepoint``
send a :class:`SavepointTriggerRequest`; the driver takes the savepoint at its next epoch
boundary and lists it in its status document's ``checkpoints.savepoints`` as a
:class:`SavepointEntry` under the request's nonce: its path once written, or its ``error`` and
a :class:`SavepointFailureReason` that callers match instead of the error's wording. An
upgrade's request carries the new plan's vertices (:func:`upgrade_target`), so the driver
checks that the new plan can take its state before it stops. The same request asks for a
checkpoint (``kind``) or a drained stop (``drain``). ``POST /savepoints/dispose`` (a
:class:`SavepointDisposeRequest`) deletes a savepoint the caller no longer keeps.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Literal

from pydantic import Field, StrictBool, StrictStr, model_validator

from dataflow_engine.rest.messages import Message, Model, parse_message

if TYPE_CHECKING:
    from dataflow_engine.compiler.compile import CompiledJob


#: What a trigger request takes.
SnapshotKind = Literal["savepoint", "checkpoint"]


class SavepointFailureReason(StrEnum):
    """Why a savepoint failed (as Flink's CheckpointFailureReason). A new reason is a new
    protocol version: an older reader would not know it."""

    #: The job has no directory for savepoints (spec.checkpointing.savepointStorage or
    #: storage), or for a checkpoint asked for, no durable checkpoint storage
    #: (spec.checkpointing.storage); asking again cannot help until the spec changes.
    NO_DIRECTORY = "NO_DIRECTORY"
    #: The upgraded plan the request carried cannot restore the job's state (an operator's
    #: state without its uid, another maxParallelism): the job keeps running, and the same
    #: upgrade is refused again.
    UPGRADE_REFUSED = "UPGRADE_REFUSED"
    #: Not written within the checkpoint timeout.
    EXPIRED = "EXPIRED"
    #: The checkpoint storage failed to write it.
    STORAGE_FAILED = "STORAGE_FAILED"
    #: The job ended before its next epoch boundary.
    JOB_ENDED = "JOB_ENDED"


class UpgradeVertex(Model):
    """A JobVertex of the plan that will restore from the savepoint."""

    id: StrictStr
    parallelism: int = Field(ge=1)
    max_parallelism: int = Field(ge=1)
    operator_uids: tuple[StrictStr, ...]


class UpgradeTarget(Model):
    """The plan a savepoint is for: the driver takes the savepoint only if this plan can
    restore from it (Flink's ``--allowNonRestoredState`` included)."""

    vertices: tuple[UpgradeVertex, ...]
    allow_non_restored_state: StrictBool = False


def upgrade_target(compiled: CompiledJob, allow_non_restored_state: bool = False
                   ) -> UpgradeTarget:
    """The upgrade target of a compiled job: each JobVertex with its operators' uids."""
    return UpgradeTarget(
        vertices=tuple(UpgradeVertex(id=vertex.id, parallelism=vertex.parallelism,
                                     max_parallelism=vertex.max_parallelism,
                                     operator_uids=tuple(node.uid for node in vertex.operators))
                       for vertex in compiled.job_graph.vertices),
        allow_non_restored_state=allow_non_restored_state)


class SavepointTriggerRequest(Message):
    """``POST /savepoints``: take a savepoint at the next epoch boundary."""

    #: The request's id, echoed in the status document's savepoint entry (the operator's
    #: request id, or ``dataflow savepoint --nonce``).
    nonce: StrictStr = Field(min_length=1)
    #: Stop the job once the savepoint completed (stop-with-savepoint: it ends FINISHED).
    stop: StrictBool = False
    #: Take it only if this plan can restore from it (an upgrade).
    upgrade_to: UpgradeTarget | None = None
    #: Before a stop's savepoint, send the maximum watermark through the job, so that its
    #: windows and event-time timers fire and its sinks commit (Flink's ``stop --drain``).
    drain: StrictBool = False
    #: What to take: a savepoint (a directory of its own, kept until disposed of), or a
    #: checkpoint (the next epoch's, in the checkpoint storage, retained as checkpoints are).
    kind: SnapshotKind = Field(default="savepoint")

    @model_validator(mode="after")
    def _consistent(self) -> SavepointTriggerRequest:
        if self.drain and not self.stop:
            raise ValueError("drain ends the job's event time: only a stop drains")
        if self.kind == "checkpoint" and (self.stop or self.upgrade_to is not None):
            raise ValueError("a checkpoint neither stops nor upgrades the job: ask for a "
                             "savepoint")
        return self


class SavepointTriggerResponse(Message):
    """The driver's answer to a request it took (202): the savepoint is waiting for the next
    epoch boundary; its outcome shows in the status document."""

    accepted: bool = True
    nonce: str
    stop: bool = False
    #: Echoed, so that a caller can tell a driver that drains (or takes checkpoints) from an
    #: older one that ignored the field (it answers the defaults).
    drain: bool = False
    kind: SnapshotKind = "savepoint"


def parse_savepoint_response(document: object) -> SavepointTriggerResponse | None:
    """A driver's answer to ``POST /savepoints``; None when it is not one this side reads."""
    return parse_message(SavepointTriggerResponse, document)


class SavepointEntry(Model):
    """One savepoint asked for, in the status document: completed (with its path) or failed
    (with its error and reason)."""

    nonce: str
    #: When it completed or failed (epoch milliseconds).
    time: int
    checkpoint_id: int | None = Field(default=None, alias="id")
    path: str | None = None
    #: Why it failed, for people; :attr:`reason` is for programs.
    error: str | None = None
    reason: SavepointFailureReason | None = None
    #: Taken to stop the job (stop-with-savepoint).
    stop: bool = False
    #: What was asked for: a savepoint, or a checkpoint (its path is in the checkpoint
    #: storage, and retention deletes it as any other).
    kind: SnapshotKind = "savepoint"
    #: The job's event time was ended before it was taken (``stop --drain``): every window
    #: and event-time timer fired, and the sinks committed what they emitted.
    drained: bool = False

    @property
    def completed(self) -> bool:
        return self.error is None and self.path is not None


class SavepointDisposeRequest(Message):
    """``POST /savepoints/dispose``: delete a savepoint of this job (Flink's ``flink savepoint
    --dispose``), one its caller no longer keeps. Only a ``savepoint-*`` directory directly
    under the job's savepoint directory is deleted; anything else is refused."""

    #: The savepoint's directory, as its :class:`SavepointEntry` gave it.
    path: StrictStr = Field(min_length=1)


class SavepointDisposeResponse(Message):
    """The driver's answer (200): ``disposed`` is False when nothing was there any more, so
    disposing of a savepoint twice is no error."""

    path: str
    disposed: bool


def parse_dispose_response(document: object) -> SavepointDisposeResponse | None:
    """A driver's answer to ``POST /savepoints/dispose``; None when it is not one this side
    reads."""
    return parse_message(SavepointDisposeResponse, document)
