"""Spec to plan: validation, then the four graph layers in order."""

from __future__ import annotations

from dataclasses import dataclass

from dataflow_engine.compiler.validation import validate_spec
from dataflow_engine.errors import SpecError, SpecProblem
from dataflow_engine.graph.deployment import SlotPlan, plan_slots
from dataflow_engine.graph.execution_graph import ExecutionGraph, build_execution_graph
from dataflow_engine.graph.job_graph import JobGraph, StreamingJobGraphGenerator
from dataflow_engine.graph.stream_graph import StreamGraph, StreamGraphGenerator
from dataflow_engine.spec.catalog import is_continuous
from dataflow_engine.spec.model import DataflowJobSpec, RuntimeMode


@dataclass(frozen=True)
class CompiledJob:
    job_name: str
    spec: DataflowJobSpec
    stream_graph: StreamGraph
    job_graph: JobGraph
    execution_graph: ExecutionGraph
    slot_plan: SlotPlan

    @property
    def continuous(self) -> bool:
        """Runs in epochs: a STREAMING job with a source whose input arrives over time."""
        return self.job_graph.runtime_mode is RuntimeMode.STREAMING and any(
            is_continuous(node.operator_type, node.args)
            for node in self.stream_graph.nodes.values())


def compile_job(spec: DataflowJobSpec, job_name: str,
                max_execution_vertices: int | None = None) -> CompiledJob:
    """Compiles a spec; raises :class:`~dataflow_engine.errors.SpecError` naming each bad field.

    Only the topology is compiled: function references are checked by syntax, never imported.
    A job of more than `max_execution_vertices` subtasks is refused before its ExecutionGraph
    is built (that graph is what grows with them).
    """
    validate_spec(spec)
    stream_graph = StreamGraphGenerator(spec, job_name).generate()
    job_graph = StreamingJobGraphGenerator(stream_graph,
                                           spec.parallelism_overrides).create_job_graph()
    subtasks = sum(vertex.parallelism for vertex in job_graph.vertices)
    if max_execution_vertices is not None and subtasks > max_execution_vertices:
        raise SpecError([SpecProblem("spec.parallelism", f"the job has {subtasks} "
                                     "ExecutionVertices (subtasks); at most "
                                     f"{max_execution_vertices} are allowed per job "
                                     "(dataflow operator --max-execution-vertices)")])
    execution_graph = build_execution_graph(job_graph)
    slot_plan = plan_slots(execution_graph, spec.group_resources(), spec.slots_per_executor)
    return CompiledJob(job_name, spec, stream_graph, job_graph, execution_graph, slot_plan)
