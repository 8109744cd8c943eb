"""Continuous execution: a STREAMING job with an unbounded (or rate-limited) source runs as a
sequence of *epochs* on Spark.

Spark runs jobs, not long-lived tasks, so a continuous job is cut in time rather than kept
running: every ``epochInterval`` the driver asks each source's enumerator for the input that
arrived since the last epoch, and runs the whole physical plan (operator chains, exchanges,
sinks) over it as one Spark job. Each subtask starts from the state its predecessor of the
previous epoch snapshotted (keyed state, timers, window contents, watermarks) and ends by
snapshotting its own; the snapshots travel back to the driver with the task results and out
again with the next epoch's tasks, so no executor has to survive or share a disk. An epoch is
therefore an aligned checkpoint of the whole job: records of an epoch never reach state twice,
and a failed Spark task is recomputed from the same input and the same starting state.

A vertex whose upstream sources have all ended ends its input in that epoch (the final
watermark, operators finish) and afterwards only hands its final watermark on, as Flink's
finished tasks do; the job ends when every source has.

Every ``checkpointing.interval`` (rounded up to whole epochs) the driver makes the last epoch's
snapshots durable in the checkpoint storage, then publishes what the sinks handed over since
the previous checkpoint (two-phase commit). After a driver failure the job resumes from the
latest completed checkpoint: its source positions, its operators' state, and its committables
published again (idempotently). A savepoint asked for (:mod:`~dataflow_engine.runtime.checkpoint.
savepoints`) is taken the same way at the next epoch boundary, into a directory of its own.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import posixpath
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FuturesTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dataflow_engine.compiler import CompiledJob
from dataflow_engine.operators import (
    DatagenArgs,
    KafkaSinkArgs,
    KafkaSourceArgs,
    TextArgs,
    kind_of,
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
from dataflow_engine.runtime.client.status import CheckpointStats, PartitionLag, SavepointStats
from dataflow_engine.runtime.operators.kafka import KafkaEnumerator
from dataflow_engine.runtime.operators.sources import (
    BoundedEnumerator,
    DatagenEnumerator,
    FileStreamEnumerator,
    SplitEnumerator,
)
from dataflow_engine.runtime.spark.physical_plan import PhysicalPlan
from dataflow_engine.runtime.tasks.descriptors import EpochInput, OperatorConfig
from dataflow_engine.runtime.tasks.stream_task import SubtaskEpochResult, SubtaskMetrics
from dataflow_engine.spec import CheckpointingSpec, OperatorType, duration_seconds

if TYPE_CHECKING:
    from pyspark import Accumulator, SparkContext
    from pyspark.resource import ResourceProfile

    from dataflow_engine.runtime.spark.metrics import TaskResults
    from dataflow_engine.runtime.spark.spark_job import SparkJob

_log = logging.getLogger(__name__)


@dataclass
class _Source:
    uid: str
    node_id: int
    vertex_id: str
    enumerator: SplitEnumerator


#: Snapshots above this size go to their subtask in a Spark broadcast, not in the task's
#: closure (which every subtask of the vertex receives).
_INLINE_SNAPSHOT_BYTES = 64 * 1024


class EpochListener(Protocol):
    """What the run's status hears of the epochs (the runner implements it)."""

    def epoch_started(self, job: SparkJob) -> None: ...

    def epoch_finished(self, metrics: dict[tuple[str, int], SubtaskMetrics],
                       collected: dict[str, list[Any]], stats: CheckpointStats) -> None: ...


