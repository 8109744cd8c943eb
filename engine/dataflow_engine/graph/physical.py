"""The physical plan: what each deployed task reads and writes, and the slots and executors.

Flink never materialises this layer as one structure; here it is computed per ExecutionVertex
on demand, so a large ALL_TO_ALL job never holds producers x consumers channels in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dataflow_engine.graph.execution_graph import ExecutionGraph, ExecutionVertex
from dataflow_engine.quantity import format_cpu, format_memory, parse_quantity
from dataflow_engine.spec import SlotSharingGroupSpec


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
