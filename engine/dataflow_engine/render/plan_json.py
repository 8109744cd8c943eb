"""The JSON plan: a stable contract (documented in docs/plan-json.md) the operator also consumes.

The arrays with one item per subtask (``executionVertices``, ``tasks``) are iterators, made as
:func:`~dataflow_engine.render.json_stream.write_json` writes them.
"""

from __future__ import annotations

from typing import Any

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.graph.deployment import SlotPlan, input_gates, result_partitions, slot_of
from dataflow_engine.graph.execution_graph import ExecutionGraph, ExecutionVertex
from dataflow_engine.graph.job_graph import JobGraph
from dataflow_engine.graph.stream_graph import StreamGraph
from dataflow_engine.render import Layer
from dataflow_engine.types.typeinfo import type_text

SCHEMA_VERSION = 1


def stream_graph_json(graph: StreamGraph) -> dict[str, Any]:
    return {
        "jobName": graph.job_name,
        "runtimeMode": graph.runtime_mode.value,
        "chainingEnabled": graph.chaining_enabled,
        "streamNodes": [
            {
                "id": n.id,
                "name": n.name,
                "uid": n.uid,
                "type": n.operator_type.value,
                "operatorName": n.operator_name,
                "parallelism": n.parallelism,
                "maxParallelism": n.max_parallelism,
                "slotSharingGroup": n.slot_sharing_group,
                "chainingStrategy": n.chaining_strategy.value,
                **({"outputType": type_text(n.output_type)}
                   if n.output_type is not None else {}),
            }
            for n in graph.nodes.values()
        ],
        "streamEdges": [
            {
                "source": e.source_id,
                "target": e.target_id,
                "partitioner": e.partitioner.value,
                **({"keyBy": e.key_selector} if e.key_selector is not None else {}),
                **({"keyType": type_text(e.key_type)} if e.key_type is not None else {}),
                **({"sideOutput": e.output_tag} if e.output_tag is not None else {}),
                "exchangeMode": e.exchange_mode.value,
                "typeNumber": e.type_number,
            }
            for e in graph.edges
        ],
    }


def job_graph_json(graph: JobGraph) -> dict[str, Any]:
    return {
        "jobName": graph.job_name,
        "runtimeMode": graph.runtime_mode.value,
        "jobVertices": [
            {
                "id": v.id,
                "name": v.name,
                "operators": [n.name for n in v.operators],
                "operatorIds": v.operator_ids,
                "parallelism": v.parallelism,
                "maxParallelism": v.max_parallelism,
                "slotSharingGroup": v.slot_sharing_group,
                "invokable": v.invokable.value,
            }
            for v in graph.vertices
        ],
        "jobEdges": [
            {
                "source": e.source.producer.id,
                "target": e.target.id,
                "partitioner": e.partitioner.value,
                "distributionPattern": e.distribution_pattern.value,
                "resultPartitionType": e.source.result_type.value,
                "intermediateDataSet": e.source.id,
            }
            for e in graph.edges
        ],
    }


def execution_graph_json(graph: ExecutionGraph) -> dict[str, Any]:
    return {
        "numExecutionVertices": graph.num_execution_vertices,
        "numPipelinedRegions": len(graph.pipelined_regions()),
        "executionVertices": (
            {
                "jobVertex": ejv.id,
                "subtask": ev.subtask_index,
                "name": ev.name,
                "inputs": [
                    {"producer": g.result.producer.id, "subtasks": [[g.start, g.end]]}
                    for g in ev.consumed_partition_groups
                ],
            }
            for ejv in graph.job_vertices.values()
            for ev in ejv.task_vertices
        ),
    }


def slot_plan_json(plan: SlotPlan) -> dict[str, Any]:
    """Slots per slot sharing group and the executors that hold them."""
    return {
        "slots": dict(plan.slots),
        "totalSlots": plan.total_slots,
        "executors": [
            {
                "slotSharingGroup": e.slot_sharing_group,
                "count": e.count,
                "slotsPerExecutor": e.slots_per_executor,
                "cpu": e.cpu,
                "memory": e.memory,
            }
            for e in plan.executors
        ],
    }


def physical_plan_json(graph: ExecutionGraph, plan: SlotPlan) -> dict[str, Any]:
    return {**slot_plan_json(plan),
            "tasks": (_task_json(ev) for ev in graph.execution_vertices())}


def _task_json(vertex: ExecutionVertex) -> dict[str, Any]:
    group, index = slot_of(vertex)
    return {
        "jobVertex": vertex.job_vertex.id,
        "subtask": vertex.subtask_index,
        "slot": {"slotSharingGroup": group, "index": index},
        "resultPartitions": [
            {"result": p.result_id, "numSubpartitions": p.num_subpartitions,
             "consumers": list(p.consumer_range)}
            for p in result_partitions(vertex)
        ],
        "inputGates": [
            {"result": g.result_id, "producer": g.producer_job_vertex,
             "numChannels": g.num_channels, "producers": list(g.producer_range)}
            for g in input_gates(vertex)
        ],
    }


def plan_json(job: CompiledJob, layer: Layer) -> dict[str, Any]:
    if layer is Layer.STREAM:
        return stream_graph_json(job.stream_graph)
    if layer is Layer.JOB:
        return job_graph_json(job.job_graph)
    if layer is Layer.EXECUTION:
        return execution_graph_json(job.execution_graph)
    if layer is Layer.PHYSICAL:
        return physical_plan_json(job.execution_graph, job.slot_plan)
    return {
        "schemaVersion": SCHEMA_VERSION,
        "stream": stream_graph_json(job.stream_graph),
        "job": job_graph_json(job.job_graph),
        "execution": execution_graph_json(job.execution_graph),
        "physical": physical_plan_json(job.execution_graph, job.slot_plan),
    }
