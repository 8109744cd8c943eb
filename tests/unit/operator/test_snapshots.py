"""DataflowSnapshots through the controller's entry points, on a FakeKube and a FakeBackend:
taken, imported, abandoned, failed; periodic ones and their retention with disposal; the
savepoints of upgrades recorded as snapshots; a job started from one by reference."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from controller_harness import STREAM, ControllerHarness, run_async
from operator_fakes import SavepointAnswer

from dataflow_engine.spec.model import PeriodicSavepointSpec
from dataflow_operator.controller import TransientError
from dataflow_operator.snapshots.controller import SnapshotWaiting
from dataflow_operator.snapshots.model import LABEL_TRIGGER, SnapshotState
from dataflow_operator.snapshots.retention import TakenSnapshot, expired

pytestmark = pytest.mark.unit

BATCH: dict[str, Any] = {
    "pipeline": [
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 10}},
        {"name": "out", "type": "discard", "inputs": ["source"]}],
}


@run_async
async def test_a_users_savepoint_is_taken_completed_and_in_the_jobs_history() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.create("mine", {"jobReference": {"name": "job"}, "savepoint": {}})
    await s.kopf()
    taking = s.snapshot("mine")["status"]
    assert (taking["state"], taking["triggerType"]) == ("IN_PROGRESS", "user")
    [request] = [r for r in s.backend.requests(job) if r["nonce"] == taking["triggerId"]]
    assert (request["kind"], request["stop"]) == ("savepoint", False)

    await s.cycle()
    done = s.snapshot("mine")["status"]
    assert done["state"] == "COMPLETED" and done["path"].startswith("/savepoints/job/savepoint-")
    assert [c["type"] + "=" + c["status"] for c in done["conditions"]] == ["Completed=True"]
    last = s.kube.status(job)["savepoints"]["last"]
    assert (last["path"], last["triggerType"], last["snapshot"]) == (done["path"], "user", "mine")
    assert "SavepointCompleted" in s.reasons("job") and "Completed" in s.reasons("mine")


@run_async
async def test_a_checkpoint_snapshot_is_asked_for_as_a_checkpoint() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.create("chk", {"jobReference": {"name": "job"}, "checkpoint": {}})
    await s.cycle(2)  # asked for, then reported
    status = s.snapshot("chk")["status"]
    assert status["state"] == "COMPLETED" and status["path"].startswith("/checkpoints/job/chk-")
    assert [r["kind"] for r in s.backend.requests(job)] == ["checkpoint"]
    assert s.kube.status(job)["savepoints"].get("last") is None  # no savepoint was taken
    assert "CheckpointCompleted" in s.reasons("job")


@pytest.mark.parametrize(("job", "spec", "why"), [
    (None, {"savepoint": {}}, "no DataflowJob 'job'"),
    (BATCH, {"savepoint": {}}, "only a continuous job"),
    ({**STREAM, "checkpointing": {"interval": "1s"}, "job": {}}, {"checkpoint": {}},
     "needs spec.checkpointing.storage"),
], ids=["missing job", "batch job", "no checkpoint storage"])
@run_async
async def test_a_snapshot_its_job_cannot_take_is_abandoned_saying_why(
        job: dict[str, Any] | None, spec: dict[str, Any], why: str) -> None:
    s = ControllerHarness()
    if job is not None:
        ref = s.kube.add_job("job", job)
        await s.on_spec(ref)
        await s.controller.monitor_cycle()
    s.create("doomed", {"jobReference": {"name": "job"}, **spec})
    await s.kopf()
    status = s.snapshot("doomed")["status"]
    assert status["state"] == "ABANDONED" and why in status["error"]
    assert status["conditions"][0]["reason"] == "Abandoned"
    assert s.reasons("doomed") == ["Abandoned"]
    assert not s.backend.counts["request_savepoint"]


@run_async
async def test_a_snapshot_of_a_starting_job_waits_for_it_to_run() -> None:
    s = ControllerHarness()
    ref = s.kube.add_job("job", STREAM)
    await s.on_spec(ref)
    s.create("early", {"jobReference": {"name": "job"}, "savepoint": {}})
    with pytest.raises(SnapshotWaiting, match="not RUNNING"):
        await s.kopf()
    s.backend.driver(ref).run()
    await s.controller.monitor_cycle()
    await s.kopf()
    assert s.snapshot("early")["status"]["state"] == "IN_PROGRESS"


@run_async
async def test_a_failed_savepoint_fails_its_snapshot_and_says_so_on_the_job() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.backend.savepoint_answer["job"] = SavepointAnswer.FAIL
    s.create("broken", {"jobReference": {"name": "job"}, "savepoint": {}})
    await s.cycle(2)
    status = s.snapshot("broken")["status"]
    assert status["state"] == "FAILED" and "storage is unavailable" in status["error"]
    assert "SavepointFailed" in s.reasons("job")
    assert "storage is unavailable" in s.kube.status(job)["savepoints"]["lastError"]


@run_async
async def test_an_imported_savepoint_completes_at_once_and_a_new_job_starts_from_it() -> None:
    s = ControllerHarness()
    s.create("old", {"jobReference": {"name": "next"},
                     "savepoint": {"alreadyExists": True, "path": "/savepoints/x/savepoint-9"}})
    await s.kopf()
    status = s.snapshot("old")["status"]
    assert (status["state"], status["triggerType"]) == ("COMPLETED", "import")

    ref = s.kube.add_job("next", {**STREAM, "job": {
        "upgradeMode": "savepoint", "initialSavepoint": {"snapshotRef": {"name": "old"}}}})
    await s.on_spec(ref)
    assert s.kube.status(ref)["deployment"]["restoreFrom"] == "/savepoints/x/savepoint-9"
    assert s.backend.provisions(ref)[0].restore_from == "/savepoints/x/savepoint-9"


@run_async
async def test_a_job_waits_for_the_snapshot_it_starts_from_and_fails_on_a_failed_one() -> None:
    s = ControllerHarness()
    ref = s.kube.add_job("next", {**STREAM, "job": {
        "upgradeMode": "savepoint", "initialSavepoint": {"snapshotRef": {"name": "later"}}}})
    with pytest.raises(TransientError, match="no DataflowSnapshot 'later'"):
        await s.on_spec(ref)
    provisioned = [c for c in s.kube.status(ref)["conditions"] if c["type"] == "Provisioned"]
    assert provisioned[0]["reason"] == "WaitingForSnapshot"
    assert not s.backend.provisions(ref)

    s.create("later", {"jobReference": {"name": "gone"}, "savepoint": {}})
    await s.kopf()  # its job does not exist: abandoned
    await s.on_spec(ref)
    status = s.kube.status(ref)
    assert status["jobStatus"] == "FAILED"
    assert "spec.job.initialSavepoint.snapshotRef" in status["error"]
    assert "ABANDONED" in status["error"]


@run_async
async def test_periodic_savepoints_are_snapshots_and_retention_disposes_of_the_oldest() -> None:
    s = ControllerHarness()
    spec = {**STREAM, "job": {"upgradeMode": "savepoint",
                              "savepoint": {"interval": "1ms", "historyMaxCount": 2}}}
    job = await s.running(spec)
    for _ in range(5):  # each cycle: resolve the one in flight, then ask for the next
        await s.cycle()
    periodic = [o for o in s.snapshots() if o["metadata"]["labels"][LABEL_TRIGGER] == "periodic"]
    assert all(o["metadata"]["ownerReferences"][0]["uid"] == job.uid for o in periodic)
    completed = [o for o in periodic if o["status"]["state"] == "COMPLETED"]
    assert len(completed) == 2, [o["status"] for o in periodic]  # historyMaxCount
    expired_events = [e["message"] for e in s.kube.events
                      if e["reason"] == "SnapshotsExpired"]
    assert expired_events, "retention deleted nothing"
    history = s.kube.status(job)["savepoints"]["history"]
    kept = {o["metadata"]["name"] for o in completed}
    assert {h["snapshot"] for h in history} <= kept

    # The finalizer disposes of a deleted snapshot's savepoint through the running driver.
    name = sorted(kept)[0]
    path = s.snapshot(name)["status"]["path"]
    await s.delete(name)
    assert [c.path for c in s.backend.calls if c.method == "dispose_savepoint"] == [path]
    assert "SavepointDisposed" in s.reasons("job")


@run_async
async def test_a_deleted_snapshot_of_a_stopped_job_keeps_its_files_and_says_so() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.create("mine", {"jobReference": {"name": "job"}, "savepoint": {}})
    await s.cycle(2)
    assert s.snapshot("mine")["status"]["state"] == "COMPLETED"
    s.backend.driver(job).fail()
    await s.controller.monitor_cycle()
    await s.delete("mine")
    assert not [c for c in s.backend.calls if c.method == "dispose_savepoint"]
    assert "SavepointKept" in s.reasons("job")


@run_async
async def test_an_upgrade_savepoint_is_recorded_as_a_completed_snapshot() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    upgraded = copy.deepcopy(STREAM)
    upgraded["pipeline"][1]["parallelism"] = 3
    s.kube.set_spec(job, upgraded)
    await s.on_spec(job)
    [recorded] = s.snapshots()
    assert recorded["metadata"]["labels"][LABEL_TRIGGER] == "upgrade"
    assert recorded["spec"]["savepoint"]["alreadyExists"] is True
    assert recorded["status"]["state"] == "COMPLETED"
    last = s.kube.status(job)["savepoints"]["last"]
    assert (last["triggerType"], last["snapshot"]) == ("upgrade", recorded["metadata"]["name"])
    assert s.kube.status(job)["deployment"]["restoreFrom"] == recorded["status"]["path"]


def _taken(name: str, hours_ago: float, path: str | None = None,
           state: SnapshotState = SnapshotState.COMPLETED, kind: str = "savepoint"
           ) -> TakenSnapshot:
    ended = datetime(2026, 1, 1, 12, tzinfo=UTC) - timedelta(hours=hours_ago)
    return TakenSnapshot(name, kind, state, ended, path or f"/sp/{name}")


def test_retention_keeps_the_newest_the_protected_and_what_count_and_age_allow() -> None:
    now = datetime(2026, 1, 1, 12, tzinfo=UTC)
    history = PeriodicSavepointSpec(history_max_count=3, history_max_age="10h")
    snapshots = [_taken("a", 30), _taken("b", 20, "/restore/here"), _taken("c", 11),
                 _taken("d", 5), _taken("e", 4, state=SnapshotState.FAILED), _taken("f", 1),
                 _taken("k1", 50, kind="checkpoint"), _taken("k2", 49, kind="checkpoint"),
                 TakenSnapshot("taking", "savepoint", SnapshotState.IN_PROGRESS, None, None)]
    doomed = expired(snapshots, history, {"/restore/here"}, now)
    # Newest first: f, e (failed, counted), d are within the count and age; c and a are older
    # than 10h (and beyond the count); b is protected; k2 is the newest checkpoint, however
    # old, and k1 is too old. Oldest first.
    assert doomed == ["k1", "a", "c"]
    # The newest completed one is kept however old.
    assert expired([_taken("only", 100)], history, set(), now) == []


@run_async
async def test_a_suspend_with_drain_on_suspend_asks_for_a_draining_stop() -> None:
    s = ControllerHarness()
    job = await s.running({**STREAM, "job": {"upgradeMode": "savepoint",
                                             "drainOnSuspend": True}})
    s.kube.set_spec(job, {**s.kube.spec(job), "suspend": True})
    await s.on_spec(job)
    [request] = s.backend.requests(job)
    assert (request["stop"], request["drain"]) == (True, True)
    assert s.kube.status(job)["jobStatus"] == "SUSPENDED"
    [recorded] = s.snapshots()
    assert recorded["metadata"]["labels"][LABEL_TRIGGER] == "suspend"


@run_async
async def test_a_snapshot_in_flight_when_its_job_is_suspended_is_abandoned() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.backend.savepoint_answer["job"] = SavepointAnswer.NEVER
    s.create("late", {"jobReference": {"name": "job"}, "savepoint": {}})
    await s.kopf()
    assert s.snapshot("late")["status"]["state"] == "IN_PROGRESS"
    s.backend.savepoint_answer["job"] = SavepointAnswer.COMPLETE
    s.kube.set_spec(job, {**s.kube.spec(job), "suspend": True})
    await s.on_spec(job)
    status = s.snapshot("late")["status"]
    assert status["state"] == "ABANDONED" and "stopped" in status["error"]
    # After an operator restart a snapshot of the suspended job is not taken up again.
    s.restart_operator()
    await s.on_spec(job)
    s.create("after", {"jobReference": {"name": "job"}, "savepoint": {}})
    await s.kopf()
    assert "suspended" in s.snapshot("after")["status"]["error"]


@run_async
async def test_a_periodic_savepoint_and_checkpoint_due_together_are_both_taken() -> None:
    s = ControllerHarness()
    await s.running({**STREAM, "job": {"upgradeMode": "savepoint",
                                       "savepoint": {"interval": "1ms"},
                                       "checkpoint": {"interval": "1ms"}}})
    await s.cycle(2)
    kinds = sorted("checkpoint" if "checkpoint" in o["spec"] else "savepoint"
                   for o in s.snapshots())
    assert kinds[:1] == ["checkpoint"] and "savepoint" in kinds, kinds
    assert all(o["status"]["state"] == "COMPLETED" for o in s.snapshots()[:2])


@run_async
async def test_deleting_an_import_or_a_restore_point_keeps_the_files() -> None:
    s = ControllerHarness()
    job = await s.running({**STREAM, "job": {"upgradeMode": "savepoint",
                                             "initialSavepointPath": "/savepoints/old/sp-1"}})
    restore = s.kube.status(job)["deployment"]["restoreFrom"]
    assert restore == "/savepoints/old/sp-1"
    s.create("theirs", {"jobReference": {"name": "job"},
                        "savepoint": {"alreadyExists": True, "path": "/savepoints/job/x-1"}})
    s.create("trap", {"jobReference": {"name": "job"},
                      "savepoint": {"alreadyExists": True, "path": restore,
                                    "disposeOnDelete": True}})
    await s.kopf()
    await s.delete("theirs")  # an import keeps its files unless asked
    await s.delete("trap")  # never the path the job restores from
    assert not [c for c in s.backend.calls if c.method == "dispose_savepoint"]
    assert "SavepointKept" in s.reasons("job")


@run_async
async def test_a_driver_that_refuses_is_asked_again_until_the_savepoint_timeout() -> None:
    s = ControllerHarness()
    job = await s.running(STREAM)
    s.backend.savepoint_answer["job"] = SavepointAnswer.UNREACHABLE
    s.create("early", {"jobReference": {"name": "job"}, "savepoint": {}})
    with pytest.raises(SnapshotWaiting, match="cannot take it yet"):
        await s.kopf()
    assert s.snapshot("early").get("status") is None  # still TRIGGER_PENDING
    s.controller.savepoint_timeout = 0.0  # the snapshot's time is up
    await s.kopf()
    status = s.snapshot("early")["status"]
    assert status["state"] == "FAILED" and "cannot take it" in status["error"]
    assert len(s.backend.requests(job)) == 2
