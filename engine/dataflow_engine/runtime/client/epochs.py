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

Every ``checkpointing.interval`` (rounded up to whole epochs) the driver makes the last epoch's
snapshots durable in the checkpoint storage, then publishes what the sinks handed over since
the previous checkpoint (two-phase commit). After a driver failure the job resumes from the
latest completed checkpoint: its source positions, its operators' state, and its committables
published again (idempotently).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dataflow_engine.compiler import CompiledJob
from dataflow_engine.operators import kind_of
from dataflow_engine.runtime.checkpoint.committer import (
    Committable,
    commit_all,
    hidden_part_files,
)
from dataflow_engine.runtime.checkpoint.restore import VertexShape, plan_restores
from dataflow_engine.runtime.checkpoint.storage import (
    CheckpointStorage,
    CompletedCheckpoint,
    VertexState,
    storage_directory,
)
from dataflow_engine.runtime.client.status import CheckpointStats
from dataflow_engine.runtime.operators.sources import (
    BoundedEnumerator,
    DatagenEnumerator,
    SplitEnumerator,
)
from dataflow_engine.runtime.spark.physical_plan import PhysicalPlan
from dataflow_engine.runtime.tasks.descriptors import EpochInput
from dataflow_engine.runtime.tasks.stream_task import SubtaskEpochResult, SubtaskMetrics
from dataflow_engine.spec import OperatorType, duration_seconds

if TYPE_CHECKING:
    from pyspark import SparkContext
    from pyspark.resource import ResourceProfile

    from dataflow_engine.runtime.spark.spark_job import SparkJob

_log = logging.getLogger(__name__)


@dataclass
class _Source:
    uid: str
    node_id: int
    vertex_id: str
    enumerator: SplitEnumerator


class EpochListener(Protocol):
    """What the run's status hears of the epochs (the runner implements it)."""

    def epoch_started(self, job: SparkJob) -> None: ...

    def epoch_finished(self, metrics: dict[tuple[str, int], SubtaskMetrics],
                       collected: dict[str, list[Any]], stats: CheckpointStats) -> None: ...


