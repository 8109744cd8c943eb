"""Prometheus metrics of the operator (served on ``--metrics-port``, path ``/metrics``)."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Collection
from typing import TYPE_CHECKING

from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    start_http_server,
)

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_operator.status.conditions import parse_time

if TYPE_CHECKING:
    from dataflow_operator.controller import JobRecord
    from dataflow_operator.status.model import DataflowJobStatus


#: Reasons of ``dataflow_operator_errors_total``; each series exists from the start at 0.
ERROR_REASONS = ("InvalidSpec", "ProvisioningFailed", "Transient", "ObserveFailed",
                 "ReadDriversFailed", "EventPostFailed", "CleanUpFailed")


#: Labels of the per-vertex gauges: bounded by the jobs' vertices (a vertex's id, not its name).
VERTEX_LABELS = ("namespace", "job", "vertex")
#: JobStatuses a job ends in: the labels of the ended-jobs counter and duration histogram.
TERMINAL = (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED)
#: A batch job takes seconds to hours.
JOB_DURATION_BUCKETS = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600,
                        24 * 3600)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        for collector in (PROCESS_COLLECTOR, GC_COLLECTOR, PLATFORM_COLLECTOR):
            self.registry.register(collector)
        self._errors = Counter("dataflow_operator_errors", "Operator errors by reason.",
                               ["reason"], registry=self.registry)
        for reason in ERROR_REASONS:
            self._errors.labels(reason)
        self._reconciles = Counter(
            "dataflow_operator_reconciles", "Spec reconciles by result (ok, transient, failed).",
            ["result"], registry=self.registry)
        self._reconcile_seconds = Histogram(
            "dataflow_operator_reconcile_seconds", "Time to compile and provision one job.",
            registry=self.registry)
        self._status_patch_seconds = Histogram(
            "dataflow_operator_status_patch_seconds", "Latency of one status patch.",
            registry=self.registry)
        self._jobs = Gauge("dataflow_operator_jobs", "DataflowJobs by JobStatus.",
                           ["job_status"], registry=self.registry)
        self._vertices = Gauge("dataflow_operator_execution_vertices",
                               "ExecutionVertices of all jobs by ExecutionState.", ["state"],
                               registry=self.registry)
        self._restarts = Counter(
            "dataflow_operator_driver_restarts",
            "Drivers restarted by a job's restart strategy.", registry=self.registry)
        self._ended = Counter(
            "dataflow_operator_jobs_ended", "Jobs that reached a terminal JobStatus.",
            ["job_status"], registry=self.registry)
        self._durations = Histogram(
            "dataflow_operator_job_duration_seconds",
            "From a job's start (RUNNING) to its end, by terminal JobStatus.", ["job_status"],
            buckets=JOB_DURATION_BUCKETS, registry=self.registry)
        for job_status in TERMINAL:
            self._ended.labels(job_status.value)
            self._durations.labels(job_status.value)
        self._leader = Gauge(
            "dataflow_operator_leader",
            "1 while this replica leads (or runs without leader election), else 0.",
            registry=self.registry)
        self._leader.set(1)
        #: Per JobVertex of each continuous job: labels namespace, job, vertex (its id).
        self._vertex_gauges = {
            "records_in_per_second": Gauge(
                "dataflow_job_vertex_records_in_per_second",
                "Records in per second over the last epochs, summed over subtasks.",
                VERTEX_LABELS, registry=self.registry),
            "records_out_per_second": Gauge(
                "dataflow_job_vertex_records_out_per_second",
                "Records out per second over the last epochs, summed over subtasks.",
                VERTEX_LABELS, registry=self.registry),
            "busy_ratio": Gauge(
                "dataflow_job_vertex_busy_ratio",
                "Busy time per second of wall time over the last epochs, mean of subtasks.",
                VERTEX_LABELS, registry=self.registry),
            "backlog": Gauge(
                "dataflow_job_vertex_backlog",
                "A Kafka source's records waiting in its partitions.", VERTEX_LABELS,
                registry=self.registry),
            "parallelism": Gauge(
                "dataflow_job_vertex_parallelism", "Subtasks of the vertex.", VERTEX_LABELS,
                registry=self.registry),
        }
        self._vertex_series: dict[str, set[tuple[str, str, str]]] = {
            name: set() for name in self._vertex_gauges}
        self._snapshots = Counter(
            "dataflow_operator_snapshots",
            "DataflowSnapshots by kind (savepoint, checkpoint) and outcome (triggered "
            "periodically, completed, failed, abandoned, expired, disposed).",
            ["kind", "outcome"], registry=self.registry)

    def serve(self, port: int) -> None:
        start_http_server(port, registry=self.registry)

    def error(self, reason: str) -> None:
        self._errors.labels(reason).inc()

    def reconciled(self, result: str) -> None:
        self._reconciles.labels(result).inc()

    def reconcile_seconds(self, seconds: float) -> None:
        self._reconcile_seconds.observe(seconds)

    def status_patched(self, seconds: float) -> None:
        self._status_patch_seconds.observe(seconds)

    def jobs(self, records: Collection[JobRecord]) -> None:
        by_status: Tally[str] = Tally()
        by_state: Tally[str] = Tally()
        for record in records:
            status = record.status
            by_status[status.job_status.value if status.job_status else "UNKNOWN"] += 1
            for vertex in status.vertices:
                by_state.update(vertex.states)
        for job_status in [*JobStatus, "UNKNOWN"]:
            value = job_status.value if isinstance(job_status, JobStatus) else job_status
            self._jobs.labels(value).set(by_status[value])
        for state in ExecutionState:
            self._vertices.labels(state.value).set(by_state[state.value])
        self._vertex_values(records)

    def _vertex_values(self, records: Collection[JobRecord]) -> None:
        """The per-vertex gauges of the running jobs that report them; the series of a job or
        vertex gone or no longer running, or of a value no longer reported, are removed (their
        labels stay bounded by the current jobs' vertices)."""
        values: dict[str, dict[tuple[str, str, str], float]] = {
            name: {} for name in self._vertex_gauges}
        for record in records:
            if record.status.job_status is not JobStatus.RUNNING:
                continue  # its last rates say nothing of now
            for vertex in record.status.vertices:
                if vertex.busy_ratio is None:
                    continue  # not a continuous job's
                labels = (record.ref.namespace, record.ref.name, vertex.id)
                for name in values:
                    value = getattr(vertex, name)
                    if value is not None:
                        values[name][labels] = value
        for name, gauge in self._vertex_gauges.items():
            for gone in self._vertex_series[name] - values[name].keys():
                gauge.remove(*gone)
            for labels, value in values[name].items():
                gauge.labels(*labels).set(value)
            self._vertex_series[name] = set(values[name])

    def snapshot(self, kind: str, outcome: str) -> None:
        self._snapshots.labels(kind, outcome).inc()

    def leading(self, leading: bool) -> None:
        self._leader.set(1 if leading else 0)

    def status_changed(self, before: DataflowJobStatus, after: DataflowJobStatus) -> None:
        """Counts what one status write records: driver restarts, and a job's end with its
        duration. A status read back after an operator restart counts nothing again."""
        if after.restarts > before.restarts:
            self._restarts.inc(after.restarts - before.restarts)
        ended = after.job_status
        if ended in TERMINAL and ended is not before.job_status:
            assert ended is not None
            self._ended.labels(ended.value).inc()
            if after.start_time and after.end_time:
                seconds = (parse_time(after.end_time)
                           - parse_time(after.start_time)).total_seconds()
                self._durations.labels(ended.value).observe(max(0.0, seconds))
