"""How the compiled JobGraph maps onto Spark, decided before any RDD exists.

* Every JobVertex becomes one RDD with ``parallelism`` partitions; partition ``i`` runs the
  StreamTask of subtask ``i``, so each ExecutionVertex is one Spark task.
* Each JobVertex's inputs arrive through ONE Spark shuffle (the union of its producers' frames,
  tagged with the consumer subtask), except a lone forward input, which is read without a
  shuffle from the producer's persisted partition ``i``.
* A producer used once (one exchange, or a terminal action) is simply the map side of that
  shuffle. A producer that *fans out* (several exchanges, into consumers that read nothing
  else) is the map side of one shuffle for all of them: consumer ``c`` reads partitions
  ``[base_c, base_c + parallelism_c)`` of it, so the producer still runs once and nothing is
  persisted. Any other producer used more than once (an exchange plus collect results, a
  forward output, a consumer that also reads another producer) is *materialized*: persisted
  and computed by its own Spark job first, so it runs exactly once; each use then selects its
  frames by tag.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.functions import shipped
from dataflow_engine.graph.job_graph import JobEdge, JobVertex
from dataflow_engine.graph.stream_graph import PartitionerKind, StreamNode
from dataflow_engine.runtime.functions.aggregations import COMBINABLE
from dataflow_engine.runtime.streamoperators.sources import (
    collection_splits,
    sequence_splits,
    text_splits,
)
from dataflow_engine.runtime.streamoperators.window_operator import pre_aggregable
from dataflow_engine.runtime.tasks.descriptors import (
    AggregationConfig,
    InputKind,
    OperatorConfig,
    OutputConfig,
    PayloadKind,
    TaskDescriptor,
)
from dataflow_engine.spec.catalog import KafkaSourceArgs, kind_of
from dataflow_engine.spec.model import OperatorType, RuntimeMode, duration_millis
from dataflow_engine.types.json_form import element_decoder
from dataflow_engine.types.typeinfo import TypeInformation


class ActionKind(StrEnum):
    #: Compute and persist a vertex used more than once.
    MATERIALIZE = "MATERIALIZE"
    #: Run a terminal vertex for its side effects (print, file, discard sinks).
    RUN = "RUN"
    #: Run a terminal vertex and bring its collect-sink results to the driver.
    COLLECT = "COLLECT"
    #: Bring a materialized vertex's collect-sink results to the driver.
    COLLECT_PERSISTED = "COLLECT_PERSISTED"


@dataclass(frozen=True)
class Action:
    kind: ActionKind
    vertex_id: str


@dataclass
class VertexPlan:
    vertex: JobVertex
    descriptor: TaskDescriptor
    materialized: bool
    #: A lone forward input, read from the producer's persisted partition (no shuffle).
    forward_input: JobEdge | None
    #: Inputs that arrive through this vertex's shuffle.
    exchange_inputs: list[JobEdge]
    #: First frame tag of each produced IntermediateDataSet (by data set id).
    port_offsets: dict[str, int]
    #: Collect sink name -> frame tag.
    collect_tags: dict[str, int] = field(default_factory=dict)
    #: Partitions of the one shuffle carrying this vertex's frames to all of its consumers,
    #: when it fans out (each consumer's base is the port offset of its data sets); else 0.
    shared_shuffle: int = 0

    @property
    def collect_range(self) -> tuple[int, int]:
        tags = self.collect_tags.values()
        return (min(tags), max(tags) + 1) if tags else (0, 0)


@dataclass
class PhysicalPlan:
    job_name: str
    runtime_mode: RuntimeMode
    #: Topological order.
    vertices: dict[str, VertexPlan]
    actions: list[Action]


def _payload(edge: JobEdge, target: StreamNode, mode: RuntimeMode,
             nodes: dict[int, StreamNode]) -> PayloadKind:
    if edge.partitioner is not PartitionerKind.HASH or not target.is_keyed:
        return PayloadKind.RECORD
    if mode is RuntimeMode.BATCH:
        if target.operator_type in COMBINABLE and not _event_time_input(edge.target, nodes):
            return PayloadKind.PARTIAL
        if (target.operator_type is OperatorType.WINDOW
                and pre_aggregable(target.args.get("window"))):
            return PayloadKind.WINDOW_PARTIAL
    return PayloadKind.KEYED


def _strings(value: Any) -> Iterator[str]:
    """Every string nested in operator arguments (some are function references)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _event_time_input(vertex: JobVertex, nodes: dict[int, StreamNode]) -> bool:
    """Records reach this vertex with timestamps (then all of its inputs carry them)."""
    return any(nodes[e.stream_edge.source_id].event_time for e in vertex.inputs)


