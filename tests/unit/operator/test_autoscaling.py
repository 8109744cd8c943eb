"""The autoscaler through the controller's entry points, on fakes: a driver whose keyed vertex
is saturated is rescaled by a savepoint upgrade to the parallelism its load needs (aligned to
its key groups), the spec staying as written; an operator restart redeploys nothing; advisory
mode only recommends."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from controller_harness import STREAM, ControllerHarness, run_async
from operator_fakes import SavepointAnswer, api_error

from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import parse_status
from dataflow_operator.autoscaler.algorithm import Recommendation
from dataflow_operator.autoscaler.inputs import (
    STATUS_DECISIONS,
    STATUS_SAMPLES,
    health,
    kept,
    sample,
)
from dataflow_operator.autoscaler.policy import (
    AutoscalerMemory,
    Decision,
    MetricSample,
    VertexSample,
)
from dataflow_operator.autoscaler.scaling import applicable, scaled_spec
from dataflow_operator.autoscaler.state import status_of
from dataflow_operator.plan import build_plan
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status.conditions import parse_time
from dataflow_operator.status.model import AutoscalerStatus, DataflowJobStatus, DeploymentStatus

pytestmark = pytest.mark.unit


def _autoscaled(**options: Any) -> dict[str, Any]:
    spec = copy.deepcopy(STREAM)
    spec["job"]["autoscaler"] = {"enabled": True, "metricsWindow": "300ms",
                                 "stabilizationInterval": "0s", "scaleDownDelay": "1h",
                                 **options}
    return spec


def _vertex_ids(h: ControllerHarness, job: JobRef) -> dict[str, str]:
    return {v["operators"][0]: v["id"] for v in h.kube.status(job)["plan"]["jobVertices"]}


async def _loaded_until(h: ControllerHarness, job: JobRef, done: Any) -> dict[str, Any]:
    """Monitor cycles, a little apart, under a load the source reads cheaply (2 % busy)
    and the keyed vertex cannot keep up with (busy all the time at 1000 records/s), until
    ``done``."""
    ids = _vertex_ids(h, job)
    h.backend.driver(job).with_load({ids["events"]: (1000, 1000, 0.02),
                                     ids["sums"]: (1000, 0, 1.0)})
    for _ in range(200):
        await h.controller.monitor_cycle()
        status = h.kube.status(job)
        if done(status):
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"not done: {status.get('autoscaler')}")


@run_async
async def test_a_saturated_keyed_vertex_is_rescaled_through_a_savepoint_upgrade() -> None:
    h = ControllerHarness()
    spec = _autoscaled()
    job = await h.running(spec)
    ids = _vertex_ids(h, job)
    provisions = len(h.backend.provisions(job))

    status = await _loaded_until(h, job, lambda s: (s.get("autoscaler") or {}).get("overrides"))
    # 1000 records/s at 500 per busy second per subtask and 70 % utilization: 3 subtasks,
    # 4 to divide the 128 key groups evenly. The source, cheap, keeps its 2.
    assert status["autoscaler"]["overrides"] == {ids["sums"]: 4}
    [decision] = status["autoscaler"]["decisions"]
    [change] = decision["applied"]
    assert (change["vertex"], change["parallelism"], change["newParallelism"]) == (
        ids["sums"], 2, 4)
    assert change["trueRate"] == pytest.approx(500, rel=0.1) and not decision["advisory"]
    assert "aligned to 128 key groups" in change["reason"]
    applied = [e["message"] for e in h.kube.events if e["reason"] == "ScalingApplied"]
    assert len(applied) == 1 and applied[0].startswith("Keyed Aggregation -> Sink")

    # Carried out as a savepoint upgrade of the same generation; the spec stays as written.
    assert len(h.backend.provisions(job)) == provisions + 1
    assert any(r.get("stop") and "upgradeTo" in r for r in h.backend.requests(job))
    now = h.kube.status(job)
    assert {v["id"]: v["parallelism"] for v in now["plan"]["jobVertices"]} == {
        ids["events"]: 2, ids["sums"]: 4}
    assert now["deployedGeneration"] == 1 and now["deployment"]["restoreFrom"].startswith(
        "/savepoints/job/")
    assert h.kube.spec(job) == spec

    # An operator restart finds the rescaled deployment the one to run: nothing redeployed.
    h.backend.driver(job).run()
    await h.controller.monitor_cycle()
    h.restart_operator()
    await h.on_spec(job)
    await h.controller.monitor_cycle()
    [*_, resumed] = h.backend.provisions(job)
    assert resumed.adopted and len(h.backend.provisions(job)) == provisions + 2
    assert h.kube.status(job)["autoscaler"]["overrides"] == {ids["sums"]: 4}


@run_async
async def test_in_advisory_mode_a_decision_is_recommended_and_nothing_redeployed() -> None:
    h = ControllerHarness()
    job = await h.running(_autoscaled(advisory=True))
    provisions = len(h.backend.provisions(job))
    status = await _loaded_until(h, job, lambda s: (s.get("autoscaler") or {}).get(
        "decisions"))
    [decision] = status["autoscaler"]["decisions"]
    assert decision["advisory"] and decision["applied"][0]["newParallelism"] == 4
    assert status["autoscaler"]["overrides"] == {}
    assert [e["reason"] for e in h.kube.events].count("ScalingRecommended") == 1
    assert len(h.backend.provisions(job)) == provisions
    assert not any(r.get("stop") for r in h.backend.requests(job))


@run_async
async def test_a_refused_rescale_is_given_up_once_and_not_asked_again_every_cycle() -> None:
    h = ControllerHarness()
    job = await h.running(_autoscaled())
    h.backend.savepoint_answer["job"] = SavepointAnswer.REFUSE_UPGRADE
    provisions = len(h.backend.provisions(job))
    status = await _loaded_until(h, job, lambda s: "not deployed" in (
        (s.get("autoscaler") or {}).get("waiting") or ""))
    assert status["autoscaler"]["overrides"] == {}  # back to what runs
    assert "keeps running" in status["autoscaler"]["waiting"]
    requests = len(h.backend.requests(job))
    for _ in range(5):  # the job runs on as it was; its refusal is not asked again each cycle
        await h.controller.monitor_cycle()
    assert len(h.backend.requests(job)) == requests
    assert len(h.backend.provisions(job)) == provisions
    assert [e["reason"] for e in h.kube.events].count("ScalingFailed") == 1
    assert "ScalingApplied" not in [e["reason"] for e in h.kube.events]


@run_async
async def test_a_rescale_whose_provisioning_fails_for_now_is_retried_after_a_back_off() -> None:
    h = ControllerHarness()
    job = await h.running(_autoscaled())
    ids = _vertex_ids(h, job)
    h.backend.raise_next["provision"] = api_error(503, "the API server is restarting")
    await _loaded_until(h, job, lambda s: (s.get("autoscaler") or {}).get("overrides"))
    record = h.controller.records[("default", "job")]
    # Stopped with its savepoint, the rescaled driver not started: tried again later.
    assert record.rescale_retry_at is not None and not h.backend.has_driver(job)
    attempts = len(h.backend.provisions(job))
    for _ in range(3):
        await h.controller.monitor_cycle()  # within the back-off: nothing
    assert len(h.backend.provisions(job)) == attempts
    record.rescale_retry_at = 0.0  # its back-off passed
    await h.controller.monitor_cycle()
    assert len(h.backend.provisions(job)) == attempts + 1 and h.backend.driver(job).alive
    assert record.rescale_retry_at is None
    assert {v["id"]: v["parallelism"] for v in h.kube.status(job)["plan"]["jobVertices"]}[
        ids["sums"]] == 4
    assert [e["reason"] for e in h.kube.events].count("ScalingApplied") == 1


@run_async
async def test_a_rescale_that_fails_is_rolled_back_and_scaling_waits_for_a_spec_change() -> None:
    h = ControllerHarness()
    spec = _autoscaled()
    spec["restartStrategy"] = {"type": "fixed-delay", "attempts": 0, "delay": "0s"}
    spec["job"]["upgrade"] = {"rollbackTimeout": "1h"}
    job = await h.running(spec)
    ids = _vertex_ids(h, job)
    stable = h.kube.status(job)
    assert stable["lastStableDeployment"] == stable["deployment"]["id"]
    await _loaded_until(h, job, lambda s: (s.get("autoscaler") or {}).get("overrides"))
    rescaled = h.kube.status(job)
    savepoint = rescaled["deployment"]["restoreFrom"]
    assert rescaled["deployment"]["id"] != stable["deployment"]["id"]
    assert savepoint.startswith("/savepoints/job/") and rescaled["deployedGeneration"] == 1

    h.backend.driver(job).run()
    h.backend.driver(job).fail("driver exited with code 1: out of memory at 4 subtasks")
    await h.controller.monitor_cycle()  # FAILED for good, then rolled back
    after = h.kube.status(job)
    rolled = next(c for c in after["conditions"] if c["type"] == "RolledBack")
    assert rolled["status"] == "True" and "the rescale of generation 1 rolled back" in (
        rolled["message"])
    assert after["plan"]["hash"] == stable["plan"]["hash"]
    assert after["deployment"]["restoreFrom"] == savepoint  # the rescale's savepoint
    assert h.backend.driver(job).plan_hash == stable["plan"]["hash"]

    # The autoscaler gives its overrides up, says so once, and decides nothing more for
    # this generation; the rolled-back job runs on at its old parallelism.
    h.backend.driver(job).run()
    provisions = len(h.backend.provisions(job))
    decisions = len(h.kube.status(job)["autoscaler"]["decisions"])
    for _ in range(20):  # the load goes on, and windows would be full
        await h.controller.monitor_cycle()
        await asyncio.sleep(0.03)
    now = h.kube.status(job)
    assert now["autoscaler"]["overrides"] == {} and now["jobStatus"] == "RUNNING"
    assert now["autoscaler"]["waiting"] == (
        "generation 1 was rolled back: scaling resumes with a spec change")
    assert len(now["autoscaler"]["decisions"]) == decisions
    assert {v["id"]: v["parallelism"] for v in now["plan"]["jobVertices"]}[ids["sums"]] == 2
    assert len(h.backend.provisions(job)) == provisions
    assert [e["reason"] for e in h.kube.events].count("ScalingFailed") == 1


@pytest.mark.parametrize("vertices", [2, 10, 100, 500])
def test_the_autoscalers_memory_in_the_status_stays_bounded_however_many_vertices(
        vertices: int) -> None:
    ids = [f"{i:032x}" for i in range(vertices)]
    samples, decisions = kept(STATUS_SAMPLES, 2, vertices), kept(STATUS_DECISIONS, 1, vertices)
    assert (samples, decisions) == ((12, 10) if vertices <= 50 else (2, 1) if vertices >= 600
                                    else (samples, decisions))
    change = [Recommendation(i, 2, 40, 12345.678, 123.456, 0.987, 1e6,
                             "scale up, aligned to 128 key groups") for i in ids]
    memory = AutoscalerMemory(
        samples=tuple(MetricSample(1.8e9 + t, {i: VertexSample(1e12, 1e12, 1e12, 1e12, 1e9)
                                              for i in ids}) for t in range(samples)),
        decisions=tuple(Decision(1.8e9 + t, tuple(change), ()) for t in range(decisions)),
        overrides=dict.fromkeys(ids, 40))
    status = DataflowJobStatus(autoscaler=status_of(memory, None, "collecting", False))
    size = len(status.model_dump_json(by_alias=True))
    assert size < 200 * 1024, size  # of the status' 512 KiB budget


def test_overrides_follow_the_spec_of_now_its_vertices_key_groups_and_bounds() -> None:
    spec = parse_spec(_autoscaled(vertices=[{"operator": "sums", "maxParallelism": 8}]))
    compiled = build_plan("job", "default", spec).compiled
    ids = {v.head.name: v.id for v in compiled.job_graph.vertices}
    status = DataflowJobStatus(autoscaler=AutoscalerStatus(overrides={
        ids["sums"]: 40, ids["events"]: 500, "0" * 32: 3}))
    # A vertex gone is left out; the others are held to their bounds and key groups (128).
    assert applicable(spec, status, compiled) == {ids["sums"]: 8, ids["events"]: 128}
    assert scaled_spec(spec, compiled, status).parallelism_overrides == {
        ids["sums"]: 8, ids["events"]: 128}


def test_a_restart_within_the_deployment_stabilizes_again() -> None:
    since = "2026-11-26T10:00:00Z"
    status = DataflowJobStatus(job_status=JobStatus.RUNNING, deployment=DeploymentStatus.new(
        1, "none", since))
    restarted = parse_status({"jobName": "job", "jobId": "x", "jobStatus": "RUNNING",
                              "runtimeMode": "STREAMING", "startTime": 1_795_700_000_000,
                              "updateTime": 1_795_700_000_000})
    assert restarted is not None and parse_time(since).timestamp() < 1_795_700_000
    assert health(status, restarted, 1_795_700_100.0).running_since == 1_795_700_000.0
    earlier = restarted.model_copy(update={"start_time": 0})  # the deployment's first driver
    assert health(status, earlier, 1_795_700_100.0).running_since == (
        parse_time(since).timestamp())


def test_a_sample_is_taken_as_of_the_latest_epochs_end() -> None:
    """Counters grow only as epochs end: a sample dated when it was read would make a window
    without a finished epoch one of no load."""
    spec = parse_spec(_autoscaled())
    compiled = build_plan("job", "default", spec).compiled
    document = {"jobName": "job", "jobId": "x", "jobStatus": "RUNNING",
                "runtimeMode": "STREAMING", "startTime": 1_795_700_000_000,
                "updateTime": 1_795_700_090_000}
    before = parse_status(document)
    ended = parse_status({**document, "metricsTime": 1_795_700_042_500})
    assert before is not None and ended is not None
    assert sample(compiled, before, 1_795_700_100.0).vertices == {}  # no epoch ended yet
    taken = sample(compiled, ended, 1_795_700_100.0)
    assert taken.time == 1_795_700_042.5
