"""The operator's Prometheus metrics: names, types and labels as scraped (docs/metrics.md)."""

from __future__ import annotations

import urllib.request

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from dataflow_engine.graph.states import ExecutionState, JobStatus
from dataflow_operator.controller import JobRecord
from dataflow_operator.metrics import Metrics
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status.model import DataflowJobStatus, VertexStatus
from kube_helpers import free_port

pytestmark = pytest.mark.unit

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _families(text: str) -> dict[str, str]:
    # prometheus_client also exports a `<name>_created` timestamp per series; the text
    # format's parser reads those of unlabelled histograms as gauges of their own.
    return {f.name: f.type for f in text_string_to_metric_families(text)
            if not f.name.endswith("_created")}


def _samples(text: str) -> Samples:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def _scrape(metrics: Metrics) -> str:
    return generate_latest(metrics.registry).decode()


def _record(name: str, job_status: JobStatus | None, *states: dict[str, int]) -> JobRecord:
    vertices = [VertexStatus(id=f"v{i}", name=f"vertex {i}", parallelism=sum(s.values()),
                             states=s) for i, s in enumerate(states)]
    record = JobRecord(JobRef(name, "team-a", f"uid-{name}"))
    record.status = DataflowJobStatus(job_status=job_status, vertices=vertices)
    return record


def test_every_metric_is_registered_with_its_type() -> None:
    families = _families(_scrape(Metrics()))
    assert {k: v for k, v in families.items() if k.startswith("dataflow_")} == {
        "dataflow_operator_errors": "counter",
        "dataflow_operator_reconciles": "counter",
        "dataflow_operator_reconcile_seconds": "histogram",
        "dataflow_operator_status_patch_seconds": "histogram",
        "dataflow_operator_jobs": "gauge",
        "dataflow_operator_execution_vertices": "gauge",
        "dataflow_operator_driver_restarts": "counter",
        "dataflow_operator_jobs_ended": "counter",
        "dataflow_operator_job_duration_seconds": "histogram",
        "dataflow_operator_leader": "gauge",
        "dataflow_operator_snapshots": "counter",
        "dataflow_job_vertex_records_in_per_second": "gauge",
        "dataflow_job_vertex_records_out_per_second": "gauge",
        "dataflow_job_vertex_busy_ratio": "gauge",
        "dataflow_job_vertex_backlog": "gauge",
        "dataflow_job_vertex_parallelism": "gauge",
    }


def test_the_process_itself_is_measured() -> None:
    families = _families(_scrape(Metrics()))
    assert families["process_resident_memory_bytes"] == "gauge"
    assert families["python_gc_collections"] == "counter"


def test_errors_are_counted_by_reason_from_zero() -> None:
    metrics = Metrics()
    metrics.error("InvalidSpec")
    metrics.error("InvalidSpec")
    metrics.error("Transient")
    errors = _by_label(_samples(_scrape(metrics)), "dataflow_operator_errors_total")
    assert errors == {"InvalidSpec": 2.0, "ProvisioningFailed": 0.0, "Transient": 1.0,
                      "ObserveFailed": 0.0, "ReadDriversFailed": 0.0, "EventPostFailed": 0.0,
                      "CleanUpFailed": 0.0}


def test_reconciles_are_counted_by_result() -> None:
    metrics = Metrics()
    for result in ("ok", "ok", "transient", "failed"):
        metrics.reconciled(result)
    samples = _samples(_scrape(metrics))
    counted = {labels[0][1]: value for (name, labels), value in samples.items()
               if name == "dataflow_operator_reconciles_total"}
    assert counted == {"ok": 2.0, "transient": 1.0, "failed": 1.0}


def test_reconcile_and_status_patch_latencies_are_histograms() -> None:
    metrics = Metrics()
    metrics.reconcile_seconds(0.2)
    metrics.reconcile_seconds(3.0)
    metrics.status_patched(0.004)
    samples = _samples(_scrape(metrics))
    reconcile = "dataflow_operator_reconcile_seconds"
    assert samples[(f"{reconcile}_count", ())] == 2
    assert samples[(f"{reconcile}_sum", ())] == pytest.approx(3.2)
    assert samples[(f"{reconcile}_bucket", (("le", "0.25"),))] == 1
    assert samples[(f"{reconcile}_bucket", (("le", "+Inf"),))] == 2
    patch = "dataflow_operator_status_patch_seconds"
    assert samples[(f"{patch}_count", ())] == 1
    assert samples[(f"{patch}_bucket", (("le", "0.005"),))] == 1


def _by_label(samples: Samples, name: str) -> dict[str, float]:
    return {labels[0][1]: value for (sample, labels), value in samples.items() if sample == name}


def test_jobs_by_job_status_and_vertices_by_execution_state() -> None:
    metrics = Metrics()
    metrics.jobs([
        _record("a", JobStatus.RUNNING, {"RUNNING": 3}, {"RUNNING": 1, "DEPLOYING": 1}),
        _record("b", JobStatus.RUNNING, {"FINISHED": 2}),
        _record("c", JobStatus.FAILED, {"FAILED": 1, "CANCELED": 3}),
        _record("d", None),
    ])
    samples = _samples(_scrape(metrics))
    jobs = _by_label(samples, "dataflow_operator_jobs")
    # Every JobStatus is exported, zeros included, so that rates and absent series behave.
    assert set(jobs) == {s.value for s in JobStatus} | {"UNKNOWN"}
    assert {k: v for k, v in jobs.items() if v} == {"RUNNING": 2, "FAILED": 1, "UNKNOWN": 1}
    vertices = _by_label(samples, "dataflow_operator_execution_vertices")
    assert set(vertices) == {s.value for s in ExecutionState}
    assert {k: v for k, v in vertices.items() if v} == {
        "RUNNING": 4, "DEPLOYING": 1, "FINISHED": 2, "FAILED": 1, "CANCELED": 3}


