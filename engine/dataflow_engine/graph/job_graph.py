"""The JobGraph: StreamNodes chained into JobVertices by Flink's chaining rule."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.graph.stream_graph import (
    ChainingStrategy,
    PartitionerKind,
    StreamEdge,
    StreamExchangeMode,
    StreamGraph,
    StreamNode,
)
from dataflow_engine.spec.model import RuntimeMode


class DistributionPattern(StrEnum):
    POINTWISE = "POINTWISE"
    ALL_TO_ALL = "ALL_TO_ALL"


class ResultPartitionType(StrEnum):
    #: Streaming exchanges: consumed while produced, with bounded buffers.
    PIPELINED_BOUNDED = "PIPELINED_BOUNDED"
    #: Batch exchanges: fully produced before they are consumed.
    BLOCKING = "BLOCKING"

    @property
    def is_pipelined(self) -> bool:
        return self is ResultPartitionType.PIPELINED_BOUNDED


class InvokableKind(StrEnum):
    """The StreamTask a JobVertex runs as, decided by its head operator's inputs."""

    SOURCE_STREAM_TASK = "SourceStreamTask"
    ONE_INPUT_STREAM_TASK = "OneInputStreamTask"
    TWO_INPUT_STREAM_TASK = "TwoInputStreamTask"
    MULTIPLE_INPUT_STREAM_TASK = "MultipleInputStreamTask"


def _hash(*parts: str) -> str:
    """A 128-bit hex id, as Flink's JobVertexID and OperatorID print."""
    return hashlib.md5("\0".join(parts).encode(), usedforsecurity=False).hexdigest()


def operator_id(node: StreamNode) -> str:
    """Depends only on the uid, so renaming another operator never changes it."""
    return _hash("operator", node.uid)


@dataclass(slots=True)
class IntermediateDataSet:
    id: str
    producer: JobVertex
    result_type: ResultPartitionType
    consumer: JobEdge | None = None


@dataclass(slots=True)
class JobEdge:
    source: IntermediateDataSet
    target: JobVertex
    distribution_pattern: DistributionPattern
    partitioner: PartitionerKind
    #: The StreamEdge this exchange realises (its key selector, its producing operator).
    stream_edge: StreamEdge


@dataclass(slots=True)
class JobVertex:
    id: str
    name: str
    #: Chained StreamNodes, head first, in the order the chain is built (depth first).
    operators: list[StreamNode]
    #: Edges inside the chain, from an operator to the next (ChainingOutput).
    chained_edges: list[StreamEdge]
    parallelism: int
    max_parallelism: int
    slot_sharing_group: str
    invokable: InvokableKind
    inputs: list[JobEdge] = field(default_factory=list)
    produced_data_sets: list[IntermediateDataSet] = field(default_factory=list)

    @property
    def head(self) -> StreamNode:
        return self.operators[0]

    @property
    def operator_ids(self) -> list[str]:
        return [operator_id(n) for n in self.operators]


@dataclass(slots=True)
class JobGraph:
    job_name: str
    runtime_mode: RuntimeMode
    object_reuse: bool
    #: Topological order (by head node id).
    vertices: list[JobVertex]

    @property
    def edges(self) -> list[JobEdge]:
        return [e for v in self.vertices for e in v.inputs]

    def vertex_of(self, node_name: str) -> JobVertex:
        for vertex in self.vertices:
            if any(n.name == node_name for n in vertex.operators):
                return vertex
        raise KeyError(node_name)


def is_chainable(edge: StreamEdge, graph: StreamGraph) -> bool:
    """Flink's StreamingJobGraphGenerator.isChainable: every condition must hold."""
    upstream = graph.nodes[edge.source_id]
    downstream = graph.nodes[edge.target_id]
    return (
        len(downstream.in_edges) == 1
        and upstream.slot_sharing_group == downstream.slot_sharing_group
        and downstream.chaining_strategy is ChainingStrategy.ALWAYS
        and upstream.chaining_strategy in (ChainingStrategy.HEAD, ChainingStrategy.ALWAYS)
        and edge.partitioner is PartitionerKind.FORWARD
        and edge.exchange_mode is not StreamExchangeMode.BATCH
        and upstream.parallelism == downstream.parallelism
        and graph.chaining_enabled
    )


def result_partition_type(edge: StreamEdge, runtime_mode: RuntimeMode) -> ResultPartitionType:
    """An edge's own exchange mode wins; otherwise BATCH jobs block at every exchange."""
    if edge.exchange_mode is StreamExchangeMode.BATCH:
        return ResultPartitionType.BLOCKING
    if edge.exchange_mode is StreamExchangeMode.PIPELINED:
        return ResultPartitionType.PIPELINED_BOUNDED
    if runtime_mode is RuntimeMode.BATCH:
        return ResultPartitionType.BLOCKING
    return ResultPartitionType.PIPELINED_BOUNDED


