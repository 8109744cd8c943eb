"""The ExecutionGraph: the JobGraph expanded to one ExecutionVertex per parallel subtask.

Connections are kept as ranges, as Flink's ConsumedPartitionGroup / ConsumerVertexGroup do, so
an ALL_TO_ALL exchange between S producers and T consumers costs O(S + T), not O(S x T). What
every subtask of a JobVertex shares (its inputs' groups, its produced results) is kept once on
the ExecutionJobVertex, and an Execution is made when it is first asked for: a subtask costs
two small objects (its ExecutionVertex and the IntermediateResultPartition it produces), so a
job at Flink's maximum parallelism compiles in milliseconds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import groupby

from dataflow_engine.graph.job_graph import (
    DistributionPattern,
    IntermediateDataSet,
    JobEdge,
    JobGraph,
    JobVertex,
    ResultPartitionType,
)
from dataflow_engine.graph.states import (
    ExecutionState,
    JobStatus,
    check_execution_transition,
    check_job_transition,
)


@dataclass(slots=True, eq=False)
class Execution:
    """One attempt at running an ExecutionVertex."""

    vertex: ExecutionVertex
    attempt_number: int
    state: ExecutionState = ExecutionState.CREATED

    def transition_state(self, target: ExecutionState) -> None:
        check_execution_transition(self.state, target)
        self.state = target


@dataclass(slots=True, eq=False)
class ConsumedPartitionGroup:
    """Partitions ``[start, end)`` of one IntermediateResult, read by one input of a consumer."""

    result: IntermediateResult
    start: int
    end: int

    @property
    def partitions(self) -> list[IntermediateResultPartition]:
        return self.result.partitions[self.start:self.end]

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(slots=True, eq=False)
class ConsumerVertexGroup:
    """Subtasks ``[start, end)`` of the consumer that read one IntermediateResultPartition."""

    job_vertex: ExecutionJobVertex
    start: int
    end: int

    @property
    def vertices(self) -> list[ExecutionVertex]:
        return self.job_vertex.task_vertices[self.start:self.end]

    def __len__(self) -> int:
        return self.end - self.start


@dataclass(slots=True, eq=False)
class IntermediateResultPartition:
    result: IntermediateResult
    partition_number: int
    consumer_vertex_group: ConsumerVertexGroup | None = None

    @property
    def producer(self) -> ExecutionVertex:
        return self.result.producer.task_vertices[self.partition_number]


@dataclass(slots=True, eq=False)
class IntermediateResult:
    data_set: IntermediateDataSet
    producer: ExecutionJobVertex
    partitions: list[IntermediateResultPartition] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.data_set.id

    @property
    def result_type(self) -> ResultPartitionType:
        return self.data_set.result_type


@dataclass(slots=True, eq=False)
class ExecutionVertex:
    job_vertex: ExecutionJobVertex
    subtask_index: int
    _execution: Execution | None = None

    @property
    def current_execution(self) -> Execution:
        if self._execution is None:
            self._execution = Execution(self, 0)
        return self._execution

    @property
    def produced_partitions(self) -> list[IntermediateResultPartition]:
        return [result.partitions[self.subtask_index]
                for result in self.job_vertex.produced_results]

    @property
    def consumed_partition_groups(self) -> list[ConsumedPartitionGroup]:
        """One group per input (JobEdge) of the JobVertex, in the same order."""
        return [groups[self.subtask_index] for groups in self.job_vertex.consumed_groups]

    @property
    def name(self) -> str:
        """Flink's task name with subtask index: ``Flat Map (1/2)`` (1-based)."""
        return (f"{self.job_vertex.job_vertex.name} "
                f"({self.subtask_index + 1}/{self.job_vertex.parallelism})")

    @property
    def state(self) -> ExecutionState:
        return self.current_execution.state

    def create_new_execution(self) -> Execution:
        """A new attempt after a terminal one, as on a failover restart."""
        if not self.current_execution.state.is_terminal:
            raise ValueError(f"{self.name}: attempt {self.current_execution.attempt_number} "
                             f"is still {self.current_execution.state}")
        self._execution = Execution(self, self.current_execution.attempt_number + 1)
        return self._execution


@dataclass(slots=True, eq=False)
class ExecutionJobVertex:
    job_vertex: JobVertex
    task_vertices: list[ExecutionVertex] = field(default_factory=list)
    produced_results: list[IntermediateResult] = field(default_factory=list)
    #: Per input (JobEdge), the group each subtask reads: ALL_TO_ALL shares one among all.
    consumed_groups: list[list[ConsumedPartitionGroup]] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.job_vertex.id

    @property
    def parallelism(self) -> int:
        return self.job_vertex.parallelism


@dataclass(slots=True, eq=False)
class PipelinedRegion:
    """ExecutionVertices joined by pipelined exchanges: scheduled and restarted together."""

    vertices: list[ExecutionVertex]


@dataclass(slots=True, eq=False)
class ExecutionGraph:
    job_graph: JobGraph
    #: Topological order, as in the JobGraph.
    job_vertices: dict[str, ExecutionJobVertex]
    status: JobStatus = JobStatus.CREATED
    _regions: list[PipelinedRegion] | None = None

    def transition_state(self, target: JobStatus) -> None:
        check_job_transition(self.status, target)
        self.status = target

    @property
    def num_execution_vertices(self) -> int:
        return sum(v.parallelism for v in self.job_vertices.values())

    def execution_vertices(self) -> list[ExecutionVertex]:
        return [ev for v in self.job_vertices.values() for ev in v.task_vertices]

    def pipelined_regions(self) -> list[PipelinedRegion]:
        if self._regions is None:
            self._regions = _compute_pipelined_regions(self)
        return self._regions


