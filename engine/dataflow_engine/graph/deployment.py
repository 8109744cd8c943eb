"""The physical plan: what each deployed task reads and writes, and the slots and executors.

Flink never materialises this layer as one structure; here it is computed per ExecutionVertex
on demand, so a large ALL_TO_ALL job never holds producers x consumers channels in memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal

from dataflow_engine.graph.execution_graph import ExecutionGraph, ExecutionVertex
from dataflow_engine.spec.model import SlotSharingGroupSpec
from dataflow_engine.spec.quantity import (
    format_cpu,
    format_memory,
    memory_mebibytes,
    parse_quantity,
)


@dataclass(frozen=True, slots=True)
class ResultPartition:
    """What a task writes for one IntermediateResultPartition: one subpartition per consumer."""

    result_id: str
    partition_number: int
    num_subpartitions: int
    #: Consumer subtasks ``[start, end)``; subpartition k goes to consumer ``start + k``.
    consumer_range: tuple[int, int]


@dataclass(frozen=True, slots=True)
class InputGate:
    """What a task reads for one input: one InputChannel per producer partition in range."""

    result_id: str
    producer_job_vertex: str
    #: Producer subtasks ``[start, end)``; channel k reads from producer ``start + k``.
    producer_range: tuple[int, int]

    @property
    def num_channels(self) -> int:
        return self.producer_range[1] - self.producer_range[0]


def result_partitions(vertex: ExecutionVertex) -> list[ResultPartition]:
    partitions = []
    for partition in vertex.produced_partitions:
        group = partition.consumer_vertex_group
        assert group is not None, "every IntermediateDataSet has a consumer"
        partitions.append(ResultPartition(partition.result.id, partition.partition_number,
                                          len(group), (group.start, group.end)))
    return partitions


def input_gates(vertex: ExecutionVertex) -> list[InputGate]:
    return [InputGate(g.result.id, g.result.producer.id, (g.start, g.end))
            for g in vertex.consumed_partition_groups]


@dataclass(frozen=True, slots=True)
class ExecutorPlan:
    """Executors of one slot sharing group: ``count`` executors of ``slots_per_executor`` slots."""

    slot_sharing_group: str
    count: int
    slots_per_executor: int
    cpu: str
    memory: str


@dataclass(frozen=True, slots=True)
class SlotPlan:
    #: Slots per group: the highest parallelism among the group's JobVertices.
    slots: dict[str, int]
    executors: list[ExecutorPlan]

    @property
    def total_slots(self) -> int:
        return sum(self.slots.values())

    @property
    def total_executors(self) -> int:
        return sum(e.count for e in self.executors)


def plan_slots(graph: ExecutionGraph, groups: dict[str, SlotSharingGroupSpec],
               slots_per_executor: int) -> SlotPlan:
    """Subtask i of every JobVertex in a group shares slot i of that group, as in Flink."""
    slots: dict[str, int] = {}
    for ejv in graph.job_vertices.values():
        group = ejv.job_vertex.slot_sharing_group
        slots[group] = max(slots.get(group, 0), ejv.parallelism)
    executors = []
    for group, count in slots.items():
        resources = groups[group]
        executors.append(ExecutorPlan(
            slot_sharing_group=group,
            count=-(-count // slots_per_executor),
            slots_per_executor=slots_per_executor,
            cpu=format_cpu(parse_quantity(resources.cpu) * slots_per_executor),
            memory=format_memory(parse_quantity(resources.memory) * Decimal(slots_per_executor)),
        ))
    return SlotPlan(slots, executors)


def slot_of(vertex: ExecutionVertex) -> tuple[str, int]:
    """The (slot sharing group, slot index) a subtask runs in."""
    return vertex.job_vertex.job_vertex.slot_sharing_group, vertex.subtask_index


#: Spark refuses an executor heap under 450 MiB; this leaves it some room.
MIN_HEAP_MIB = 512
#: Share of an executor's memory given to the JVM heap; the rest is the Python workers'.
HEAP_FRACTION = 0.6


@dataclass(frozen=True)
class ExecutorShape:
    #: Concurrent tasks x CPUs per task: Spark's view, in whole cores.
    cores: int
    task_cpus: int
    #: The pod's memory (request and limit), split into heap and overhead.
    memory_mib: int
    heap_mib: int
    #: The pod's CPU request, as compiled (may be fractional: "500m").
    pod_cpu: str
    pod_memory: str

    @property
    def overhead_mib(self) -> int:
        return max(0, self.memory_mib - self.heap_mib)


def executor_shape(executors: ExecutorPlan) -> ExecutorShape:
    per_slot_cpu = parse_quantity(executors.cpu) / executors.slots_per_executor
    task_cpus = max(1, math.ceil(per_slot_cpu))
    memory_mib = memory_mebibytes(parse_quantity(executors.memory))
    heap_mib = min(memory_mib, max(MIN_HEAP_MIB, int(memory_mib * HEAP_FRACTION)))
    return ExecutorShape(cores=task_cpus * executors.slots_per_executor, task_cpus=task_cpus,
                         memory_mib=memory_mib, heap_mib=heap_mib, pod_cpu=executors.cpu,
                         pod_memory=executors.memory)
