"""The checkpoint coordinator of a continuous job (Flink's CheckpointCoordinator, cut to epochs).

An epoch boundary is an aligned snapshot of the whole job (see
:mod:`~dataflow_engine.runtime.jobmaster.epochs`); the coordinator decides what becomes of it.
Every ``checkpointing.interval`` (rounded up to whole epochs, at least ``minPause`` after the
previous one) it makes the snapshot durable in the checkpoint storage, then publishes what the
sinks handed over since the previous checkpoint (two-phase commit). A checkpoint not written
within ``timeout`` (or whose write failed) is a failed one: nothing is published, and its
committables wait for the next; more than ``tolerableFailedCheckpoints`` failures in a row fail
the job, as in Flink. A savepoint asked for (:mod:`~dataflow_engine.runtime.checkpoint.
savepoints`) is taken the same way at the next epoch boundary, into a directory of its own; a
checkpoint asked for is the next epoch boundary's checkpoint, due or not (Flink's ``flink
checkpoint``).

It also chooses where a run starts (:meth:`CheckpointCoordinator.restore`): after a driver
failure the latest completed checkpoint, with its source positions, its operators' state, and
its committables published again (idempotently). Its statistics are the status document's
``checkpoints`` section.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import posixpath
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from typing import Any

from dataflow_engine.rest.savepoints import SavepointEntry, SavepointFailureReason
from dataflow_engine.rest.status import (
    CheckpointStatistics,
    CompletedCheckpointInfo,
    KafkaPartitionInfo,
)
from dataflow_engine.runtime.checkpoint.committer import (
    Committable,
    Committer,
    hidden_part_files,
    kept_with,
)
from dataflow_engine.runtime.checkpoint.restore import (
    StateMismatchError,
    VertexShape,
    plan_restores,
)
from dataflow_engine.runtime.checkpoint.savepoints import (
    UPGRADE_REFUSED,
    SavepointRequest,
    SavepointRequests,
)
from dataflow_engine.runtime.checkpoint.storage import (
    CheckpointStorage,
    CheckpointStorageError,
    CompletedCheckpoint,
    VertexState,
    load_checkpoint,
    new_savepoint_directory,
    resolve_storage,
    store_savepoint,
)
from dataflow_engine.spec.catalog import KafkaSinkArgs
from dataflow_engine.spec.model import CheckpointingSpec, duration_seconds

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RestoredJob:
    """Where a run starts: the epoch its first checkpoint follows, each vertex's subtask
    restores (none: from scratch) and each source's position, by uid."""

    epoch: int
    restores: dict[str, tuple[bytes, ...]]
    positions: dict[str, Any]


class CheckpointFailureThreshold(RuntimeError):
    """More checkpoints failed in a row than ``tolerableFailedCheckpoints`` allows (Flink's
    tolerable failure threshold): the job fails, to restart from its latest checkpoint."""


@dataclass(frozen=True)
class _Failed:
    """A checkpoint's or savepoint's write that did not complete."""

    reason: SavepointFailureReason
    message: str