def build_execution_graph(job_graph: JobGraph) -> ExecutionGraph:
    """Expands the JobGraph. The cyclic collector is paused meanwhile: the graph is hundreds of
    thousands of objects at high parallelism, made at once, and each of its full collections
    would walk all made so far, which makes the build grow faster than the parallelism."""
    with _collector_paused():
        return _build(job_graph)


@contextmanager
def _collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _build(job_graph: JobGraph) -> ExecutionGraph:
    job_vertices: dict[str, ExecutionJobVertex] = {}
    for job_vertex in job_graph.vertices:
        ejv = ExecutionJobVertex(job_vertex)
        ejv.task_vertices = [ExecutionVertex(ejv, i) for i in range(job_vertex.parallelism)]
        for data_set in job_vertex.produced_data_sets:
            result = IntermediateResult(data_set, ejv)
            result.partitions = [IntermediateResultPartition(result, i)
                                 for i in range(job_vertex.parallelism)]
            ejv.produced_results.append(result)
        results = {r.data_set.id: r for v in job_vertices.values() for r in v.produced_results}
        for job_edge in job_vertex.inputs:
            _connect(ejv, results[job_edge.source.id], job_edge)
        job_vertices[job_vertex.id] = ejv
    return ExecutionGraph(job_graph, job_vertices)


def _connect(consumer: ExecutionJobVertex, result: IntermediateResult, edge: JobEdge) -> None:
    if edge.distribution_pattern is DistributionPattern.ALL_TO_ALL:
        _connect_all_to_all(consumer, result)
    else:
        _connect_pointwise(consumer, result)


def _connect_all_to_all(consumer: ExecutionJobVertex, result: IntermediateResult) -> None:
    consumed = ConsumedPartitionGroup(result, 0, len(result.partitions))
    consumers = ConsumerVertexGroup(consumer, 0, consumer.parallelism)
    consumer.consumed_groups.append([consumed] * consumer.parallelism)
    for partition in result.partitions:
        partition.consumer_vertex_group = consumers


def _connect_pointwise(consumer: ExecutionJobVertex, result: IntermediateResult) -> None:
    """Flink's ranges: S > T gives consumer i producers [iS/T, (i+1)S/T); S < T gives producer p
    consumers [ceil(pT/S), ceil((p+1)T/S))."""
    sources, targets = len(result.partitions), consumer.parallelism
    groups: list[ConsumedPartitionGroup] = []
    if sources >= targets:
        for i in range(targets):
            start, end = i * sources // targets, (i + 1) * sources // targets
            groups.append(ConsumedPartitionGroup(result, start, end))
            group = ConsumerVertexGroup(consumer, i, i + 1)
            for partition in result.partitions[start:end]:
                partition.consumer_vertex_group = group
    else:
        for p, partition in enumerate(result.partitions):
            start = (p * targets + sources - 1) // sources
            end = ((p + 1) * targets + sources - 1) // sources
            partition.consumer_vertex_group = ConsumerVertexGroup(consumer, start, end)
            groups += [ConsumedPartitionGroup(result, p, p + 1)] * (end - start)
    consumer.consumed_groups.append(groups)


def _compute_pipelined_regions(graph: ExecutionGraph) -> list[PipelinedRegion]:
    """Union-find over pipelined exchanges, linear in vertices plus partitions. A consumer
    group joins a range of subtasks to its producer at once: subtasks that are still alone
    are linked by one slice assignment, so an ALL_TO_ALL exchange costs no Python loop."""
    offsets: dict[str, int] = {}
    total = 0
    for ejv in graph.job_vertices.values():
        offsets[ejv.id] = total
        total += ejv.parallelism
    parent = list(range(total))

    def find(x: int) -> int:
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    def join(anchor: int, low: int, high: int) -> None:
        """Joins subtasks ``[low, high)`` to ``anchor``'s region."""
        root = find(anchor)
        if parent[low:high] == list(range(low, high)):  # each the root of its own region
            parent[low:high] = [root] * (high - low)
            return
        for x in range(low, high):
            other = find(x)
            if other != root:
                parent[other] = root

    for ejv in graph.job_vertices.values():
        for result in ejv.produced_results:
            if not result.result_type.is_pipelined:
                continue
            producer_base = offsets[ejv.id]
            start = 0  # runs of partitions read by one consumer group, joined at once
            for group, run in groupby(result.partitions, _consumers_of):
                end = start + len(list(run))
                if group is not None:
                    anchor = producer_base + start
                    join(anchor, producer_base + start, producer_base + end)
                    consumer_base = offsets[group.job_vertex.id]
                    join(anchor, consumer_base + group.start, consumer_base + group.end)
                start = end
    while True:  # pointer jumping until every subtask names its region's root
        jumped = [parent[up] for up in parent]
        if jumped == parent:
            break
        parent = jumped
    members: dict[int, list[ExecutionVertex]] = {}
    for ejv in graph.job_vertices.values():
        base = offsets[ejv.id]
        roots = parent[base:base + ejv.parallelism]
        if roots and roots.count(roots[0]) == len(roots):  # the whole vertex in one region
            members.setdefault(roots[0], []).extend(ejv.task_vertices)
            continue
        for vertex, root in zip(ejv.task_vertices, roots, strict=True):
            members.setdefault(root, []).append(vertex)
    return [PipelinedRegion(vertices) for vertices in members.values()]


def _consumers_of(partition: IntermediateResultPartition) -> ConsumerVertexGroup | None:
    return partition.consumer_vertex_group
