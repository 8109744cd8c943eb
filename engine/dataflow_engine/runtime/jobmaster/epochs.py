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

At each epoch boundary the :class:`~dataflow_engine.runtime.checkpoint.coordinator.
CheckpointCoordinator` makes the snapshot a checkpoint when one is due or asked for, and takes
the savepoints asked for; it also chose where the run started. A stop with drain (Flink's
``flink stop --drain``) runs one more epoch in which every vertex's input ends, as if every
source had, so that the maximum watermark fires every window and event-time timer, and then
takes the stop's savepoint of that drained state.
"""

from __future__ import annotations

import pickle
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.rest.savepoints import SavepointFailureReason
from dataflow_engine.rest.status import CheckpointStatistics, KafkaPartitionInfo
from dataflow_engine.runtime.checkpoint.coordinator import CheckpointCoordinator
from dataflow_engine.runtime.checkpoint.restore import VertexShape
from dataflow_engine.runtime.checkpoint.savepoints import SavepointRequest, SavepointRequests
from dataflow_engine.runtime.checkpoint.snapshots import SubtaskSnapshot, TaskRestore
from dataflow_engine.runtime.checkpoint.storage import CompletedCheckpoint
from dataflow_engine.runtime.spark.spark_plan import PhysicalPlan
from dataflow_engine.runtime.streamoperators.kafka import KafkaEnumerator
from dataflow_engine.runtime.streamoperators.sources import (
    BoundedEnumerator,
    DatagenEnumerator,
    FileStreamEnumerator,
    SplitEnumerator,
)
from dataflow_engine.runtime.taskmanager.stream_task import SubtaskEpochResult, SubtaskMetrics
from dataflow_engine.runtime.tasks.descriptors import EpochInput, OperatorConfig
from dataflow_engine.spec.catalog import (
    DatagenArgs,
    KafkaSinkArgs,
    KafkaSourceArgs,
    TextArgs,
    kind_of,
)
from dataflow_engine.spec.model import OperatorType, duration_seconds

if TYPE_CHECKING:
    from pyspark import Accumulator, SparkContext
    from pyspark.resource import ResourceProfile

    from dataflow_engine.runtime.spark.metrics import TaskResults
    from dataflow_engine.runtime.spark.spark_job import SparkJob
    from dataflow_engine.runtime.spark.spark_status import SparkTaskStates, TaskStates


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
                       collected: dict[str, list[Any]], stats: CheckpointStatistics) -> None: ...


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
        self.interval = duration_seconds(compiled.spec.epoch_interval)
        self.sources = self._sources()
        #: Vertex id -> the source vertices upstream of it (itself, for a source).
        self.upstream = _upstream_sources(plan, {s.vertex_id for s in self.sources})
        self.ended: set[str] = set()
        #: Drain requests whose draining epoch runs next (checked, not yet taken).
        self.draining: list[SavepointRequest] = []
        #: Vertex id -> each subtask's snapshot (or restore) the next epoch starts from.
        self.restores: dict[str, tuple[bytes, ...]] = {}
        self.epoch = 0
        self.states: SparkTaskStates | None = None
        shapes = {vertex_id: VertexShape(vertex_id, vp.vertex.parallelism,
                                         vp.vertex.max_parallelism,
                                         tuple(op.uid for op in vp.descriptor.operators))
                  for vertex_id, vp in plan.vertices.items()}
        kafka_sinks = [(op.name, KafkaSinkArgs.model_validate(op.args))
                       for op in _operators(plan, OperatorType.KAFKA_SINK)]
        self.coordinator = CheckpointCoordinator(
            compiled.spec.checkpointing, shapes,
            {str(op.args["path"]) for op in _operators(plan, OperatorType.FILE)},
            [(name, args) for name, args in kafka_sinks
             if args.delivery_guarantee == "exactly-once"],
            savepoints, clock)

    def task_states(self, job_group: str) -> TaskStates:
        """Each subtask's ExecutionState: its Spark task's in the current epoch."""
        from dataflow_engine.runtime.spark.spark_status import SparkTaskStates

        self.states = SparkTaskStates(self.sc, job_group, {})
        return self.states

    @property
    def stats(self) -> CheckpointStatistics:
        return self.coordinator.stats

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

    def restore(self, restore: str = "latest", allow_non_restored_state: bool = False,
                deployment: str = "") -> None:
        """Starts where the coordinator says (:meth:`CheckpointCoordinator.restore`): each
        subtask's state and each source's position. A vertex whose every subtask had ended
        stays ended, a source too even if more input would come (a drained savepoint's), as
        Flink's fully finished operators are after a restore: a job restored from a drained
        savepoint ends at once."""
        restored = self.coordinator.restore(restore, allow_non_restored_state, deployment)
        self.epoch, self.restores = restored.epoch, dict(restored.restores)
        self.ended = {vertex_id for vertex_id, subtasks in self.restores.items()
                      if subtasks and all(_has_ended(data) for data in subtasks)}
        for source in self.sources:
            if source.uid in restored.positions:
                source.enumerator.restore(restored.positions[source.uid])

    # -- the loop ---------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> bool:
        """Runs epochs until every source ended or a savepoint stopped the job (returns
        True: FINISHED), or ``stop`` is set (False: CANCELED).

        A drain request makes the next epoch, which starts at once, the draining one: every
        vertex not ended yet ends its input (each source still reads what that epoch brings,
        so nothing it was handed is lost), as when all sources end."""
        coordinator = self.coordinator
        next_start = self.clock()
        try:
            while True:
                if stop.wait(max(0.0, next_start - self.clock())):
                    return False
                started = self.clock()
                self.epoch += 1
                splits = {source.node_id: source.enumerator.next_splits(started)
                          for source in self.sources if source.vertex_id not in self.ended}
                finished = {s.vertex_id for s in self.sources
                            if s.enumerator.finished or s.vertex_id in self.ended}
                draining = bool(self.draining)
                ending = {vertex_id for vertex_id, sources in self.upstream.items()
                          if draining or sources <= finished} - self.ended
                metrics, collected = self._run_epoch(splits, ending)
                self.ended |= ending
                end = len(finished) == len(self.sources)
                stopped = (self._drained(started, end) if draining
                           else self._boundary(started, end))
                coordinator.epoch_finished(self._kafka_partitions())
                self.listener.epoch_finished(metrics, collected, coordinator.stats)
                if end or stopped:
                    return True
                next_start = (self.clock() if self.draining
                              else max(started + self.interval, self.clock()))
        finally:
            self.close()

    def _boundary(self, started: float, end: bool) -> bool:
        """The coordinator's part of an epoch boundary: the checkpoint, when one is due, the
        job ends or one was asked for, then the savepoints asked for. A drain request is
        checked (its directory, its upgrade) and waits for the draining epoch, unless the
        job ends here anyway. True when a savepoint stopped the job."""
        coordinator = self.coordinator
        requests = coordinator.savepoints.take()
        triggered = [request for request in requests if request.kind == "checkpoint"
                     and coordinator.admissible(request, self._snapshot())]
        if end or triggered or coordinator.checkpoint_due(started):
            coordinator.checkpoint(self._snapshot(), started, final=end, triggered=triggered)
        stopped = False
        for request in requests:
            if request.kind == "checkpoint":
                continue
            if request.drain and not end:  # at the end every vertex has drained already
                if coordinator.admissible(request, self._snapshot()):
                    self.draining.append(request)
                continue
            # A snapshot each: one a stop published carries no committables any more.
            stopped |= coordinator.savepoint(request, self._snapshot()) and request.stop
        if stopped:
            for request in self.draining:
                coordinator.savepoint_failed(
                    request, SavepointFailureReason.JOB_ENDED,
                    "the job stopped with another savepoint at the same epoch boundary, "
                    "before it drained")
            self.draining = []
        return stopped

    def _drained(self, started: float, end: bool) -> bool:
        """The boundary after the draining epoch: the drain requests' savepoints of the
        drained state. No periodic checkpoint comes first, and requests that came meanwhile
        wait (the job ends, so :meth:`close` fails them): while the stop's savepoint is not
        written, the latest checkpoint must be one from before the drain. A drained job
        cannot run on (its input has ended), so if none of the savepoints completes the job
        fails, to restart from that checkpoint."""
        coordinator = self.coordinator
        if end:  # every source ended with this epoch as well: the job's final checkpoint
            coordinator.checkpoint(self._snapshot(), started, final=True)
        requests, self.draining = self.draining, []
        taken = [coordinator.savepoint(request, self._snapshot()) for request in requests]
        if any(taken) or end:
            return True
        failed = coordinator.stats.savepoint(requests[0].nonce)
        raise RuntimeError(
            f"stop with drain {requests[0].nonce!r}: the job's event time ended, but its "
            f"savepoint failed ({failed.error if failed is not None else 'no savepoint'}), "
            "so the job fails over to its latest checkpoint")

    def close(self) -> None:
        """Lets go of the coordinator (its writer, the sinks' producers) and the sources'
        clients; drain requests not taken yet fail."""
        for request in self.draining:
            self.coordinator.savepoint_failed(request, SavepointFailureReason.JOB_ENDED,
                                              "the job ended before it drained")
        self.draining = []
        self.coordinator.close()
        for source in self.sources:
            source.enumerator.close()

    def _snapshot(self) -> CompletedCheckpoint:
        return self.coordinator.snapshot(
            self.epoch, {s.uid: s.enumerator.position() for s in self.sources}, self.restores)

    def _kafka_partitions(self) -> tuple[KafkaPartitionInfo, ...]:
        return tuple(KafkaPartitionInfo(
            source=source.enumerator.source, topic=topic, partition=partition,
            offset=source.enumerator.positions.get((topic, partition), 0), lag=lag)
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
        if self.states is not None:  # earlier epochs' stages have ended: map only this one's
            self.states.roots = job.roots
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
                self.coordinator.add_pending(result.committables)
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


def _has_ended(data: bytes) -> bool:
    """A subtask's restore (or snapshot) says that its input had ended."""
    restored = pickle.loads(data)
    return isinstance(restored, TaskRestore | SubtaskSnapshot) and restored.ended


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
