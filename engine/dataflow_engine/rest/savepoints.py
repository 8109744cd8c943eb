"""Savepoints asked of a running driver (``POST /savepoints``) and what it reports of them.

The operator (for a savepointTriggerNonce, an upgrade or a suspend) and ``dataflow savepoint``
send a :class:`SavepointTriggerRequest`; the driver takes the savepoint at its next epoch
boundary and lists it in its status document's ``checkpoints.savepoints`` as a
:class:`SavepointEntry` under the request's nonce: its path once written, or its ``error`` and
a :class:`SavepointFailureReason` that callers match instead of the error's wording. An
upgrade's request carries the new plan's vertices (:func:`upgrade_target`), so the driver
checks that the new plan can take its state before it stops.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import Field, StrictBool, StrictStr

from dataflow_engine.rest.messages import Message, Model, parse_message

if TYPE_CHECKING:
    from dataflow_engine.compiler.compile import CompiledJob


class SavepointFailureReason(StrEnum):
    """Why a savepoint failed (as Flink's CheckpointFailureReason). A new reason is a new
    protocol version: an older reader would not know it."""

    #: The job has no directory for savepoints (spec.checkpointing.savepointStorage or
    #: storage); asking again cannot help until the spec changes.
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


class SavepointTriggerResponse(Message):
    """The driver's answer to a request it took (202): the savepoint is waiting for the next
    epoch boundary; its outcome shows in the status document."""

    accepted: bool = True
    nonce: str
    stop: bool = False


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

    @property
    def completed(self) -> bool:
        return self.error is None and self.path is not None