def test_gauges_follow_the_current_jobs() -> None:
    metrics = Metrics()
    metrics.jobs([_record("a", JobStatus.RUNNING, {"RUNNING": 2}),
                  _record("b", JobStatus.CREATED, {"CREATED": 4})])
    metrics.jobs([_record("a", JobStatus.FINISHED, {"FINISHED": 2})])
    samples = _samples(_scrape(metrics))
    jobs = _by_label(samples, "dataflow_operator_jobs")
    assert {k: v for k, v in jobs.items() if v} == {"FINISHED": 1}
    vertices = _by_label(samples, "dataflow_operator_execution_vertices")
    assert {k: v for k, v in vertices.items() if v} == {"FINISHED": 2}


def _continuous(name: str, *rates: tuple[float, float, int | None]) -> JobRecord:
    """A running continuous job whose vertex i has (records in/s, busy ratio, backlog)."""
    record = _record(name, JobStatus.RUNNING, *({"RUNNING": 2} for _ in rates))
    record.status = record.status.model_copy(update={"vertices": [
        vertex.model_copy(update={"records_in_per_second": rate, "records_out_per_second": rate,
                                  "busy_ratio": busy, "backlog": backlog})
        for vertex, (rate, busy, backlog) in zip(record.status.vertices, rates, strict=True)]})
    return record


def test_vertex_gauges_follow_the_continuous_jobs_vertices() -> None:
    metrics = Metrics()
    metrics.jobs([_continuous("a", (500.0, 0.1, 40), (480.0, 0.9, None)),
                  _continuous("b", (10.0, 0.01, None)),
                  _record("batch", JobStatus.RUNNING, {"RUNNING": 2})])  # reports no rates
    samples = _samples(_scrape(metrics))

    def series(metric: str) -> dict[tuple[str, str], float]:
        return {(dict(labels)["job"], dict(labels)["vertex"]): value
                for (name, labels), value in samples.items() if name == metric}

    assert series("dataflow_job_vertex_busy_ratio") == {
        ("a", "v0"): 0.1, ("a", "v1"): 0.9, ("b", "v0"): 0.01}
    assert series("dataflow_job_vertex_records_in_per_second")[("a", "v1")] == 480
    assert series("dataflow_job_vertex_backlog") == {("a", "v0"): 40}  # sources only
    assert series("dataflow_job_vertex_parallelism") == {
        ("a", "v0"): 2, ("a", "v1"): 2, ("b", "v0"): 2}
    assert {dict(labels)["namespace"] for (name, labels) in samples
            if name.startswith("dataflow_job_vertex_")} == {"team-a"}

    suspended = _continuous("b", (10.0, 0.01, None))
    suspended.status = suspended.status.model_copy(update={"job_status": JobStatus.SUSPENDED})
    metrics.jobs([_continuous("a", (500.0, 0.2, None), (480.0, 0.9, None)), suspended])
    samples = _samples(_scrape(metrics))
    assert series("dataflow_job_vertex_busy_ratio") == {("a", "v0"): 0.2, ("a", "v1"): 0.9}
    assert series("dataflow_job_vertex_backlog") == {}
    metrics.jobs([])  # every job deleted
    samples = _samples(_scrape(metrics))
    assert not any(name.startswith("dataflow_job_vertex_") for name, _ in samples)


def test_each_operator_has_a_registry_of_its_own() -> None:
    first, second = Metrics(), Metrics()
    first.reconciled("ok")
    assert ("dataflow_operator_reconciles_total", (("result", "ok"),)) not in _samples(
        _scrape(second))


def test_serve_exposes_the_registry_on_metrics_path() -> None:
    metrics = Metrics()
    metrics.reconciled("ok")
    port = free_port()
    metrics.serve(port)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        assert response.status == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    assert _samples(text)[("dataflow_operator_reconciles_total", (("result", "ok"),))] == 1


def test_restarts_endings_and_durations_are_counted_once_per_status_change() -> None:
    metrics = Metrics()
    created = DataflowJobStatus(job_status=JobStatus.CREATED)
    running = created.model_copy(update={"job_status": JobStatus.RUNNING,
                                         "start_time": "2026-11-23T10:00:00Z"})
    restarting = running.model_copy(update={"job_status": JobStatus.RESTARTING, "restarts": 1})
    failed = restarting.model_copy(update={"job_status": JobStatus.FAILED, "restarts": 2,
                                           "end_time": "2026-11-23T10:07:30Z"})
    for before, after in ((created, running), (running, restarting), (restarting, failed),
                          (failed, failed)):  # a rewrite of the same status counts nothing
        metrics.status_changed(before, after)
    finished = running.model_copy(update={"job_status": JobStatus.FINISHED,
                                          "end_time": "2026-11-23T10:00:20Z"})
    metrics.status_changed(running, finished)

    samples = _samples(_scrape(metrics))
    assert samples[("dataflow_operator_driver_restarts_total", ())] == 2
    assert _by_label(samples, "dataflow_operator_jobs_ended_total") == {
        "FINISHED": 1, "FAILED": 1, "CANCELED": 0}
    durations = "dataflow_operator_job_duration_seconds"
    assert samples[(f"{durations}_sum", (("job_status", "FAILED"),))] == 450
    assert samples[(f"{durations}_sum", (("job_status", "FINISHED"),))] == 20
    assert samples[(f"{durations}_bucket", (("job_status", "FINISHED"), ("le", "30.0")))] == 1
    assert samples[(f"{durations}_bucket", (("job_status", "FINISHED"), ("le", "15.0")))] == 0
