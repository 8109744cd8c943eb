"""Builds the RDDs of a :class:`~.spark_plan.PhysicalPlan` and runs its actions.

Exchanges use PySpark's own shuffle plumbing directly (``PairwiseRDD`` + ``PythonPartitioner``,
what ``RDD.partitionBy`` does inside) because StreamTasks already emit ``(partition, batch)``
frames: no second Python pass per record, and the RDD a stage computes is one we know. Each
such "stage root" is registered with the (vertex, subtask) each of its partitions computes, so
Spark's task states can be mapped back to ExecutionVertices.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from pyspark import SparkContext, StorageLevel
from pyspark.accumulators import Accumulator
from pyspark.core.rdd import RDD
from pyspark.resource import ResourceProfile
from pyspark.serializers import FramedSerializer

from dataflow_engine.runtime import secrets
from dataflow_engine.runtime.spark.metrics import TaskResults
from dataflow_engine.runtime.spark.spark_plan import Action, ActionKind, PhysicalPlan, VertexPlan
from dataflow_engine.runtime.taskmanager.stream_task import run_stream_task
from dataflow_engine.runtime.tasks.descriptors import EpochInput
from dataflow_engine.runtime.tasks.frames import Batch, decode_batch, pickled
from dataflow_engine.runtime.tasks.record_writer import pack_long

_unpack_long = struct.Struct(">q").unpack


@dataclass(frozen=True)
class Segment:
    """``count`` consecutive partitions of a stage root computing ``vertex_id`` (None: a
    partition that only moves a persisted vertex's frames, no ExecutionVertex)."""

    vertex_id: str | None
    count: int


def select_frames(low: int, high: int, split: int, frames: Iterable[bytes]) -> Iterator[bytes]:
    """Frames tagged ``[low, high)`` of a persisted producer, re-tagged from 0."""
    iterator = iter(frames)
    for tag in iterator:
        batch = next(iterator)
        value = _unpack_long(tag)[0]
        if low <= value < high:
            yield pack_long(value - low)
            yield batch


def decode_frames(frames: Iterable[bytes]) -> Iterator[tuple[int, Batch]]:
    iterator = iter(frames)
    for tag in iterator:
        yield _unpack_long(tag)[0], decode_batch(next(iterator))


class FrameSerializer(FramedSerializer):
    """Reads a shuffle's batches as the RecordWriters encoded them (marshalled, pickled or in
    columns); writes pickles, as PySpark's own serializer does."""

    def dumps(self, obj: Any) -> bytes:
        return pickled(obj)

    def loads(self, obj: bytes) -> Any:
        return decode_batch(obj)


class SparkJob:
    """The RDDs of one job run on a SparkContext."""

    def __init__(self, sc: SparkContext, plan: PhysicalPlan,
                 results: Accumulator[TaskResults],
                 profiles: dict[str, ResourceProfile] | None = None,
                 epochs: Mapping[str, EpochInput] | None = None) -> None:
        self.sc = sc
        self.plan = plan
        self.results = results
        #: One epoch of a continuous job: what each vertex's subtasks restore and read.
        self.epochs = epochs or {}
        #: Slot sharing group -> ResourceProfile (stage-level scheduling), when enabled.
        self.profiles = profiles or {}
        self.task_rdds: dict[str, RDD[bytes]] = {}
        #: JVM RDD id of every stage root -> the partitions' vertices.
        self.roots: dict[int, list[Segment]] = {}
        self.persisted: list[RDD[bytes]] = []
        #: Fanning-out producer -> the JavaRDD of its one shuffle (see ``_shared_partitions``).
        self.shared_shuffles: dict[str, Any] = {}
        for vertex_id, vertex_plan in plan.vertices.items():
            self.task_rdds[vertex_id] = self._task_rdd(vertex_plan)

    def _jvm(self) -> Any:
        return self.sc._jvm

    def _register(self, rdd_id: int, segments: list[Segment]) -> None:
        self.roots[rdd_id] = segments

    def _frames_rdd(self, parent: RDD[Any], function: Any) -> RDD[bytes]:
        """``parent.mapPartitionsWithIndex(function)`` whose output items are raw frames."""
        rdd: Any = parent.mapPartitionsWithIndex(function)
        rdd._bypass_serializer = True
        return rdd  # type: ignore[no-any-return]

    def _task_rdd(self, vp: VertexPlan) -> RDD[bytes]:
        descriptor = vp.descriptor
        parallelism = descriptor.parallelism
        parent: RDD[Any]
        if vp.forward_input is not None:
            parent = self.task_rdds[vp.forward_input.source.producer.id]
        elif vp.exchange_inputs:
            parent = self._exchange(vp)
        else:
            parent = self.sc.parallelize(range(parallelism), parallelism)
        rdd = self._frames_rdd(parent, partial(run_stream_task, descriptor, self.results,
                                               self.epochs.get(descriptor.vertex_id),
                                               secrets.installed()))
        rdd.setName(f"{descriptor.task_name} [{descriptor.vertex_id[:8]}]")
        profile = self.profiles.get(vp.vertex.slot_sharing_group)
        if profile is not None:
            rdd = rdd.withResources(profile)
        if vp.materialized:
            rdd.persist(StorageLevel.MEMORY_AND_DISK)
            self.persisted.append(rdd)
        if vp.materialized or vp.forward_input is not None or not vp.vertex.produced_data_sets:
            self._register(rdd.id(), [Segment(descriptor.vertex_id, parallelism)])
        return rdd

    def _exchange(self, vp: VertexPlan) -> RDD[Any]:
        """One shuffle delivering every exchange input: partition i is consumer subtask i."""
        first = self.plan.vertices[vp.exchange_inputs[0].source.producer.id]
        if first.shared_shuffle:  # then it is this vertex's only producer
            low = first.port_offsets[vp.exchange_inputs[0].source.id]
            return self._shared_partitions(first, low, low + vp.vertex.parallelism)
        parts: list[Any] = []
        segments: list[Segment] = []
        for edge in vp.exchange_inputs:
            producer = self.plan.vertices[edge.source.producer.id]
            rdd = self.task_rdds[producer.vertex.id]
            if producer.materialized:
                low = producer.port_offsets[edge.source.id]
                high = low + vp.vertex.parallelism
                rdd = self._frames_rdd(rdd, partial(select_frames, low, high))
                segments.append(Segment(None, producer.vertex.parallelism))
            else:
                segments.append(Segment(producer.vertex.id, producer.vertex.parallelism))
            parts.append(rdd._jrdd)
        jvm = self._jvm()
        if len(parts) == 1:
            map_side = parts[0]
        else:
            gateway: Any = self.sc._gateway
            array = gateway.new_array(jvm.org.apache.spark.api.java.JavaRDD, len(parts))
            for i, part in enumerate(parts):
                array[i] = part
            map_side = self.sc._jsc.union(array)
        self._register(map_side.id(), segments)
        return self._shuffled_rdd(self._shuffle(map_side, vp.vertex.parallelism))

    def _shuffle(self, map_side: Any, partitions: int) -> Any:
        """The JavaRDD of frames ``map_side`` shuffled by tag: partition ``t`` gets tag ``t``."""
        jvm = self._jvm()
        pairs = jvm.PairwiseRDD(map_side.rdd()).asJavaPairRDD()
        partitioner = jvm.PythonPartitioner(partitions, 0)
        return jvm.PythonRDD.valueOfPair(pairs.partitionBy(partitioner))

    def _shuffled_rdd(self, shuffled: Any) -> RDD[Any]:
        """A shuffle's partitions as decoded batches, which the consumer's task reads (a batch
        of columns without a tuple per record: ``StreamTask._event_time_records``)."""
        return RDD(shuffled, self.sc, FrameSerializer())

    def _shared_partitions(self, producer: VertexPlan, low: int, high: int) -> RDD[Any]:
        """Partitions ``[low, high)`` of a fanning-out producer's one shuffle (built on first
        use; Spark runs its map side once and every consumer's job reuses its output)."""
        shuffled = self.shared_shuffles.get(producer.vertex.id)
        if shuffled is None:
            map_side = self.task_rdds[producer.vertex.id]._jrdd
            self._register(map_side.id(), [Segment(producer.vertex.id,
                                                   producer.vertex.parallelism)])
            shuffled = self._shuffle(map_side, producer.shared_shuffle)
            self.shared_shuffles[producer.vertex.id] = shuffled
        if (low, high) == (0, producer.shared_shuffle):
            return self._shuffled_rdd(shuffled)
        jvm = self._jvm()
        indices = jvm.java.util.HashSet()
        for index in range(low, high):
            indices.add(index)
        # A Scala Set is an Int => Boolean, the partition filter PartitionPruningRDD takes.
        wanted = jvm.scala.jdk.javaapi.CollectionConverters.asScala(indices)
        pruned = jvm.org.apache.spark.rdd.PartitionPruningRDD.create(shuffled.rdd(), wanted)
        return self._shuffled_rdd(pruned.toJavaRDD())

    def run(self, action: Action) -> dict[str, list[Any]]:
        """Runs one action as a Spark job; returns collect-sink records by sink name."""
        vp = self.plan.vertices[action.vertex_id]
        rdd = self.task_rdds[action.vertex_id]
        if action.kind in (ActionKind.MATERIALIZE, ActionKind.RUN):
            rdd._jrdd.count()
            return {}
        if action.kind is ActionKind.COLLECT_PERSISTED:
            low, high = vp.collect_range
            rdd = self._frames_rdd(rdd, partial(select_frames, low, high))
            self._register(rdd.id(), [Segment(None, vp.vertex.parallelism)])
            offset = low
        else:
            offset = 0
        sink_of_tag = {tag - offset: name for name, tag in vp.collect_tags.items()}
        collected: dict[str, list[Any]] = {name: [] for name in vp.collect_tags}
        for tag, records in decode_frames(rdd.collect()):
            collected[sink_of_tag[tag]].extend(records)
        return collected

    def release(self) -> None:
        for rdd in self.persisted:
            rdd.unpersist()
        self.persisted.clear()
        self.shared_shuffles.clear()
