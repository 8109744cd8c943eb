"""Human-readable plans, one section per layer, in the spirit of Flink's plan descriptions."""

from __future__ import annotations

from collections.abc import Callable

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.graph.deployment import SlotPlan, input_gates, result_partitions
from dataflow_engine.graph.execution_graph import ExecutionGraph
from dataflow_engine.graph.job_graph import JobGraph
from dataflow_engine.graph.stream_graph import StreamGraph
from dataflow_engine.render import Layer
from dataflow_engine.types.typeinfo import type_text

#: Subtasks listed per JobVertex before the rest is summarised.
SUBTASKS_SHOWN = 4


def _short(vertex_id: str) -> str:
    return vertex_id[:8]


def stream_graph_text(graph: StreamGraph) -> str:
    chaining = "enabled" if graph.chaining_enabled else "disabled"
    lines = [f"StreamGraph '{graph.job_name}' ({graph.runtime_mode.value}, chaining {chaining})"]
    width = max(len(n.name) for n in graph.nodes.values())
    for n in graph.nodes.values():
        lines.append(
            f"  {n.id:>3}  {n.name:<{width}}  {n.operator_name}  parallelism={n.parallelism} "
            f"maxParallelism={n.max_parallelism} slotSharingGroup={n.slot_sharing_group} "
            f"chaining={n.chaining_strategy.value}"
            + (f" outputType={type_text(n.output_type)}" if n.output_type is not None else ""))
    lines.append("  edges:")
    for e in graph.edges:
        extras = f" keyBy={e.key_selector!r}" if e.key_selector is not None else ""
        if e.key_type is not None:
            extras += f" keyType={type_text(e.key_type)}"
        if e.exchange_mode.value != "UNDEFINED":
            extras += f" exchange={e.exchange_mode.value}"
        if e.output_tag is not None:
            extras += f" sideOutput={e.output_tag}"
        lines.append(f"  {e.source_id:>3} -> {e.target_id:<3} {e.partitioner.value}{extras}")
    return "\n".join(lines)


def job_graph_text(graph: JobGraph) -> str:
    lines = [f"JobGraph '{graph.job_name}': {len(graph.vertices)} JobVertices, "
             f"{len(graph.edges)} JobEdges"]
    for v in graph.vertices:
        lines.append(f"  [{_short(v.id)}] {v.name}")
        lines.append(f"      parallelism={v.parallelism} maxParallelism={v.max_parallelism} "
                     f"slotSharingGroup={v.slot_sharing_group} invokable={v.invokable.value}")
        lines.append(f"      operators: {', '.join(n.name for n in v.operators)}")
        for e in v.inputs:
            lines.append(f"      <- [{_short(e.source.producer.id)}] {e.partitioner.value} "
                         f"{e.distribution_pattern.value} {e.source.result_type.value}")
    return "\n".join(lines)


def execution_graph_text(graph: ExecutionGraph) -> str:
    lines = [f"ExecutionGraph: {graph.num_execution_vertices} ExecutionVertices in "
             f"{len(graph.pipelined_regions())} pipelined regions, job {graph.status.value}"]
    for ejv in graph.job_vertices.values():
        lines.append(f"  [{_short(ejv.id)}] {ejv.job_vertex.name}")
        for ev in ejv.task_vertices[:SUBTASKS_SHOWN]:
            reads = "; ".join(f"[{_short(g.result.producer.id)}] subtasks {g.start}..{g.end - 1}"
                              for g in ev.consumed_partition_groups)
            state = f"{ev.state.value} attempt {ev.current_execution.attempt_number}"
            lines.append(f"      {ev.name}: {state}" + (f", reads {reads}" if reads else ""))
        hidden = ejv.parallelism - SUBTASKS_SHOWN
        if hidden > 0:
            lines.append(f"      ... and {hidden} more subtasks")
    return "\n".join(lines)


def physical_plan_text(graph: ExecutionGraph, plan: SlotPlan) -> str:
    lines = [f"Physical plan: {plan.total_slots} slots on {plan.total_executors} executors"]
    for e in plan.executors:
        lines.append(f"  slot sharing group {e.slot_sharing_group!r}: "
                     f"{plan.slots[e.slot_sharing_group]} slots -> {e.count} x executor "
                     f"({e.slots_per_executor} slots, cpu {e.cpu}, memory {e.memory})")
    for ejv in graph.job_vertices.values():
        lines.append(f"  [{_short(ejv.id)}] {ejv.job_vertex.name}")
        for ev in ejv.task_vertices[:SUBTASKS_SHOWN]:
            parts = [f"slot {ejv.job_vertex.slot_sharing_group}/{ev.subtask_index}"]
            parts += [f"ResultPartition with {p.num_subpartitions} subpartitions"
                      for p in result_partitions(ev)]
            parts += [f"InputGate with {g.num_channels} channels" for g in input_gates(ev)]
            lines.append(f"      {ev.name}: " + ", ".join(parts))
        hidden = ejv.parallelism - SUBTASKS_SHOWN
        if hidden > 0:
            lines.append(f"      ... and {hidden} more subtasks")
    return "\n".join(lines)


def plan_text(job: CompiledJob, layer: Layer) -> str:
    sections: dict[Layer, Callable[[], str]] = {
        Layer.STREAM: lambda: stream_graph_text(job.stream_graph),
        Layer.JOB: lambda: job_graph_text(job.job_graph),
        Layer.EXECUTION: lambda: execution_graph_text(job.execution_graph),
        Layer.PHYSICAL: lambda: physical_plan_text(job.execution_graph, job.slot_plan),
    }
    text = ("\n\n".join(render() for render in sections.values()) if layer is Layer.ALL
            else sections[layer]())
    notes = [f"note: {note}" for note in job.stream_graph.notes]
    return "\n\n".join([text, "\n".join(notes)]) if notes else text