class ContinuousExecution:
    """Runs a compiled continuous job epoch after epoch until its sources end or it is
    stopped."""

    def __init__(self, sc: SparkContext, compiled: CompiledJob, plan: PhysicalPlan,
                 results: Accumulator[TaskResults],
                 profiles: dict[str, ResourceProfile] | None, listener: EpochListener,
                 savepoints: SavepointRequests | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sc = sc
        #: The run's one task-results accumulator (PySpark never forgets one), emptied at the
        #: start of every epoch.
        self.results = results
        self.compiled = compiled
        self.plan = plan
        self.profiles = profiles
        self.listener = listener
        self.clock = clock
        spec = compiled.spec
        self.interval = duration_seconds(spec.epoch_interval)
        checkpointing = spec.checkpointing or CheckpointingSpec(interval="0ms")
        self.checkpointing = spec.checkpointing is not None
        self.checkpoint_interval = duration_seconds(checkpointing.interval)
        self.min_pause = duration_seconds(checkpointing.min_pause)
        self.timeout = duration_seconds(checkpointing.timeout)
        self.tolerable_failures = checkpointing.tolerable_failed_checkpoints
        filesystem, directory = (
            resolve_storage(checkpointing.storage, "spec.checkpointing.storage")
            if checkpointing.storage else (None, None))
        self.storage = CheckpointStorage(directory, checkpointing.retained, filesystem)
        self.savepoint_filesystem, self.savepoint_directory = (
            resolve_storage(checkpointing.savepoint_storage,
                            "spec.checkpointing.savepointStorage")
            if checkpointing.savepoint_storage
            else (self.storage.filesystem,
                  posixpath.join(directory, "savepoints") if directory else None))
        self.savepoints = savepoints or SavepointRequests()
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="dataflow-checkpoint")
        self.sources = self._sources()
        #: Vertex id -> the source vertices upstream of it (itself, for a source).
        self.upstream = _upstream_sources(plan, {s.vertex_id for s in self.sources})
        self.ended: set[str] = set()
        #: Vertex id -> each subtask's snapshot (or restore) the next epoch starts from.
        self.restores: dict[str, tuple[bytes, ...]] = {}
        #: Committables handed over since the last completed checkpoint.
        self.pending: list[Committable] = []
        self.committer = Committer()
        #: The deployment stamped on this run's checkpoints (see :meth:`restore`).
        self.deployment = ""
        self.epoch = 0
        self.stats = CheckpointStats()
        self._last_checkpoint_start: float | None = None
        self._last_checkpoint_end: float | None = None
        #: What a checkpoint records of each vertex, and a restore matches against.
        self.shapes = {vertex_id: VertexShape(vertex_id, vp.vertex.parallelism,
                                              vp.vertex.max_parallelism,
                                              tuple(op.uid for op in vp.descriptor.operators))
                       for vertex_id, vp in plan.vertices.items()}
        self.sink_directories = sorted({
            str(op.args["path"]) for op in _operators(plan, OperatorType.FILE)})

    def _sources(self) -> list[_Source]:
        sources = []
        for vertex_plan in self.plan.vertices.values():
            descriptor = vertex_plan.descriptor
            head = descriptor.operators[0]
            if not kind_of(head.operator_type).is_source:
                continue
            enumerator: SplitEnumerator
            if head.operator_type is OperatorType.DATAGEN:
                args = DatagenArgs.model_validate(head.args)
                enumerator = DatagenEnumerator(descriptor.parallelism, args.rows_per_second,
                                               args.number_of_rows)
            elif (head.operator_type is OperatorType.TEXT
                  and (text := TextArgs.model_validate(head.args)).monitor_interval):
                enumerator = FileStreamEnumerator(descriptor.parallelism, text.path,
                                                  duration_seconds(text.monitor_interval))
            elif head.operator_type is OperatorType.KAFKA:
                enumerator = KafkaEnumerator(descriptor.parallelism,
                                             KafkaSourceArgs.model_validate(head.args),
                                             head.name)
            else:
                enumerator = BoundedEnumerator(head.splits)
            sources.append(_Source(head.uid, head.node_id, descriptor.vertex_id, enumerator))
        return sources

    # -- restore ----------------------------------------------------------------------------

    def restore(self, restore: str = "latest", allow_non_restored_state: bool = False,
                deployment: str = "") -> None:
        """Resumes from ``restore``: ``latest`` (the newest completed checkpoint in the
        storage, if any: a restarted driver), ``none`` (from scratch) or the directory of a
        checkpoint or savepoint. A driver of ``deployment`` whose storage's newest checkpoint
        that deployment took was restarted: it resumes from that checkpoint, whatever
        ``restore`` says. Either way removes part files no checkpoint will publish, and
        numbers this run's checkpoints above every one in the storage, so that they are the
        latest, and above every checkpoint its exactly-once Kafka sinks published; a run that
        does not start from the latest records its start as one."""
        self.deployment = deployment
        latest = self.storage.latest() if restore == "latest" or deployment else None
        if restore == "latest" or (latest is not None and latest.deployment == deployment):
            restore, checkpoint = "latest", latest
        elif restore == "none":
            checkpoint = None
        else:
            filesystem, path = resolve_storage(restore, "the savepoint to restore")
            checkpoint = load_checkpoint(path, filesystem)
        self.epoch = max(self.storage.highest_id(),
                         self.committer.start(self._exactly_once_kafka_sinks()))
        if checkpoint is not None:
            self.restores = plan_restores(checkpoint, list(self.shapes.values()),
                                          allow_non_restored_state)
            for source in self.sources:
                if source.uid in checkpoint.sources:
                    source.enumerator.restore(checkpoint.sources[source.uid])
            self.epoch = max(self.epoch, checkpoint.checkpoint_id)
            self.committer.commit(checkpoint.checkpoint_id, checkpoint.committables)
            self.stats = CheckpointStats(restored_from=checkpoint.path)
            _log.warning("restored from %s (checkpoint %d)", checkpoint.path,
                         checkpoint.checkpoint_id)
        if restore != "latest" and self.storage.directory is not None:
            # What this run starts from becomes the storage's latest checkpoint at once: a
            # driver restarted before this run's first checkpoint must not take an older
            # deployment's state. Its committables were just published.
            self.epoch += 1
            self.storage.store(CompletedCheckpoint(
                self.epoch, time.time(), dict(checkpoint.sources) if checkpoint else {},
                dict(checkpoint.vertices) if checkpoint else {}, deployment=deployment))
        self._remove_unpublished(None)
        self.savepoints.accepting = True

    def _remove_unpublished(self, up_to_epoch: int | None) -> None:
        """Deletes hidden part files no checkpoint will publish: every one at a (re)start,
        those of epochs a completed checkpoint covers afterwards (failed attempts')."""
        for directory in self.sink_directories:
            for path in hidden_part_files(directory, up_to_epoch):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> bool:
        """Runs epochs until every source ended or a savepoint stopped the job (returns
        True: FINISHED), or ``stop`` is set (False: CANCELED)."""
        next_start = self.clock()
        try:
            while True:
                if stop.wait(max(0.0, next_start - self.clock())):
                    return False
                started = self.clock()
                self.epoch += 1
                splits = {source.node_id: source.enumerator.next_splits(started)
                          for source in self.sources}
                finished = {s.vertex_id for s in self.sources if s.enumerator.finished}
                ending = {vertex_id for vertex_id, sources in self.upstream.items()
                          if sources <= finished} - self.ended
                metrics, collected = self._run_epoch(splits, ending)
                self.ended |= ending
                end = len(finished) == len(self.sources)
                if end or (self.checkpointing and self._checkpoint_due(started)):
                    self._checkpoint(started, final=end)
                stopped = any([self._savepoint(request) and request.stop
                               for request in self.savepoints.take()])
                self.stats = dataclasses.replace(self.stats, epochs=self.stats.epochs + 1,
                                                 kafka_partitions=self._kafka_partitions())
                self.listener.epoch_finished(metrics, collected, self.stats)
                if end or stopped:
                    return True
                next_start = max(started + self.interval, self.clock())
        finally:
            self.savepoints.accepting = False
            for request in self.savepoints.take():
                self._savepoint_failed(request, "the job ended before the next epoch")
            self.close()

    def close(self) -> None:
        """Lets go of the checkpoint writer, the sinks' producers and the sources' clients."""
        self._writer.shutdown(wait=True)
        self.committer.close()
        for source in self.sources:
            source.enumerator.close()

    def _exactly_once_kafka_sinks(self) -> list[tuple[str, KafkaSinkArgs]]:
        sinks = [(op.name, KafkaSinkArgs.model_validate(op.args))
                 for op in _operators(self.plan, OperatorType.KAFKA_SINK)]
        return [(name, args) for name, args in sinks if args.delivery_guarantee == "exactly-once"]

    def _kafka_partitions(self) -> tuple[PartitionLag, ...]:
        return tuple(PartitionLag(source.enumerator.source, topic, partition,
                                  source.enumerator.positions.get((topic, partition), 0), lag)
                     for source in self.sources if isinstance(source.enumerator, KafkaEnumerator)
                     for (topic, partition), lag in sorted(source.enumerator.lag.items()))

    def _run_epoch(self, splits: dict[int, tuple[Any, ...]], ending: set[str]
                   ) -> tuple[dict[tuple[str, int], SubtaskMetrics], dict[str, list[Any]]]:
        from dataflow_engine.runtime.spark.spark_job import SparkJob

        self.results.value = {}
        broadcasts: list[Any] = []
        inputs = {}
        for vertex_id, vertex_plan in self.plan.vertices.items():
            head = vertex_plan.descriptor.operators[0]
            inputs[vertex_id] = EpochInput(
                self.epoch, self._shipped(self.restores.get(vertex_id, ()), broadcasts),
                {head.node_id: splits[head.node_id]} if head.node_id in splits else {},
                vertex_id in ending)
        job = SparkJob(self.sc, self.plan, self.results, self.profiles, inputs)
        self.listener.epoch_started(job)
        collected: dict[str, list[Any]] = {}
        try:
            for action in self.plan.actions:
                for name, records in job.run(action).items():
                    collected.setdefault(name, []).extend(records)
        finally:
            job.release()
            for broadcast in broadcasts:
                broadcast.destroy()
        reported = self.results.value
        metrics: dict[tuple[str, int], SubtaskMetrics] = {}
        for vertex_id, vertex_plan in self.plan.vertices.items():
            snapshots = []
            for index in range(vertex_plan.vertex.parallelism):
                result = reported.get((vertex_id, index))
                if not isinstance(result, SubtaskEpochResult):
                    raise RuntimeError(f"epoch {self.epoch}: subtask {index} of "
                                       f"{vertex_plan.vertex.name} reported no snapshot")
                snapshots.append(result.snapshot)
                self.pending.extend(result.committables)
                metrics[(vertex_id, index)] = result.metrics
            self.restores[vertex_id] = tuple(snapshots)
        return metrics, collected

    def _shipped(self, restores: tuple[bytes, ...], broadcasts: list[Any]) -> tuple[Any, ...]:
        """Small snapshots ride in the task closure; a large one goes to its own subtask
        only, as a broadcast (else every subtask would receive every subtask's state)."""
        shipped: list[Any] = []
        for data in restores:
            if len(data) > _INLINE_SNAPSHOT_BYTES:
                broadcasts.append(self.sc.broadcast(data))
                shipped.append(broadcasts[-1])
            else:
                shipped.append(data)
        return tuple(shipped)

    # -- checkpoints ------------------------------------------------------------------------

    def _checkpoint_due(self, now: float) -> bool:
        if self._last_checkpoint_start is None or self._last_checkpoint_end is None:
            return True
        return (now - self._last_checkpoint_start >= self.checkpoint_interval
                and now - self._last_checkpoint_end >= self.min_pause)

    def _checkpoint(self, started: float, final: bool) -> None:
        """Makes this epoch's snapshots durable, then publishes the sinks' committables.

        A checkpoint not written within ``timeout`` (or whose write failed) is a failed one:
        nothing is published, and its committables wait for the next; more than
        ``tolerableFailedCheckpoints`` failures in a row fail the job, as in Flink.
        """
        begun = self.clock()
        stored = self._written(None if final else self.timeout, self.storage.store,
                               self._snapshot())
        if isinstance(stored, str):
            failures = self.stats.consecutive_failures + 1
            self.stats = dataclasses.replace(self.stats, failed=self.stats.failed + 1,
                                             consecutive_failures=failures,
                                             last_failure=f"checkpoint {self.epoch}: {stored}")
            _log.warning("checkpoint %d failed: %s", self.epoch, stored)
            if failures > self.tolerable_failures:
                raise CheckpointStorageError(
                    f"checkpoint {self.epoch} failed ({stored}); {failures} in a row, more "
                    f"than tolerableFailedCheckpoints ({self.tolerable_failures})")
            return
        self._publish(stored)
        ended = self.clock()
        self._last_checkpoint_start, self._last_checkpoint_end = started, ended
        self.stats = dataclasses.replace(
            self.stats, completed=self.stats.completed + 1, consecutive_failures=0,
            last_id=stored.checkpoint_id, last_time=stored.timestamp,
            last_duration_ms=int((ended - begun) * 1000), last_size=stored.state_size,
            last_path=stored.path)

    def _written(self, timeout: float | None, write: Callable[..., CompletedCheckpoint],
                 *args: Any) -> CompletedCheckpoint | str:
        """Runs a checkpoint's or savepoint's write in the writer thread: what it stored, or
        why it failed (the storage's error, or not done within ``timeout``)."""
        future = self._writer.submit(write, *args)
        try:
            return future.result(timeout=timeout)
        except FuturesTimeout:
            return f"not written within {timeout:g} s"
        except CheckpointStorageError as error:
            return str(error)

    def _snapshot(self) -> CompletedCheckpoint:
        """The state at this epoch boundary: what a checkpoint or savepoint stores."""
        vertices = {vertex_id: VertexState(shape.parallelism, shape.max_parallelism,
                                           shape.operator_uids, self.restores[vertex_id])
                    for vertex_id, shape in self.shapes.items()}
        return CompletedCheckpoint(
            self.epoch, time.time(), {s.uid: s.enumerator.position() for s in self.sources},
            vertices, tuple(self.pending), deployment=self.deployment)

    def _publish(self, stored: CompletedCheckpoint) -> None:
        """A checkpoint or savepoint completed: its committables are published."""
        self.committer.commit(stored.checkpoint_id, stored.committables)
        del self.pending[:len(stored.committables)]
        self._remove_unpublished(self.epoch)

    def _savepoint(self, request: SavepointRequest) -> bool:
        """Takes a savepoint at this epoch boundary; False (why, recorded in the status) when
        there is no directory for it, the upgrade it is for cannot take its state, or it is
        not written within the checkpoint timeout.

        As in Flink, only a savepoint that stops the job commits the sinks' side effects; it
        is also stored as the storage's latest checkpoint, so that whatever resumes the job
        (a restarted driver, a last-state upgrade) starts after what was published. An
        intermediate savepoint publishes nothing: its committables wait for the next
        checkpoint, and a run restored from it publishes them (idempotently)."""
        directory = self.savepoint_directory
        if directory is None:
            self._savepoint_failed(request, "no directory for savepoints: set "
                                   "spec.checkpointing.savepointStorage (or storage)")
            return False
        snapshot = self._snapshot()
        if request.upgrade_to is not None:
            try:
                plan_restores(snapshot, request.upgrade_to, request.allow_non_restored_state)
            except StateMismatchError as error:
                self._savepoint_failed(request, f"{UPGRADE_REFUSED}, so the job keeps "
                                       f"running: {error}")
                return False
        stored = self._written(self.timeout, self._store_savepoint, snapshot, directory,
                               request.stop)
        if isinstance(stored, str):
            self._savepoint_failed(request, stored)
            return False
        if request.stop:
            self._publish(stored)
        _log.warning("savepoint %d written to %s", stored.checkpoint_id, stored.path)
        self.stats = self.stats.with_savepoint(SavepointStats(
            request.nonce, time.time(), stored.checkpoint_id, stored.path, stop=request.stop))
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

    def _savepoint_failed(self, request: SavepointRequest, reason: str) -> None:
        _log.warning("savepoint %r failed: %s", request.nonce, reason)
        self.stats = self.stats.with_savepoint(SavepointStats(
            request.nonce, time.time(), error=reason, stop=request.stop))


def _operators(plan: PhysicalPlan, operator_type: OperatorType) -> list[OperatorConfig]:
    """The plan's operators of one type, in every chain."""
    return [op for vertex_plan in plan.vertices.values()
            for op in vertex_plan.descriptor.operators if op.operator_type is operator_type]


def _upstream_sources(plan: PhysicalPlan, sources: set[str]) -> dict[str, frozenset[str]]:
    """Vertex id -> the source vertices it reads from, directly or not (topological order)."""
    upstream: dict[str, frozenset[str]] = {}
    for vertex_id, vertex_plan in plan.vertices.items():
        found: set[str] = {vertex_id} if vertex_id in sources else set()
        for edge in vertex_plan.vertex.inputs:
            found |= upstream[edge.source.producer.id]
        upstream[vertex_id] = frozenset(found)
    return upstream
