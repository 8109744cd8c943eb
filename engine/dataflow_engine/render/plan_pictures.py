"""DOT and Mermaid pictures: the StreamGraph with chains outlined, and the JobGraph."""

from __future__ import annotations

import json

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.graph.job_graph import JobGraph
from dataflow_engine.render import Layer


def _quote(text: str) -> str:
    return json.dumps(text)


def _node_label(name: str, operator_name: str, parallelism: int) -> str:
    return f"{name}\\n{operator_name}\\np={parallelism}"


def stream_graph_dot(graph: JobGraph) -> list[str]:
    """StreamNodes grouped into one cluster per chain (JobVertex)."""
    lines = []
    for i, vertex in enumerate(graph.vertices):
        lines.append(f"  subgraph cluster_{i} {{")
        lines.append(f"    label={_quote(vertex.name)}; style=rounded; color=gray40;")
        for n in vertex.operators:
            label = _node_label(n.name, n.operator_name, n.parallelism)
            lines.append(f'    s{n.id} [label="{label}"];')
        lines.append("  }")
    for vertex in graph.vertices:
        for n in vertex.operators:
            for e in n.out_edges:
                style = ' style=bold' if e in vertex.chained_edges else ""
                lines.append(f'  s{e.source_id} -> s{e.target_id} '
                             f'[label="{e.partitioner.value}"{style}];')
    return lines


def job_graph_dot(graph: JobGraph) -> list[str]:
    lines = []
    for v in graph.vertices:
        label = f"{v.name}\\nparallelism {v.parallelism}\\n{v.slot_sharing_group}"
        lines.append(f'  j_{v.id[:8]} [shape=box label="{label}"];')
    for e in graph.edges:
        lines.append(f'  j_{e.source.producer.id[:8]} -> j_{e.target.id[:8]} '
                     f'[label="{e.partitioner.value}\\n{e.distribution_pattern.value}"];')
    return lines


def plan_dot(job: CompiledJob, layer: Layer) -> str:
    body: list[str] = []
    if layer in (Layer.STREAM, Layer.ALL):
        body += stream_graph_dot(job.job_graph)
    if layer in (Layer.JOB, Layer.ALL):
        body += job_graph_dot(job.job_graph)
    if not body:
        raise ValueError("pictures exist for the stream and job layers")
    return "\n".join([f"digraph {_quote(job.job_name)} {{", "  rankdir=LR;", *body, "}"])


def plan_mermaid(job: CompiledJob, layer: Layer) -> str:
    graph = job.job_graph
    lines = ["flowchart LR"]
    if layer in (Layer.STREAM, Layer.ALL):
        for i, vertex in enumerate(graph.vertices):
            lines.append(f'  subgraph chain{i}["{vertex.name}"]')
            for n in vertex.operators:
                lines.append(f'    s{n.id}["{n.name}<br/>{n.operator_name}<br/>p={n.parallelism}"]')
            lines.append("  end")
        for vertex in graph.vertices:
            for n in vertex.operators:
                for e in n.out_edges:
                    arrow = "==>" if e in vertex.chained_edges else "-->"
                    lines.append(f"  s{e.source_id} {arrow}|{e.partitioner.value}| s{e.target_id}")
    if layer in (Layer.JOB, Layer.ALL):
        for v in graph.vertices:
            lines.append(f'  j{v.id[:8]}["{v.name}<br/>parallelism {v.parallelism}"]')
        for job_edge in graph.edges:
            lines.append(f"  j{job_edge.source.producer.id[:8]} -->|{job_edge.partitioner.value} "
                         f"{job_edge.distribution_pattern.value}| j{job_edge.target.id[:8]}")
    if len(lines) == 1:
        raise ValueError("pictures exist for the stream and job layers")
    return "\n".join(lines)
