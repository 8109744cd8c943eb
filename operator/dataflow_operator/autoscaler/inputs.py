"""The autoscaler's inputs, from what the operator knows of a job: the JobGraph it compiled
(vertices, edges, which are keyed), the driver's status document (cumulative counters, Kafka
partitions) and the job's status (health, its deployment's start)."""

from __future__ import annotations

from dataflow_engine.compiler.compile import CompiledJob
from dataflow_engine.graph.job_graph import InvokableKind
from dataflow_engine.graph.states import ExecutionState
from dataflow_engine.graph.stream_graph import PartitionerKind
from dataflow_engine.rest import DriverStatusDocument
from dataflow_engine.spec.model import AutoscalerSpec, duration_seconds
from dataflow_operator.autoscaler.algorithm import AutoscalerConfig, JobVertex, Topology
from dataflow_operator.autoscaler.policy import JobHealth, MetricSample, VertexSample
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.model import DataflowJobStatus

#: Samples the status keeps of a window: its rates need the first and the last; those between
#: let the window slide in steps of a twelfth.
STATUS_SAMPLES = 12
#: Decisions the status keeps.
STATUS_DECISIONS = 10
#: Vertex entries (a vertex in a sample, or a change in a decision) the status keeps at most,
#: about 100 bytes each: with many vertices, fewer samples and decisions (never fewer than a
#: window's two ends and the latest decision), so the status stays within its budget.
STATUS_VERTEX_ENTRIES = 1200


def config(spec: AutoscalerSpec, compiled: CompiledJob) -> AutoscalerConfig:
    """The algorithm's options; a vertex's bounds are given by one of its operators."""
    graph = compiled.job_graph
    return AutoscalerConfig(
        target_utilization=spec.target_utilization,
        utilization_boundary=spec.utilization_boundary,
        catch_up_duration=duration_seconds(spec.catch_up_duration),
        restart_time=duration_seconds(spec.restart_time),
        min_parallelism=spec.min_parallelism, max_parallelism=spec.max_parallelism,
        vertex_bounds={graph.vertex_of(v.operator).id: (v.min_parallelism, v.max_parallelism)
                       for v in spec.vertices},
        max_scale_up_factor=spec.max_scale_up_factor,
        max_scale_down_factor=spec.max_scale_down_factor,
        metrics_window=duration_seconds(spec.metrics_window),
        stabilization_interval=duration_seconds(spec.stabilization_interval),
        scale_down_delay=duration_seconds(spec.scale_down_delay),
        max_samples=kept(STATUS_SAMPLES, 2, len(graph.vertices)),
        max_decisions=kept(STATUS_DECISIONS, 1, len(graph.vertices)))


def kept(most: int, least: int, vertices: int) -> int:
    """How many samples (or decisions) of a job of ``vertices`` JobVertices the status keeps."""
    return max(least, min(most, STATUS_VERTEX_ENTRIES // (2 * max(1, vertices))))


def topology(compiled: CompiledJob, runner: DriverStatusDocument) -> Topology:
    """The running JobGraph: a vertex fed by a keyBy is keyed (its parallelism should divide
    its key groups); a Kafka source reads the partitions the driver lists for it."""
    partitions: dict[str, int] = {}
    for partition in runner.checkpoints.kafka_partitions if runner.checkpoints else ():
        partitions[partition.source] = partitions.get(partition.source, 0) + 1
    vertices, edges = [], []
    for vertex in compiled.job_graph.vertices:
        vertices.append(JobVertex(
            vertex.id, vertex.parallelism, vertex.max_parallelism,
            keyed=any(e.partitioner is PartitionerKind.HASH for e in vertex.inputs),
            source_partitions=partitions.get(vertex.head.name)))
        edges += [(e.source.producer.id, vertex.id) for e in vertex.inputs]
    return Topology(tuple(vertices), tuple(dict.fromkeys(edges)))


def sample(compiled: CompiledJob, runner: DriverStatusDocument, now: float) -> MetricSample:
    """Every vertex's counters as the latest epoch ended (at that time: rates over whole
    epochs); none before an epoch of the driver ended (its first may take long, catching up
    a backlog). A source's records in are what its head read (the records its chain
    emitted); the records that reached its Kafka partitions are their end offsets when the
    latest epoch started (the next offsets it reads from)."""
    if runner.metrics_time is None:
        return MetricSample(now, {})
    reported = {v.id: v for v in runner.vertices}
    kafka = runner.checkpoints.kafka_partitions if runner.checkpoints else ()
    vertices = {}
    for vertex in compiled.job_graph.vertices:
        info = reported.get(vertex.id)
        if info is None:
            continue
        source = vertex.invokable is InvokableKind.SOURCE_STREAM_TASK
        read = info.operators[0].records_out if source and info.operators else info.records_in
        ends = [p.offset for p in kafka if p.source == vertex.head.name]
        vertices[vertex.id] = VertexSample(
            records_in=read, records_out=info.records_out,
            busy_ms=sum(s.busy_ms for s in info.subtasks),
            arrived=sum(ends) if ends else None,
            backlog=info.backlog if source else None)
    return MetricSample(runner.metrics_time / 1000, vertices)


def health(status: DataflowJobStatus, runner: DriverStatusDocument, now: float) -> JobHealth:
    """The running deployment's: its JobStatus, whether every subtask runs, its checkpoints
    failed in a row, and since when it runs: the later of its deployment's start and its
    driver's (a restart within the deployment stabilizes again too)."""
    assert status.job_status is not None
    deployment = status.deployment
    since = max(cond.parse_time(deployment.since).timestamp()
                if deployment is not None and deployment.since else now,
                runner.start_time / 1000)
    running = bool(status.vertices) and all(
        v.states.get(ExecutionState.RUNNING.value, 0) == v.parallelism for v in status.vertices)
    failures = runner.checkpoints.consecutive_failures if runner.checkpoints else 0
    return JobHealth(status.job_status, running, failures, since)
