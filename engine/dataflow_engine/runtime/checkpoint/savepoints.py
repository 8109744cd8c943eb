"""Savepoints asked for from outside the run (Flink's ``flink savepoint`` and ``flink stop``).

The driver's ``POST /savepoints`` (:mod:`~dataflow_engine.runtime.jobmaster.rest_server`: the
operator's savepointTriggerNonce, or ``dataflow savepoint``) hands a request to the run; a
continuous job takes it at the next epoch boundary, where every subtask's state is consistent,
so a savepoint is an aligned checkpoint written to a directory of its own
(:mod:`~dataflow_engine.runtime.checkpoint.coordinator`). ``stop`` ends the job once the
savepoint completed (stop-with-savepoint: the job is FINISHED and can be resumed from it). With
``upgrade_to`` (the operator upgrading a job) the savepoint is taken only if that plan can
restore from it; otherwise the request fails and the job keeps running. ``drain`` (with
``stop``) first ends the job's event time, so that every window and event-time timer fires
(Flink's ``flink stop --drain``); ``kind="checkpoint"`` asks for a checkpoint instead, into the
checkpoint storage (Flink's ``flink checkpoint``). The same object lets the REST server dispose
of the run's savepoints (:meth:`SavepointRequests.dispose`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from dataflow_engine.rest.savepoints import SnapshotKind
from dataflow_engine.runtime.checkpoint.filesystems import CheckpointFileSystem
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.storage import dispose_savepoint

#: How a savepoint's error begins when the upgraded plan cannot take the job's state; its
#: reason (what callers match) is :attr:`~dataflow_engine.rest.SavepointFailureReason.
#: UPGRADE_REFUSED`.
UPGRADE_REFUSED = "the upgraded plan cannot restore this job's state"


class SavepointRefused(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class SavepointRequest:
    #: Who asked, echoed in the status (the operator's savepointTriggerNonce).
    nonce: str
    stop: bool = False
    #: The vertices of the plan that will restore from the savepoint, to check first.
    upgrade_to: tuple[VertexShape, ...] | None = None
    allow_non_restored_state: bool = False
    #: Before the stop's savepoint, one more epoch ends every vertex's input: the maximum
    #: watermark fires every window and event-time timer, and the savepoint publishes what
    #: the sinks got of it.
    drain: bool = False
    #: A ``checkpoint`` is taken at the next epoch boundary into the checkpoint storage,
    #: whether or not one is due; it never stops nor upgrades the job.
    kind: SnapshotKind = "savepoint"


#: Requests one epoch boundary takes at most; more are refused (each one is a write).
MAX_PENDING = 8


class SavepointRequests:
    """Requests waiting for the next epoch boundary; taken by the run's thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[SavepointRequest] = []
        #: Set once a continuous job runs: only a continuous job takes savepoints.
        self.accepting = False
        #: Where the run's savepoints are (their filesystem and directory, None: the job has
        #: none), set by its checkpoint coordinator; until then nothing is disposed of.
        self.savepoint_storage: tuple[CheckpointFileSystem, str | None] | None = None

    def request(self, request: SavepointRequest) -> None:
        with self._lock:
            if not self.accepting:
                raise SavepointRefused("only a running continuous (STREAMING, unbounded "
                                       "source) job takes savepoints")
            if len(self._pending) >= MAX_PENDING:
                raise SavepointRefused(f"{MAX_PENDING} savepoints are already waiting for "
                                       "the next epoch boundary")
            self._pending.append(request)

    @property
    def waiting(self) -> bool:
        with self._lock:
            return bool(self._pending)

    @property
    def stopping(self) -> bool:
        """A waiting request stops the job (with a savepoint, not a drain): its sources read
        nothing after the savepoint's barrier (Flink's synchronous stop-with-savepoint)."""
        with self._lock:
            return any(request.stop and not request.drain for request in self._pending)

    def take(self) -> list[SavepointRequest]:
        with self._lock:
            taken, self._pending = self._pending, []
            return taken

    def dispose(self, path: str) -> bool:
        """Deletes one of the run's savepoints (:func:`~dataflow_engine.runtime.checkpoint.
        storage.dispose_savepoint`): False when it was already gone."""
        storage = self.savepoint_storage
        if storage is None:
            raise SavepointRefused("only a continuous (STREAMING, unbounded source) job's "
                                   "driver disposes of savepoints, once its run started")
        filesystem, directory = storage
        return dispose_savepoint(path, directory, filesystem)