def _channel_base(edge: JobEdge) -> int:
    """The first input channel number of ``edge``'s producer subtasks at its consumer."""
    base = 0
    for other in edge.target.inputs:
        if other is edge:
            return base
        base += other.source.producer.parallelism
    raise AssertionError("an edge is an input of its target")


def _input_channels(compiled: CompiledJob,
                    vertex: JobVertex) -> tuple[dict[int, tuple[int, ...]], ...]:
    """Per subtask: input number -> the channels (producer subtasks) it reads."""
    channels: list[dict[int, list[int]]] = [{} for _ in range(vertex.parallelism)]
    for edge in vertex.inputs:
        base = _channel_base(edge)
        producer = compiled.execution_graph.job_vertices[edge.source.producer.id]
        result = next(r for r in producer.produced_results if r.id == edge.source.id)
        input_number = max(edge.stream_edge.type_number, 1)
        for index, partition in enumerate(result.partitions):
            group = partition.consumer_vertex_group
            assert group is not None
            for subtask in range(group.start, group.end):
                channels[subtask].setdefault(input_number, []).append(base + index)
    return tuple({n: tuple(c) for n, c in per.items()} for per in channels)


def _is_forward_input(edge: JobEdge) -> bool:
    return edge.partitioner is PartitionerKind.FORWARD and len(edge.target.inputs) == 1


def _fans_out(vertex: JobVertex) -> bool:
    """Several exchanges, each into a consumer that reads only this vertex (so one shuffle can
    serve them all without a consumer's lineage ever leading back to another's)."""
    consumers = [ds.consumer for ds in vertex.produced_data_sets]
    return len(consumers) > 1 and all(
        edge is not None and not _is_forward_input(edge)
        and all(e.source.producer is vertex for e in edge.target.inputs)
        for edge in consumers)


def _source_splits(node: StreamNode, parallelism: int) -> tuple[object, ...]:
    args = node.args
    if node.operator_type is OperatorType.COLLECTION:
        reference = args.get("shippedElements")
        elements = (list(shipped.collect([reference])[reference]) if reference is not None
                    else list(args["elements"]))
        if node.output_type is not None:
            decode = element_decoder(node.output_type)
            elements = [decode(element, f"{node.name}.elements[{index}]")
                        for index, element in enumerate(elements)]
        elif args.get("tuples"):
            elements = [tuple(element) for element in elements]
        return collection_splits(elements, parallelism)
    if node.operator_type is OperatorType.SEQUENCE:
        return sequence_splits(int(args["from"]), int(args["to"]), parallelism)
    if node.operator_type is OperatorType.TEXT and args.get("monitorInterval") is None:
        return text_splits(args["path"], parallelism)
    if node.operator_type is OperatorType.DATAGEN and args.get("numberOfRows") is not None:
        return ((0, int(args["numberOfRows"])),) * parallelism  # a bounded run reads it all
    if node.operator_type is OperatorType.KAFKA and args.get("stoppingOffsets") is not None:
        from dataflow_engine.runtime.streamoperators.kafka import KafkaEnumerator

        enumerator = KafkaEnumerator(parallelism, KafkaSourceArgs.model_validate(args),
                                     node.name)
        try:
            return enumerator.next_splits(0.0)  # a bounded run reads up to the end offsets
        finally:
            enumerator.close()
    return ()


def _input_type(node: StreamNode, nodes: dict[int, StreamNode]) -> TypeInformation | None:
    """The type of what an operator reads: its inputs' when they all have the same (a side
    output has none), else none, so records print as Python prints them."""
    types = [None if e.output_tag is not None else nodes[e.source_id].output_type
             for e in node.in_edges]
    return types[0] if types and all(t == types[0] for t in types) else None


def _local_args(node: StreamNode) -> dict[str, Any]:
    args = dict(node.args)
    if node.operator_type is OperatorType.FILE:
        args["path"] = os.path.abspath(str(args["path"]))
    return args