class ContinuousExecution:
    """Runs a compiled continuous job epoch after epoch until its sources end or it is
    stopped."""

    def __init__(self, sc: SparkContext, compiled: CompiledJob, plan: PhysicalPlan,
                 profiles: dict[str, ResourceProfile] | None, listener: EpochListener,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sc = sc
        self.compiled = compiled
        self.plan = plan
        self.profiles = profiles
        self.listener = listener
        self.clock = clock
        spec = compiled.spec
        self.interval = duration_seconds(spec.epoch_interval)
        checkpointing = spec.checkpointing
        self.checkpoint_interval = (duration_seconds(checkpointing.interval)
                                    if checkpointing is not None else None)
        self.min_pause = (duration_seconds(checkpointing.min_pause)
                          if checkpointing is not None else 0.0)
        directory = (storage_directory(checkpointing.storage)
                     if checkpointing is not None and checkpointing.storage else None)
        self.storage = CheckpointStorage(directory,
                                         checkpointing.retained if checkpointing else 1)
        self.sources = self._sources()
        #: Vertex id -> each subtask's snapshot (or restore) the next epoch starts from.
        self.restores: dict[str, tuple[bytes | None, ...]] = {}
        #: Committables handed over since the last completed checkpoint.
        self.pending: list[Committable] = []
        self.epoch = 0
        self.stats = CheckpointStats()
        self._last_checkpoint_start: float | None = None
        self._last_checkpoint_end: float | None = None

    def _sources(self) -> list[_Source]:
        sources = []
        for vertex_plan in self.plan.vertices.values():
            descriptor = vertex_plan.descriptor
            head = descriptor.operators[0]
            if not kind_of(head.operator_type).is_source:
                continue
            enumerator: SplitEnumerator
            if head.operator_type is OperatorType.DATAGEN:
                limit = head.args.get("numberOfRows")
                enumerator = DatagenEnumerator(descriptor.parallelism,
                                               float(head.args.get("rowsPerSecond", 1000.0)),
                                               int(limit) if limit is not None else None)
            else:
                enumerator = BoundedEnumerator(head.splits)
            sources.append(_Source(head.uid, head.node_id, descriptor.vertex_id, enumerator))
        return sources

    # -- restore ----------------------------------------------------------------------------

    def restore(self) -> None:
        """Resumes from the latest completed checkpoint, if the storage has one; either way
        removes part files no checkpoint will publish."""
        checkpoint = self.storage.latest()
        if checkpoint is not None:
            shapes = [VertexShape(vp.vertex.id, vp.vertex.parallelism,
                                  vp.vertex.max_parallelism,
                                  tuple(op.uid for op in vp.descriptor.operators))
                      for vp in self.plan.vertices.values()]
            self.restores = dict(plan_restores(checkpoint, shapes))
            for source in self.sources:
                if source.uid in checkpoint.sources:
                    source.enumerator.restore(checkpoint.sources[source.uid])
            self.epoch = checkpoint.checkpoint_id
            commit_all(checkpoint.committables)
            self.stats = CheckpointStats(restored_from=checkpoint.path)
            _log.warning("restored from checkpoint %s (epoch %d)", checkpoint.path,
                         checkpoint.checkpoint_id)
        for path in self._abandoned_part_files():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def _abandoned_part_files(self) -> list[str]:
        directories = {str(op.args["path"]) for vp in self.plan.vertices.values()
                       for op in vp.descriptor.operators if op.operator_type is OperatorType.FILE}
        return [path for directory in sorted(directories)
                for path in hidden_part_files(directory)]

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> bool:
        """Runs epochs until every source ended (returns True) or ``stop`` is set (False)."""
        next_start = self.clock()
        while True:
            if stop.wait(max(0.0, next_start - self.clock())):
                return False
            started = self.clock()
            self.epoch += 1
            splits = {source.node_id: source.enumerator.next_splits(started)
                      for source in self.sources}
            end = all(source.enumerator.finished for source in self.sources)
            metrics, collected = self._run_epoch(splits, end)
            if end or self._checkpoint_due(started):
                self._checkpoint(started)
            self.stats = dataclasses.replace(self.stats, epochs=self.stats.epochs + 1)
            self.listener.epoch_finished(metrics, collected, self.stats)
            if end:
                return True
            next_start = max(started + self.interval, self.clock())

    def _run_epoch(self, splits: dict[int, tuple[Any, ...]], end: bool
                   ) -> tuple[dict[tuple[str, int], SubtaskMetrics], dict[str, list[Any]]]:
        from dataflow_engine.runtime.spark.metrics import TaskResultsParam
        from dataflow_engine.runtime.spark.spark_job import SparkJob

        results = self.sc.accumulator({}, TaskResultsParam())
        inputs = {}
        for vertex_id, vertex_plan in self.plan.vertices.items():
            head = vertex_plan.descriptor.operators[0]
            inputs[vertex_id] = EpochInput(
                self.epoch, self.restores.get(vertex_id, ()),
                {head.node_id: splits[head.node_id]} if head.node_id in splits else {}, end)
        job = SparkJob(self.sc, self.plan, results, self.profiles, inputs)
        self.listener.epoch_started(job)
        collected: dict[str, list[Any]] = {}
        try:
            for action in self.plan.actions:
                for name, records in job.run(action).items():
                    collected.setdefault(name, []).extend(records)
        finally:
            job.release()
        reported = results.value
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

    # -- checkpoints ------------------------------------------------------------------------

    def _checkpoint_due(self, now: float) -> bool:
        if self.checkpoint_interval is None:
            return False
        if self._last_checkpoint_start is None or self._last_checkpoint_end is None:
            return True
        return (now - self._last_checkpoint_start >= self.checkpoint_interval
                and now - self._last_checkpoint_end >= self.min_pause)

    def _checkpoint(self, started: float) -> None:
        """Makes this epoch's snapshots durable, then publishes the sinks' committables."""
        begun = self.clock()
        vertices = {
            vertex_id: VertexState(vp.vertex.parallelism, vp.vertex.max_parallelism,
                                   tuple(op.uid for op in vp.descriptor.operators),
                                   tuple(data or b"" for data in self.restores[vertex_id]))
            for vertex_id, vp in self.plan.vertices.items()}
        checkpoint = self.storage.store(CompletedCheckpoint(
            self.epoch, time.time(), {s.uid: s.enumerator.position() for s in self.sources},
            vertices, tuple(self.pending)))
        commit_all(self.pending)
        self.pending.clear()
        ended = self.clock()
        self._last_checkpoint_start, self._last_checkpoint_end = started, ended
        self.stats = dataclasses.replace(
            self.stats, completed=self.stats.completed + 1, last_id=checkpoint.checkpoint_id,
            last_time=checkpoint.timestamp, last_duration_ms=int((ended - begun) * 1000),
            last_size=checkpoint.state_size, last_path=checkpoint.path)