class CheckpointCoordinator:
    """Checkpoints and savepoints of one run of a continuous job, and their statistics."""

    def __init__(self, checkpointing: CheckpointingSpec | None,
                 shapes: Mapping[str, VertexShape], sink_directories: Iterable[str],
                 exactly_once_kafka_sinks: list[tuple[str, KafkaSinkArgs]],
                 savepoints: SavepointRequests | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``shapes``: what a checkpoint records of each vertex, and a restore matches
        against; ``sink_directories``: the file sinks' directories, whose part files no
        checkpoint will publish are removed."""
        self.clock = clock
        spec = checkpointing or CheckpointingSpec(interval="0ms")
        #: Periodic checkpoints are configured (else only a job's end takes one).
        self.periodic = checkpointing is not None
        self.interval = duration_seconds(spec.interval)
        self.min_pause = duration_seconds(spec.min_pause)
        self.timeout = duration_seconds(spec.timeout)
        self.tolerable_failures = spec.tolerable_failed_checkpoints
        filesystem, directory = (resolve_storage(spec.storage, "spec.checkpointing.storage")
                                 if spec.storage else (None, None))
        self.storage = CheckpointStorage(directory, spec.retained, filesystem)
        self.savepoint_filesystem, self.savepoint_directory = (
            resolve_storage(spec.savepoint_storage, "spec.checkpointing.savepointStorage")
            if spec.savepoint_storage
            else (self.storage.filesystem,
                  posixpath.join(directory, "savepoints") if directory else None))
        self.shapes = dict(shapes)
        self.sink_directories = sorted(sink_directories)
        self.exactly_once_kafka_sinks = exactly_once_kafka_sinks
        self.savepoints = savepoints or SavepointRequests()
        self.savepoints.savepoint_storage = (self.savepoint_filesystem, self.savepoint_directory)
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="dataflow-checkpoint")
        #: Committables handed over since the last completed checkpoint.
        self.pending: list[Committable] = []
        self.committer = Committer()
        #: The deployment stamped on this run's checkpoints (see :meth:`restore`).
        self.deployment = ""
        self.stats = CheckpointStatistics()
        self._last_start: float | None = None
        self._last_end: float | None = None

    # -- restore ----------------------------------------------------------------------------

    def restore(self, restore: str = "latest", allow_non_restored_state: bool = False,
                deployment: str = "") -> RestoredJob:
        """Where the run starts: ``latest`` (the newest completed checkpoint in the storage,
        if any: a restarted driver), ``none`` (from scratch) or the directory of a checkpoint
        or savepoint. A driver of ``deployment`` whose storage's newest checkpoint that
        deployment took was restarted: it resumes from that checkpoint, whatever ``restore``
        says. Either way removes part files no checkpoint will publish, and numbers this
        run's checkpoints above every one in the storage, so that they are the latest, and
        above every checkpoint its exactly-once Kafka sinks published; a run that does not
        start from the latest records its start as one. Savepoints are taken from then on."""
        self.deployment = deployment
        latest = self.storage.latest() if restore == "latest" or deployment else None
        if restore == "latest" or (latest is not None and latest.deployment == deployment):
            restore, checkpoint = "latest", latest
        elif restore == "none":
            checkpoint = None
        else:
            filesystem, path = resolve_storage(restore, "the savepoint to restore")
            checkpoint = load_checkpoint(path, filesystem)
        epoch = max(self.storage.highest_id(),
                    self.committer.start(self.exactly_once_kafka_sinks))
        restores: dict[str, tuple[bytes, ...]] = {}
        positions: dict[str, Any] = {}
        if checkpoint is not None:
            restores = plan_restores(checkpoint, list(self.shapes.values()),
                                     allow_non_restored_state)
            positions = dict(checkpoint.sources)
            epoch = max(epoch, checkpoint.checkpoint_id)
            self.committer.commit(checkpoint.checkpoint_id, checkpoint.committables)
            self.stats = CheckpointStatistics(restored_from=checkpoint.path)
            _log.warning("restored from %s (checkpoint %d)", checkpoint.path,
                         checkpoint.checkpoint_id)
        if restore != "latest" and self.storage.directory is not None:
            # What this run starts from becomes the storage's latest checkpoint at once: a
            # driver restarted before this run's first checkpoint must not take an older
            # deployment's state. Its committables were just published.
            epoch += 1
            self.storage.store(CompletedCheckpoint(
                epoch, time.time(), dict(positions),
                dict(checkpoint.vertices) if checkpoint else {}, deployment=deployment))
        self._remove_unpublished(None)
        self.savepoints.accepting = True
        return RestoredJob(epoch, restores, positions)

    def _remove_unpublished(self, up_to_epoch: int | None) -> None:
        """Deletes hidden part files no checkpoint will publish: every one at a (re)start,
        those of epochs a completed checkpoint covers afterwards (failed attempts')."""
        for directory in self.sink_directories:
            for path in hidden_part_files(directory, up_to_epoch):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    # -- each epoch -------------------------------------------------------------------------

    def add_pending(self, committables: Iterable[Committable]) -> None:
        """What the sinks handed over in an epoch: published by the next checkpoint."""
        self.pending.extend(committables)

    def discard_pending(self) -> None:
        """A pipelined job restarts from its latest checkpoint: what its sinks handed over
        since then is written again."""
        self.pending.clear()

    def snapshot(self, epoch: int, positions: dict[str, Any],
                 subtask_states: Mapping[str, tuple[bytes, ...]]) -> CompletedCheckpoint:
        """The state at an epoch boundary (each source's position, each vertex's subtask
        snapshots): what a checkpoint or savepoint stores."""
        vertices = {vertex_id: VertexState(shape.parallelism, shape.max_parallelism,
                                           shape.operator_uids, subtask_states[vertex_id])
                    for vertex_id, shape in self.shapes.items()}
        return CompletedCheckpoint(epoch, time.time(), positions, vertices, tuple(self.pending),
                                   deployment=self.deployment)

    def epoch_finished(self, kafka_partitions: tuple[KafkaPartitionInfo, ...]) -> None:
        self.stats = self.stats.model_copy(update={"epochs": self.stats.epochs + 1,
                                                   "kafka_partitions": kafka_partitions})

    # -- checkpoints ------------------------------------------------------------------------

    def checkpoint_due(self, now: float) -> bool:
        """A periodic checkpoint is due at the epoch boundary of ``now``."""
        if not self.periodic:
            return False
        if self._last_start is None or self._last_end is None:
            return True
        return now - self._last_start >= self.interval and now - self._last_end >= self.min_pause

    def checkpoint(self, snapshot: CompletedCheckpoint, started: float, final: bool,
                   triggered: Sequence[SavepointRequest] = ()) -> None:
        """Makes the snapshot of the epoch that ``started`` durable, then publishes the sinks'
        committables; the job's ``final`` one has no timeout. ``triggered``: the checkpoint
        requests it answers (:meth:`admissible` ones), each recorded under its nonce with the
        checkpoint's path, or with why it failed."""
        begun = self.clock()
        stored = self._written(None if final else self.timeout, self.storage.store, snapshot)
        if isinstance(stored, _Failed):
            self.checkpoint_failed(snapshot.checkpoint_id, stored.reason, stored.message,
                                   triggered)
            return
        self._publish(stored)
        ended = self.clock()
        self._last_start, self._last_end = started, ended
        self.stats = self.stats.model_copy(update={
            "completed": self.stats.completed + 1, "consecutive_failures": 0,
            "last_completed": CompletedCheckpointInfo(
                id=stored.checkpoint_id, time=int(stored.timestamp * 1000),
                duration_ms=int((ended - begun) * 1000), state_size=stored.state_size,
                path=stored.path)})
        for request in triggered:
            _log.warning("checkpoint %d asked for (%r) written to %s", stored.checkpoint_id,
                         request.nonce, stored.path)
            self.stats = self.stats.with_savepoint(SavepointEntry(
                nonce=request.nonce, time=_now_millis(), checkpoint_id=stored.checkpoint_id,
                path=stored.path, kind="checkpoint"))

    def checkpoint_failed(self, checkpoint_id: int, reason: SavepointFailureReason,
                          message: str, triggered: Sequence[SavepointRequest] = ()) -> None:
        """A checkpoint that did not complete (its write failed or took too long, or its
        barriers did not align in time): nothing is published, the requests it answered
        fail, and more than ``tolerableFailedCheckpoints`` failures in a row fail the job."""
        for request in triggered:
            self.savepoint_failed(request, reason, message)
        failures = self.stats.consecutive_failures + 1
        self.stats = self.stats.model_copy(update={
            "failed": self.stats.failed + 1, "consecutive_failures": failures,
            "last_failure": f"checkpoint {checkpoint_id}: {message}"})
        _log.warning("checkpoint %d failed: %s", checkpoint_id, message)
        if failures > self.tolerable_failures:
            raise CheckpointFailureThreshold(
                f"checkpoint {checkpoint_id} failed ({message}); {failures} in a row, more "
                f"than tolerableFailedCheckpoints ({self.tolerable_failures})")

    def _written(self, timeout: float | None, write: Callable[..., CompletedCheckpoint],
                 *args: Any) -> CompletedCheckpoint | _Failed:
        """Runs a checkpoint's or savepoint's write in the writer thread: what it stored, or
        why it failed (the storage's error, or not done within ``timeout``)."""
        future = self._writer.submit(write, *args)
        try:
            return future.result(timeout=timeout)
        except FuturesTimeout:
            return _Failed(SavepointFailureReason.EXPIRED, f"not written within {timeout:g} s")
        except CheckpointStorageError as error:
            return _Failed(SavepointFailureReason.STORAGE_FAILED, str(error))

    def _publish(self, stored: CompletedCheckpoint) -> None:
        """A checkpoint or savepoint completed: its committables are published."""
        self.committer.commit(stored.checkpoint_id, stored.committables)
        del self.pending[:len(stored.committables)]
        self._remove_unpublished(stored.checkpoint_id)

    # -- savepoints -------------------------------------------------------------------------

    def admissible(self, request: SavepointRequest, snapshot: CompletedCheckpoint) -> bool:
        """Whether ``request`` can be taken of ``snapshot``, as far as can be known before
        writing it: a checkpoint needs a durable checkpoint storage, a savepoint a directory,
        and an upgrade's a plan that can restore the state. A refusal is recorded under the
        request's nonce. A drain is checked so before it ends the job's event time, as
        Flink's stop fails and the job runs on when the savepoint cannot be taken."""
        if request.kind == "checkpoint":
            if self.storage.directory is None:
                self.savepoint_failed(request, SavepointFailureReason.NO_DIRECTORY,
                                      "no durable checkpoint storage for the checkpoint "
                                      "asked for: set spec.checkpointing.storage")
                return False
            return True
        if self.savepoint_directory is None:
            self.savepoint_failed(request, SavepointFailureReason.NO_DIRECTORY,
                                  "no directory for savepoints: set "
                                  "spec.checkpointing.savepointStorage (or storage)")
            return False
        if request.upgrade_to is not None:
            try:
                plan_restores(snapshot, request.upgrade_to, request.allow_non_restored_state)
            except StateMismatchError as error:
                self.savepoint_failed(request, SavepointFailureReason.UPGRADE_REFUSED,
                                      f"{UPGRADE_REFUSED}, so the job keeps running: {error}")
                return False
        return True

    def savepoint(self, request: SavepointRequest, snapshot: CompletedCheckpoint) -> bool:
        """Takes a savepoint of ``snapshot``; False (why, recorded in the statistics) when it
        is not :meth:`admissible` or not written within the checkpoint timeout. A drain
        request's snapshot is the drained state (the caller ran the draining epoch).

        As in Flink, only a savepoint that stops the job commits the sinks' side effects; it
        is also stored as the storage's latest checkpoint, so that whatever resumes the job
        (a restarted driver, a last-state upgrade) starts after what was published. An
        intermediate savepoint publishes nothing: its committables wait for the next
        checkpoint, and a run restored from it publishes them (idempotently)."""
        directory = self.savepoint_directory
        if not self.admissible(request, snapshot) or directory is None:
            return False
        stored = self._written(self.timeout, self._store_savepoint, snapshot, directory,
                               request.stop)
        if isinstance(stored, _Failed):
            self.savepoint_failed(request, stored.reason, stored.message)
            return False
        if request.stop:
            self._publish(stored)
        _log.warning("savepoint %d written to %s", stored.checkpoint_id, stored.path)
        self.stats = self.stats.with_savepoint(SavepointEntry(
            nonce=request.nonce, time=_now_millis(), checkpoint_id=stored.checkpoint_id,
            path=stored.path, stop=request.stop, drained=request.drain))
        return True

    def _store_savepoint(self, snapshot: CompletedCheckpoint, directory: str,
                         stop: bool) -> CompletedCheckpoint:
        target = new_savepoint_directory(directory, snapshot.checkpoint_id)
        if stop:
            stored = store_savepoint(snapshot, target, self.savepoint_filesystem)
            if self.storage.directory is not None:
                self.storage.store(snapshot)
            return stored
        try:
            kept = kept_with(snapshot.committables, os.path.join(target, "pending"))
        except OSError as error:
            raise CheckpointStorageError(f"savepoint {snapshot.checkpoint_id}: its pending "
                                         f"part files cannot be kept: {error}") from error
        return store_savepoint(dataclasses.replace(snapshot, committables=kept), target,
                               self.savepoint_filesystem)

    def savepoint_failed(self, request: SavepointRequest, reason: SavepointFailureReason,
                         message: str) -> None:
        _log.warning("savepoint %r failed: %s", request.nonce, message)
        self.stats = self.stats.with_savepoint(SavepointEntry(
            nonce=request.nonce, time=_now_millis(), error=message, reason=reason,
            stop=request.stop, kind=request.kind))

    def close(self) -> None:
        """The run ended: savepoints still asked for fail, the writer and the sinks' producers
        are let go."""
        self.savepoints.accepting = False
        for request in self.savepoints.take():
            self.savepoint_failed(request, SavepointFailureReason.JOB_ENDED,
                                  "the job ended before the next epoch")
        self._writer.shutdown(wait=True)
        self.committer.close()


def _now_millis() -> int:
    return int(time.time() * 1000)