def plan_job(compiled: CompiledJob, *, print_spool: str | None = None,
             batch_size: int = 1024, local: bool = True) -> PhysicalPlan:
    """Decides materialization, tags and actions, and builds every TaskDescriptor.

    ``local``: executors share this machine, so relative file-sink paths are made absolute
    here (a worker's working directory is the JVM's, not necessarily the driver's current one).
    """
    graph = compiled.job_graph
    nodes = compiled.stream_graph.nodes
    mode = graph.runtime_mode
    vertices: dict[str, VertexPlan] = {}
    actions: list[Action] = []
    for vertex in graph.vertices:
        collect_sinks = [n for n in vertex.operators if n.operator_type is OperatorType.COLLECT]
        uses = len(vertex.produced_data_sets) + (1 if collect_sinks else 0)
        fans_out = not collect_sinks and _fans_out(vertex)
        materialized = not fans_out and (uses > 1 or any(
            ds.consumer is not None and _is_forward_input(ds.consumer)
            for ds in vertex.produced_data_sets))

        port_offsets: dict[str, int] = {}
        consumer_base: dict[str, int] = {}
        tag = 0
        for data_set in vertex.produced_data_sets:
            assert data_set.consumer is not None
            target = data_set.consumer.target
            if fans_out and target.id in consumer_base:  # its partitions are already counted
                port_offsets[data_set.id] = consumer_base[target.id]
                continue
            port_offsets[data_set.id] = consumer_base[target.id] = tag
            tag += target.parallelism
        shared_shuffle = tag if fans_out else 0
        collect_tags = {}
        for sink in collect_sinks:
            collect_tags[sink.name] = tag
            tag += 1

        forward_input = None
        if len(vertex.inputs) == 1 and _is_forward_input(vertex.inputs[0]):
            forward_input = vertex.inputs[0]
        exchange_inputs = [e for e in vertex.inputs if e is not forward_input]

        descriptor = _descriptor(compiled, vertex, mode, port_offsets, collect_tags,
                                 forward_input, vertices, print_spool, batch_size, nodes, local)
        vertices[vertex.id] = VertexPlan(vertex, descriptor, materialized, forward_input,
                                         exchange_inputs, port_offsets, collect_tags,
                                         shared_shuffle)
        if materialized:
            actions.append(Action(ActionKind.MATERIALIZE, vertex.id))
            if collect_sinks:
                actions.append(Action(ActionKind.COLLECT_PERSISTED, vertex.id))
        elif not vertex.produced_data_sets:
            kind = ActionKind.COLLECT if collect_sinks else ActionKind.RUN
            actions.append(Action(kind, vertex.id))
    return PhysicalPlan(graph.job_name, mode, vertices, actions)


