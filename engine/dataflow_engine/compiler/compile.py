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
        return _continuous(self.job_graph, self.stream_graph)


def _check_autoscaler(spec: DataflowJobSpec, job_graph: JobGraph,
                      stream_graph: StreamGraph) -> None:
    """It scales a continuous job's JobVertices, named by one of their operators."""
    autoscaler = spec.job.autoscaler
    if not autoscaler.enabled:
        return
    problems = []
    if not _continuous(job_graph, stream_graph):
        problems.append(SpecProblem("spec.job.autoscaler.enabled", "the autoscaler scales a "
                                    "continuous job (STREAMING, with an unbounded source); "
                                    "this one runs to the end of its input"))
    chained = {node.name for vertex in job_graph.vertices for node in vertex.operators}
    problems += [SpecProblem(f"spec.job.autoscaler.vertices[{i}].operator",
                             f"{v.operator!r} is part of no JobVertex (a union): name an "
                             "operator it feeds or is fed by")
                 for i, v in enumerate(autoscaler.vertices)
                 if v.operator not in chained and any(o.name == v.operator
                                                      for o in spec.pipeline)]
    if problems:
        raise SpecError(problems)


def _continuous(job_graph: JobGraph, stream_graph: StreamGraph) -> bool:
    return job_graph.runtime_mode is RuntimeMode.STREAMING and any(
        is_continuous(node.operator_type, node.args) for node in stream_graph.nodes.values())


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
    _check_autoscaler(spec, job_graph, stream_graph)
    execution_graph = build_execution_graph(job_graph)
    slot_plan = plan_slots(execution_graph, spec.group_resources(), spec.slots_per_executor)
    return CompiledJob(job_name, spec, stream_graph, job_graph, execution_graph, slot_plan)