class StreamingJobGraphGenerator:
    """Chains StreamNodes from every chain head, then connects the chains' exchanges.

    ``overrides`` sets the parallelism of JobVertices by id once they are chained (Flink's
    ``pipeline.jobvertex-parallelism-overrides``, what its autoscaler sets): every operator of
    the chain takes it, so the chains and their ids stay what the spec's parallelism made
    them. A forward exchange between two vertices whose parallelism then differs becomes a
    rebalance, as a default exchange between operators of unequal parallelism is.
    """

    def __init__(self, graph: StreamGraph, overrides: Mapping[str, int] | None = None) -> None:
        self.graph = graph
        self.overrides = dict(overrides or {})

    def create_job_graph(self) -> JobGraph:
        graph = self.graph
        chain_heads = [n for n in graph.nodes.values() if not self._chained_into(n)]
        vertices: dict[int, JobVertex] = {}
        chain_of: dict[int, JobVertex] = {}
        for head in chain_heads:
            members: list[StreamNode] = []
            chained: list[StreamEdge] = []
            self._collect_chain(head, members, chained)
            vertex = JobVertex(
                id=_hash("vertex", *(n.uid for n in members)),
                name=self._chained_name(head),
                operators=members,
                chained_edges=chained,
                parallelism=head.parallelism,
                max_parallelism=head.max_parallelism,
                slot_sharing_group=head.slot_sharing_group,
                invokable=self._invokable(head),
            )
            vertices[head.id] = vertex
            for member in members:
                chain_of[member.id] = vertex
        ordered = [vertices[n.id] for n in graph.nodes.values() if n.id in vertices]
        self._override_parallelism(ordered)
        for target in ordered:
            for edge in target.head.in_edges:
                self._connect(chain_of[edge.source_id], target, edge)
        return JobGraph(graph.job_name, graph.runtime_mode, graph.object_reuse, ordered)

    def _override_parallelism(self, vertices: list[JobVertex]) -> None:
        by_id = {vertex.id: vertex for vertex in vertices}
        problems = []
        for vertex_id, parallelism in sorted(self.overrides.items()):
            at = f"spec.parallelismOverrides.{vertex_id}"
            vertex = by_id.get(vertex_id)
            if vertex is None:
                problems.append(SpecProblem(at, "the job has no JobVertex of this id (see "
                                            "status.plan.jobVertices)"))
            elif parallelism > vertex.max_parallelism:
                problems.append(SpecProblem(at, f"{parallelism} is above the vertex's "
                                            f"maxParallelism {vertex.max_parallelism}"))
            else:
                vertex.parallelism = parallelism
                for node in vertex.operators:
                    node.parallelism = parallelism
        if problems:
            raise SpecError(problems)

    def _chained_into(self, node: StreamNode) -> bool:
        return len(node.in_edges) == 1 and is_chainable(node.in_edges[0], self.graph)

    def _chainable_outputs(self, node: StreamNode) -> list[StreamEdge]:
        return [e for e in node.out_edges if is_chainable(e, self.graph)]

    def _collect_chain(self, node: StreamNode, members: list[StreamNode],
                       chained: list[StreamEdge]) -> None:
        members.append(node)
        for edge in self._chainable_outputs(node):
            chained.append(edge)
            self._collect_chain(self.graph.nodes[edge.target_id], members, chained)

    def _chained_name(self, node: StreamNode) -> str:
        """``A -> B`` for one chained output, ``A -> (B, C)`` for several, as Flink names chains."""
        outputs = [self._chained_name(self.graph.nodes[e.target_id])
                   for e in self._chainable_outputs(node)]
        if len(outputs) > 1:
            return f"{node.operator_name} -> ({', '.join(outputs)})"
        if outputs:
            return f"{node.operator_name} -> {outputs[0]}"
        return node.operator_name

    @staticmethod
    def _invokable(head: StreamNode) -> InvokableKind:
        if head.is_source:
            return InvokableKind.SOURCE_STREAM_TASK
        type_numbers = {e.type_number for e in head.in_edges}
        if len(type_numbers) == 2:
            return InvokableKind.TWO_INPUT_STREAM_TASK
        if len(type_numbers) > 2:
            return InvokableKind.MULTIPLE_INPUT_STREAM_TASK
        return InvokableKind.ONE_INPUT_STREAM_TASK

    def _connect(self, producer: JobVertex, consumer: JobVertex, edge: StreamEdge) -> None:
        if edge.partitioner is PartitionerKind.FORWARD and (
                producer.parallelism != consumer.parallelism):
            edge.partitioner = PartitionerKind.REBALANCE  # overridden apart
        data_set = IntermediateDataSet(
            id=_hash("result", self.graph.nodes[edge.source_id].uid,
                     self.graph.nodes[edge.target_id].uid, str(edge.input_index)),
            producer=producer,
            result_type=result_partition_type(edge, self.graph.runtime_mode),
        )
        pattern = (DistributionPattern.POINTWISE if edge.partitioner.is_pointwise
                   else DistributionPattern.ALL_TO_ALL)
        job_edge = JobEdge(data_set, consumer, pattern, edge.partitioner, edge)
        data_set.consumer = job_edge
        producer.produced_data_sets.append(data_set)
        consumer.inputs.append(job_edge)