def _descriptor(compiled: CompiledJob, vertex: JobVertex, mode: RuntimeMode,
                port_offsets: dict[str, int], collect_tags: dict[str, int],
                forward_input: JobEdge | None, planned: dict[str, VertexPlan],
                print_spool: str | None, batch_size: int,
                nodes: dict[int, StreamNode], local: bool) -> TaskDescriptor:
    position = {node.id: i for i, node in enumerate(vertex.operators)}
    chained = {(e.source_id, e.target_id, e.input_index) for e in vertex.chained_edges}
    data_set_of_edge = {
        id(ds.consumer.stream_edge): ds for ds in vertex.produced_data_sets
        if ds.consumer is not None}
    ejv = compiled.execution_graph.job_vertices[vertex.id]
    results = {r.id: r for r in ejv.produced_results}

    outputs: list[OutputConfig] = []
    writer_of_edge: dict[int, int] = {}
    for data_set in vertex.produced_data_sets:
        edge = data_set.consumer
        assert edge is not None
        target = nodes[edge.stream_edge.target_id]
        payload = _payload(edge, target, mode, nodes)
        aggregation = None
        if payload in (PayloadKind.PARTIAL, PayloadKind.WINDOW_PARTIAL):
            aggregation = AggregationConfig(target.operator_type, target.name,
                                            target.args.get("field"), target.function,
                                            target.args.get("window"))
        ranges = []
        for partition in results[data_set.id].partitions:
            group = partition.consumer_vertex_group
            assert group is not None
            ranges.append((group.start, group.end))
        writer_of_edge[id(edge.stream_edge)] = len(outputs)
        outputs.append(OutputConfig(
            producer=position[edge.stream_edge.source_id],
            partitioner=edge.partitioner,
            key_selector=edge.stream_edge.key_selector,
            consumer_name=target.name,
            consumer_parallelism=edge.target.parallelism,
            consumer_max_parallelism=edge.target.max_parallelism,
            consumer_ranges=tuple(ranges),
            payload=payload,
            tag_offset=port_offsets[data_set.id],
            aggregation=aggregation,
            event_time=(_event_time_input(edge.target, nodes)
                        and payload is not PayloadKind.WINDOW_PARTIAL),
            channel_base=_channel_base(edge),
            input_number=edge.stream_edge.type_number,
            key_type=edge.stream_edge.key_type,
            record_type=(None if edge.stream_edge.output_tag is not None  # unconverted
                         else nodes[edge.stream_edge.source_id].output_type),
        ))

    operators = []
    for node in vertex.operators:
        outputs_by_tag: dict[str | None, tuple[list[int], list[int]]] = {None: ([], [])}
        for e in node.out_edges:
            chained_to, writers = outputs_by_tag.setdefault(e.output_tag, ([], []))
            if (e.source_id, e.target_id, e.input_index) in chained:
                chained_to.append(position[e.target_id])
            elif id(e) in data_set_of_edge:
                writers.append(writer_of_edge[id(e)])
        chained_outputs, writer_outputs = (tuple(o) for o in outputs_by_tag.pop(None))
        side_outputs = {tag: (tuple(c), tuple(w)) for tag, (c, w) in outputs_by_tag.items()
                        if tag is not None}
        operators.append(OperatorConfig(
            node_id=node.id,
            name=node.name,
            operator_type=node.operator_type,
            display_name=node.operator_name,
            function=node.function,
            args=_local_args(node) if local else dict(node.args),
            parallelism=node.parallelism,
            max_parallelism=node.max_parallelism,
            chained_outputs=chained_outputs,
            writer_outputs=writer_outputs,
            side_outputs=side_outputs,
            keyed=node.is_keyed,
            uid=node.uid,
            splits=_source_splits(node, node.parallelism) if node.is_source else (),
            output_type=node.output_type,
            input_type=_input_type(node, nodes) if node.is_sink else None,
            key_type=next((e.key_type for e in node.in_edges
                           if e.partitioner is PartitionerKind.HASH), None),
        ))

    head = vertex.head
    # A broadcast_process's input 2 (the broadcast stream) carries plain records whatever
    # input 1 carries; the head's payload is that of its other inputs.
    payloads = {_payload(e, head, mode, nodes) for e in vertex.inputs
                if not (kind_of(head.operator_type).broadcast_input
                        and e.stream_edge.type_number == 2)}
    assert len(payloads) <= 1, f"inputs of {vertex.name} disagree on their payload"
    input_payload = payloads.pop() if payloads else PayloadKind.RECORD
    if head.is_source:
        input_kind = InputKind.SOURCE
    elif forward_input is not None:
        input_kind = InputKind.FORWARD_FRAMES
    else:
        input_kind = InputKind.SHUFFLE
    input_tag_offset = 0
    if forward_input is not None:
        producer = planned[forward_input.source.producer.id]
        input_tag_offset = producer.port_offsets[forward_input.source.id]
    return TaskDescriptor(
        job_name=compiled.job_name,
        vertex_id=vertex.id,
        task_name=vertex.name,
        parallelism=vertex.parallelism,
        max_parallelism=vertex.max_parallelism,
        runtime_mode=mode,
        object_reuse=compiled.job_graph.object_reuse,
        operators=tuple(operators),
        outputs=tuple(outputs),
        input_kind=input_kind,
        input_payload=input_payload,
        input_tag_offset=input_tag_offset,
        collect_tags={position[n.id]: collect_tags[n.name] for n in vertex.operators
                      if n.name in collect_tags},
        print_spool=print_spool,
        batch_size=batch_size,
        input_event_time=(_event_time_input(vertex, nodes)
                          and input_payload is not PayloadKind.WINDOW_PARTIAL),
        input_count=kind_of(head.operator_type).inputs,
        input_channels=_input_channels(compiled, vertex),
        auto_watermark_interval=duration_millis(compiled.spec.auto_watermark_interval),
        shipped=shipped.collect([
            *(op.function for op in operators),
            *(text for op in operators for text in _strings(op.args)),
            *(o.key_selector for o in outputs),
            *(o.aggregation.function for o in outputs if o.aggregation is not None)]),
    )
