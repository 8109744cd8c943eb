"""The job lifecycle as a table: (starting state, event) -> JobStatus, conditions, Events and
what the backend was asked to do.

Each row brings one job to its starting state through the controller's entry points only
(kopf's ``on_spec``, the monitor's ``monitor_cycle``, ``on_delete``, and a new controller
built from the stored status for an operator restart), applies one event the same way, then
checks what the API server holds (the status, the Events posted) and what the backend was
told to do (provisioned from where, stopped, savepoint asked for, cleaned up). Drivers are
the FakeBackend's scripted ones; nothing sleeps: restart delays are 0s (or 1h, never reached),
time-to-live 0, and the savepoint timeout tiny where a row waits for one in vain.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from controller_harness import STREAM
from kubernetes.client.exceptions import ApiException
from operator_fakes import NOT_CONTINUOUS, REFUSAL, FakeBackend, FakeKube, SavepointAnswer

from dataflow_operator.controller import DataflowController, TransientError
from dataflow_operator.metrics import Metrics
from dataflow_operator.resources.meta import JobRef

pytestmark = pytest.mark.unit

#: A bounded (batch) job: sequence -> map -> discard, two JobVertices.
BATCH: dict[str, Any] = {
    "parallelism": 2,
    "restartStrategy": {"type": "fixed-delay", "attempts": 2, "delay": "0s"},
    "pipeline": [
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 100},
         "parallelism": 1},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]}],
}
#: The savepoints a row's fake driver takes, in order.
SP3, SP4 = "/savepoints/job/savepoint-3", "/savepoints/job/savepoint-4"
#: A savepoint an earlier job left, for initialSavepointPath.
OLD_SAVEPOINT = "/savepoints/earlier/savepoint-1"
#: Stands for a status field that must be absent.
ABSENT = object()


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``change`` merged in (dicts deeply, anything else replaced)."""
    result = copy.deepcopy(base)
    for key, value in change.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


class Harness:
    """One DataflowJob ("job") on a FakeKube and a FakeBackend, moved through the controller's
    entry points; ``mark`` splits what the starting state did from what the event did."""

    def __init__(self, *, max_drivers: int | None = None,
                 savepoint_timeout: float = 10.0) -> None:
        self.kube = FakeKube()
        self.backend = FakeBackend(self.kube, max_drivers=max_drivers)
        self.savepoint_timeout = savepoint_timeout
        self.controller = self.new_controller()
        self.ref: JobRef | None = None
        #: What the last kopf handler call raised (kopf retries a TransientError).
        self.raised: TransientError | None = None
        #: The status when the event began, and when the job was deleted.
        self.before: dict[str, Any] = {}
        self.deleted: dict[str, Any] = {}
        self._events = 0
        self._calls = 0
        self._observed = 0

    def new_controller(self) -> DataflowController:
        return DataflowController(
            self.kube, self.backend, Metrics(),  # type: ignore[arg-type]
            poll_interval=0.002, savepoint_timeout=self.savepoint_timeout)

    @property
    def job(self) -> JobRef:
        assert self.ref is not None, "no job applied yet"
        return self.ref

    # -- entry points ----------------------------------------------------------------------

    async def apply(self, spec: dict[str, Any], name: str = "job") -> JobRef:
        """kubectl apply (a new generation when the spec changed), then kopf's create or
        update handler."""
        ref = self.ref if name == "job" else None
        if ref is None:
            ref = self.kube.add_job(name, spec)
            if name == "job":
                self.ref = ref
        self.kube.set_spec(ref, spec)
        await self.on_spec(ref)
        return ref

    async def on_spec(self, ref: JobRef | None = None) -> None:
        """kopf's handler with the stored object, as on create, update, resume or a retry."""
        ref = ref or self.job
        job = self.kube.job(ref)
        assert job is not None
        self.raised = None
        try:
            await self.controller.on_spec(ref, job["spec"], job.get("status", {}),
                                          int(job["metadata"]["generation"]))
        except TransientError as exc:
            self.raised = exc

    async def change(self, change: dict[str, Any]) -> None:
        await self.apply(merged(self.kube.spec(self.job), change))

    async def cycle(self, times: int = 1) -> None:
        for _ in range(times):
            await self.controller.monitor_cycle()

    # -- what happened -----------------------------------------------------------------------

    def mark(self) -> None:
        self._events = len(self.kube.events)
        self._calls = len(self.backend.calls)
        self._observed = self.backend.counts["observe"]
        self.raised = None
        self.before = self.status()

    def status(self) -> dict[str, Any]:
        """The stored status (the last one, once the job was deleted)."""
        if self.ref is None:
            return {}
        if self.kube.job(self.job) is None:
            return self.deleted
        return self.kube.status(self.job)

    def new_events(self) -> list[str]:
        return [e["reason"] for e in self.kube.events[self._events:]
                if e["involvedObject"]["name"] == "job"]

    def new_calls(self) -> list[str]:
        return [str(c) for c in self.backend.calls[self._calls:] if c.job == "job"]

    def observed(self) -> int:
        """Observations of the driver since ``mark``."""
        return self.backend.counts["observe"] - self._observed

    def conditions(self) -> dict[str, str]:
        return {c["type"]: f"{c['status']}:{c['reason']}"
                for c in self.status().get("conditions", [])}


# -- starting states ---------------------------------------------------------------------------
# Each brings "job" (BATCH or STREAM, with the row's ``spec`` change) to its state through
# the entry points, and checks that it got there.

Start = Callable[[Harness, dict[str, Any]], Awaitable[None]]


def rescaled(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The pipeline with its middle operator's parallelism changed: a new plan."""
    pipeline: list[dict[str, Any]] = copy.deepcopy(spec["pipeline"])
    pipeline[1]["parallelism"] = int(pipeline[1].get("parallelism", 2)) + 1
    return pipeline


async def no_job(h: Harness, change: dict[str, Any]) -> None:
    """Nothing applied yet: the row's event creates the job."""


async def created(h: Harness, change: dict[str, Any], base: dict[str, Any] = BATCH) -> None:
    """Submitted; the driver is Pending (starting, no reason to show)."""
    await h.apply(merged(base, change))
    await h.cycle()
    assert h.status()["jobStatus"] == "CREATED"


async def created_stream(h: Harness, change: dict[str, Any]) -> None:
    await created(h, change, STREAM)


async def running_batch(h: Harness, change: dict[str, Any], base: dict[str, Any] = BATCH) -> None:
    await created(h, change, base)
    h.backend.driver(h.job).run()
    await h.cycle()
    assert h.status()["jobStatus"] == "RUNNING"


async def running_stream(h: Harness, change: dict[str, Any]) -> None:
    """A continuous job running, its latest checkpoint completed."""
    await running_batch(h, change, STREAM)
    assert h.conditions()["Checkpointing"] == "True:CheckpointCompleted"


async def running_restarted(h: Harness, change: dict[str, Any]) -> None:
    """RUNNING again after its one allowed restart (attempts: 1): the budget is used up."""
    await running_batch(h, merged({"restartStrategy": {"attempts": 1}}, change))
    h.backend.driver(h.job).fail()
    await h.cycle(2)  # RESTARTING, then restarted (delay 0s)
    h.backend.driver(h.job).run()
    await h.cycle()
    assert (h.status()["jobStatus"], h.status()["restarts"]) == ("RUNNING", 1)


async def manual_pending(h: Harness, change: dict[str, Any]) -> None:
    """RUNNING (continuous) with a savepointTriggerNonce savepoint asked for and not reported
    yet: the driver answers at its next epoch boundary, the monitor's next look."""
    await running_stream(h, change)
    await h.change({"job": {"savepointTriggerNonce": 1}})
    await h.cycle()
    assert h.status()["savepoints"]["pending"]["triggerNonce"] == 1


async def suspended(h: Harness, change: dict[str, Any]) -> None:
    """A continuous job suspended with a savepoint (SP3): no driver."""
    await running_stream(h, change)
    await h.change({"suspend": True})
    assert h.status()["jobStatus"] == "SUSPENDED"
    assert h.status()["deployment"]["stoppedWithSavepoint"] == SP3
    assert not h.backend.has_driver(h.job)


async def suspended_batch(h: Harness, change: dict[str, Any]) -> None:
    await running_batch(h, change)
    await h.change({"suspend": True})
    assert h.status()["jobStatus"] == "SUSPENDED"


async def failed(h: Harness, change: dict[str, Any], base: dict[str, Any] = BATCH) -> None:
    """The driver failed and there is no restart strategy."""
    await running_batch(h, merged({"restartStrategy": {"type": "none"}}, change), base)
    h.backend.driver(h.job).fail()
    await h.cycle()
    assert h.status()["jobStatus"] == "FAILED"


async def failed_stream(h: Harness, change: dict[str, Any]) -> None:
    await failed(h, change, STREAM)


async def finished(h: Harness, change: dict[str, Any]) -> None:
    await running_batch(h, change)
    h.backend.driver(h.job).finish()
    await h.cycle()
    assert h.status()["jobStatus"] == "FINISHED"


async def restarting(h: Harness, change: dict[str, Any], base: dict[str, Any] = BATCH) -> None:
    """The driver failed with restarts left: the restart is due after the strategy's delay
    (0s unless the row says otherwise: the next monitor cycle restarts it)."""
    await running_batch(h, change, base)
    h.backend.driver(h.job).fail()
    await h.cycle()
    assert (h.status()["jobStatus"], h.status()["restarts"]) == ("RESTARTING", 1)


async def restarting_stream(h: Harness, change: dict[str, Any]) -> None:
    await restarting(h, change, STREAM)


async def refused(h: Harness, change: dict[str, Any]) -> None:
    """A savepoint upgrade (the keyed sum rescaled 2 -> 3) that the running driver refused:
    the job runs on at generation 1, Upgraded=False; its driver refuses upgrades still."""
    await running_stream(h, change)
    h.backend.savepoint_answer["job"] = SavepointAnswer.REFUSE_UPGRADE
    await h.change({"pipeline": rescaled(h.kube.spec(h.job))})
    assert h.conditions()["Upgraded"] == "False:UpgradeRefused"
    assert (h.status()["jobStatus"], h.status()["deployedGeneration"]) == ("RUNNING", 1)


async def queued(h: Harness, change: dict[str, Any]) -> None:
    """Another job ("other") holds the only driver slot (max_drivers=1): this one waits."""
    other = await h.apply(BATCH, name="other")
    h.backend.driver(other).run()
    await h.apply(merged(BATCH, change))
    assert type(h.raised).__name__ == "QueuedError"
    assert h.conditions()["Provisioned"] == "False:Queued"


STARTS: dict[str, Start] = {
    "none": no_job,
    "CREATED": created,
    "CREATED/stream": created_stream,
    "RUNNING/batch": running_batch,
    "RUNNING/stream": running_stream,
    "RUNNING/restarts-used": running_restarted,
    "RUNNING/savepoint-pending": manual_pending,
    "SUSPENDED/stream": suspended,
    "SUSPENDED/batch": suspended_batch,
    "FAILED": failed,
    "FAILED/stream": failed_stream,
    "FINISHED": finished,
    "RESTARTING": restarting,
    "RESTARTING/stream": restarting_stream,
    "upgrade-refused": refused,
    "queued": queued,
}


# -- events -----------------------------------------------------------------------------------

Event = Callable[[Harness], Awaitable[None]]


def patch(change: dict[str, Any]) -> Event:
    """kubectl patch of the spec, then kopf's update handler."""
    async def event(h: Harness) -> None:
        await h.change(change)
    return event


def upgrade(mode: str | None, **more: Any) -> Event:
    """A new plan (the middle operator rescaled) with upgradeMode ``mode`` (None: as it was)."""
    async def event(h: Harness) -> None:
        change: dict[str, Any] = {"pipeline": rescaled(h.kube.spec(h.job)), **more}
        if mode is not None:
            change["job"] = {"upgradeMode": mode}
        await h.change(change)
    return event


def invalid_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The sink's input names no operator: compiling fails (Compiled=False, InvalidSpec)."""
    bad = copy.deepcopy(spec)
    bad["pipeline"][2]["inputs"] = ["nope"]
    return bad


async def invalid(h: Harness) -> None:
    await h.apply(invalid_spec(h.kube.spec(h.job)))


def create(spec: dict[str, Any]) -> Event:
    async def event(h: Harness) -> None:
        await h.apply(spec)
    return event


async def create_nonce_then_run(h: Harness) -> None:
    """Created with savepointTriggerNonce already set; the driver runs; the monitor looks."""
    await h.apply(merged(STREAM, {"job": {"savepointTriggerNonce": 7}}))
    h.backend.driver(h.job).run()
    await h.cycle()


async def create_without_slot(h: Harness) -> None:
    """Created while another job holds the only driver slot (max_drivers=1)."""
    other = await h.apply(BATCH, name="other")
    h.backend.driver(other).run()
    await h.apply(BATCH)


async def create_provisioning_fails(h: Harness) -> None:
    """The backend fails for good (not an API server hiccup)."""
    h.backend.raise_next["provision"] = RuntimeError("image pull secret missing")
    await h.apply(BATCH)


async def create_api_500(h: Harness) -> None:
    """The API server answers 500 to the plan ConfigMap: kopf will retry."""
    h.kube.fail_next(500, method="create_or_adopt", kind="ConfigMap")
    await h.apply(BATCH)


def driver(move: str, *args: Any) -> Event:
    """The driver moves (run, pend, finish, fail, lose); the monitor looks once."""
    async def event(h: Harness) -> None:
        getattr(h.backend.driver(h.job), move)(*args)
        await h.cycle()
    return event


async def monitor(h: Harness) -> None:
    """The monitor looks once (a restart's delay passed; a savepoint's outcome; nothing)."""
    await h.cycle()


def nonce(value: int) -> Event:
    """savepointTriggerNonce set to ``value``; the monitor looks once (and asks for it)."""
    async def event(h: Harness) -> None:
        await h.change({"job": {"savepointTriggerNonce": value}})
        await h.cycle()
    return event


async def ttl_expired(h: Harness) -> None:
    """ttlSecondsAfterFinished: 0 set (the time to live has run out); the monitor looks."""
    await h.change({"ttlSecondsAfterFinished": 0})
    await h.cycle()


async def operator_restart(h: Harness) -> None:
    """A new operator process: a new controller, kopf's resume handler with the stored object,
    then the new monitor's first cycle."""
    h.controller = h.new_controller()
    await h.on_spec()
    await h.cycle()


async def delete(h: Harness) -> None:
    """kopf's delete handler (the object still exists: a finalizer holds it); then the object
    goes and the monitor looks once more."""
    await h.controller.on_delete(h.job)
    h.deleted = h.status()
    h.kube.remove("DataflowJob", h.job.namespace, h.job.name)
    await h.cycle()


async def namespace_deleted(h: Harness) -> None:
    """The job and its driver go without a delete event (its namespace was deleted while the
    operator was not watching); the monitor looks twice."""
    h.deleted = h.status()
    h.kube.remove("DataflowJob", h.job.namespace, h.job.name)
    h.backend.driver(h.job).lose()
    await h.cycle(2)


async def lost_unseen_then_upgrade(h: Harness) -> None:
    """The driver died while no monitor looked (the status still says RUNNING); then a
    savepoint upgrade."""
    h.backend.driver(h.job).lose()
    await upgrade("savepoint")(h)


def retried(first: Event, answer: SavepointAnswer) -> Event:
    """``first`` (a SavepointDelayed), then kopf's retry with the driver answering ``answer``."""
    async def event(h: Harness) -> None:
        await first(h)
        assert type(h.raised).__name__ == "SavepointDelayed"
        h.backend.savepoint_answer["job"] = answer
        await h.on_spec()
    return event


async def suspend_then_resume(h: Harness) -> None:
    await h.change({"suspend": True})
    await h.change({"suspend": False})


async def kopf_retry(h: Harness) -> None:
    await h.on_spec()


async def slot_freed(h: Harness) -> None:
    """The job holding the slot is deleted; kopf retries the queued one."""
    other = next(JobRef(o["metadata"]["name"], o["metadata"]["namespace"], o["metadata"]["uid"])
                 for (kind, _, name), o in h.kube.objects.items()
                 if kind == "DataflowJob" and name == "other")
    await h.controller.on_delete(other)
    await h.on_spec()


async def conflict_then_retry(h: Harness) -> None:
    """A stateless upgrade whose status patch meets a 409; kopf retries the handler."""
    h.kube.fail_next(409, method="merge_patch", kind="DataflowJob")
    await upgrade(None)(h)
    assert type(h.raised).__name__ == "TransientError"
    assert h.kube.status(h.job)["jobStatus"] == "RUNNING"  # nothing written
    await h.on_spec()


async def events_fail_then_finish(h: Harness) -> None:
    """The API server answers 500 to one Event; then the driver finishes."""
    h.kube.fail_next(500, method="create", kind="Event")
    await driver("finish")(h)


EVENTS: dict[str, Event] = {
    "create": create(BATCH),
    "create:invalid": create(invalid_spec(BATCH)),
    "create:suspended": create(merged(BATCH, {"suspend": True})),
    "create:initialSavepointPath": create(
        merged(STREAM, {"job": {"initialSavepointPath": OLD_SAVEPOINT}})),
    "create:nonce-set, runs": create_nonce_then_run,
    "create:no-driver-slot": create_without_slot,
    "create:provisioning-fails": create_provisioning_fails,
    "create:API-500": create_api_500,
    "spec:stateless": upgrade("stateless"),
    "spec:savepoint": upgrade("savepoint"),
    "spec:last-state": upgrade("last-state"),
    "spec:same-plan": patch({"ttlSecondsAfterFinished": 3600}),
    "spec:allowNonRestoredState": patch({"job": {"allowNonRestoredState": True}}),
    "spec:invalid": invalid,
    "spec:savepoint, retried": retried(upgrade("savepoint"), SavepointAnswer.COMPLETE),
    "spec:savepoint, retried, fails again": retried(upgrade("savepoint"),
                                                    SavepointAnswer.FAIL),
    "spec:savepoint, driver lost unseen": lost_unseen_then_upgrade,
    "spec:409, retried": conflict_then_retry,
    "suspend": patch({"suspend": True}),
    "suspend:stateless": patch({"suspend": True, "job": {"upgradeMode": "stateless"}}),
    "resume": patch({"suspend": False}),
    "resume:stateless": patch({"suspend": False, "job": {"upgradeMode": "stateless"}}),
    "resume+spec:savepoint": upgrade("savepoint", suspend=False),
    "suspend, resume": suspend_then_resume,
    "driver:runs": driver("run"),
    "driver:runs, Spark not yet": driver("run", False),
    "driver:unschedulable": driver("pend", "Unschedulable", "0/1 nodes: Insufficient cpu"),
    "driver:lost": driver("lose"),
    "driver:failed": driver("fail"),
    "driver:finished": driver("finish"),
    "driver:finished, Event-500": events_fail_then_finish,
    "monitor": monitor,
    "nonce": nonce(1),
    "nonce:2": nonce(2),
    "ttl:expired": ttl_expired,
    "operator-restart": operator_restart,
    "delete": delete,
    "namespace-deleted": namespace_deleted,
    "slot-freed": slot_freed,
    "kopf-retry": kopf_retry,
}


# -- the table ----------------------------------------------------------------------------------
# Conditions are written as the exact set the status holds: "Type" is True with its usual
# reason, "Type=Reason" True with that reason, "!Type=Reason" False.

USUAL = {"Compiled": "Compiled", "Provisioned": "Provisioned", "Running": "JobRunning",
         "Succeeded": "JobFinished", "Upgraded": "Upgraded",
         "Checkpointing": "CheckpointCompleted"}
NEW = "Compiled Provisioned"  # a fresh deployment: only these (and Upgraded) are kept
RUN = "Compiled Provisioned Running"
RUN_S = RUN + " Checkpointing"
SUSP = "Compiled Provisioned !Running=JobSuspended"
DONE = "Compiled Provisioned !Running=JobFinished Succeeded"
FAIL = "Compiled Provisioned !Running=JobFailed !Succeeded=JobFailed Failed=JobFailed"
RESTART = "Compiled Provisioned !Running=JobRestarting"
REFUSED = RUN + " !Upgraded=UpgradeRefused Checkpointing"
QUEUED = "Compiled !Provisioned=Queued"
#: Event reasons of common moves.
TO_RESTARTING = ["JobStatusChanged", "JobStatusChanged", "Restarting"]  # -> FAILING -> RESTARTING
TO_FAILED = ["JobStatusChanged", "JobStatusChanged", "Failed"]  # -> FAILING -> FAILED
UPGRADED = ["SpecChanged", "JobStatusChanged", "Submitted"]
BY_SAVEPOINT = ["SavepointCompleted", *UPGRADED]
#: Backend calls of common moves.
P0 = "provision(restart=0, from=none)"
ADOPTED = P0 + " adopted"
UPGRADE_SAVEPOINT = "savepoint(upgrade, stop, upgradeTo)"
DELETED = ["stop_driver", "forget"]


@dataclass(frozen=True)
class Row:
    start: str
    event: str
    job_status: str | None
    conditions: str
    events: list[str]
    calls: list[str]
    #: The status fields (dotted paths) checked besides; ABSENT: not there.
    fields: dict[str, Any] = field(default_factory=dict)
    #: The deployment (its checkpoint lineage) after the event: "new", "same" or "none".
    deployment: str | None = None
    #: The name of the TransientError kopf gets (and retries), if any.
    raises: str | None = None
    #: Changed in the starting state's spec.
    spec: dict[str, Any] = field(default_factory=dict)
    #: How the driver answers savepoint requests during the event (None: as the starting
    #: state left it; COMPLETE unless it says otherwise).
    answer: SavepointAnswer | None = None
    savepoint_timeout: float = 10.0
    #: Whether the monitor looked at the driver during the event (None: not checked).
    observed: bool | None = None

    @property
    def id(self) -> str:
        extra = "" if self.answer is None else f" ({self.answer.value})"
        if self.savepoint_timeout != 10.0:
            extra += f" (savepoint timeout {self.savepoint_timeout:g} s)"
        if self.spec:
            extra += f" {self.spec}"
        return f"{self.start} | {self.event}{extra}"


DELAY_1H = {"restartStrategy": {"delay": "1h"}}
NO_RESTARTS = {"restartStrategy": {"type": "none"}}

TABLE: list[Row] = [
    # == no job yet ==============================================================================
    # (suspend, resume, driver events, savepoint results, nonce changes, restarts, TTL, operator
    # restart and delete need a job: its creation with those settings is what is meaningful.)
    Row("none", "create", "CREATED", NEW, ["Submitted"], [P0],
        {"restarts": 0, "subtasks": "0/3", "deployedGeneration": 1}, deployment="new"),
    Row("none", "create:initialSavepointPath", "CREATED", NEW, ["Submitted"],
        [f"provision(restart=0, from={OLD_SAVEPOINT})"], deployment="new"),
    Row("none", "create:invalid", "FAILED",
        "!Compiled=InvalidSpec !Succeeded=InvalidSpec Failed=InvalidSpec", ["Failed"], [],
        {"error": "spec.pipeline[2].inputs[0].from: operator 'out': unknown input 'nope'",
         "deployedGeneration": ABSENT, "driver": ABSENT}, deployment="none"),
    Row("none", "create:suspended", "SUSPENDED", "Compiled !Running=JobSuspended",
        ["JobStatusChanged", "Suspended"], ["stop_driver"], deployment="none"),
    # A nonce set at creation asks for nothing, even once the job runs.
    Row("none", "create:nonce-set, runs", "RUNNING", RUN_S, ["Submitted", "JobStatusChanged"],
        [P0], {"savepoints.lastTriggerNonce": 7, "savepoints.pending": ABSENT}),
    Row("none", "create:no-driver-slot", "CREATED", QUEUED, ["Queued"], [P0],
        {"deployedGeneration": ABSENT}, raises="QueuedError", deployment="none"),
    Row("none", "create:provisioning-fails", "FAILED",
        "Compiled !Provisioned=ProvisioningFailed !Succeeded=ProvisioningFailed "
        "Failed=ProvisioningFailed", ["Failed"], [P0],
        {"error": "RuntimeError: image pull secret missing"}),
    Row("none", "create:API-500", None, "", [], [P0], raises="TransientError"),

    # == CREATED: submitted, the driver Pending ==================================================
    # (resume: not suspended; savepoint results and a nonce's savepoint need RUNNING; TTL: not
    # ended; a restart budget is only looked at on a failure, below.)
    Row("CREATED", "driver:runs", "RUNNING", RUN, ["JobStatusChanged"], [],
        {"subtasks": "3/3", "startTime": str}),
    Row("CREATED", "driver:runs, Spark not yet", "CREATED", NEW, [], []),
    Row("CREATED", "driver:unschedulable", "CREATED", NEW + " !Running=Unschedulable",
        ["DriverPending"], []),
    # Questionable: a driver that vanishes before it was seen running leaves the job CREATED
    # for good (neither restarted nor failed); Missing only counts once RUNNING.
    Row("CREATED", "driver:lost", "CREATED", NEW, [], []),
    Row("CREATED", "driver:failed", "RESTARTING", RESTART, TO_RESTARTING, ["stop_driver"],
        {"restarts": 1, "error": "driver exited with code 1: boom"}),
    Row("CREATED", "driver:finished", "FINISHED", DONE,
        ["JobStatusChanged", "JobStatusChanged", "Finished"], []),  # via RUNNING
    Row("CREATED", "spec:stateless", "CREATED", NEW + " Upgraded", ["SpecChanged", "Submitted"],
        ["stop_driver", P0], {"deployedGeneration": 2}, deployment="new"),
    # Not running: no savepoint is asked for; the deployment's lineage goes on (its newest
    # checkpoint, or where it began).
    Row("CREATED/stream", "spec:savepoint", "CREATED", NEW + " Upgraded",
        ["SpecChanged", "Submitted"], ["stop_driver", P0],
        {"deployment.generation": 2}, deployment="same"),
    Row("CREATED", "spec:same-plan", "CREATED", NEW, [], [ADOPTED],
        {"observedGeneration": 2, "deployedGeneration": 2}, deployment="same"),
    Row("CREATED", "spec:invalid", "CREATED", "!Compiled=InvalidSpec Provisioned",
        ["InvalidSpec"], [], {"observedGeneration": 2, "deployedGeneration": 1}),
    Row("CREATED", "suspend", "SUSPENDED", SUSP, ["JobStatusChanged", "Suspended"],
        ["stop_driver"]),
    Row("CREATED/stream", "suspend", "SUSPENDED", SUSP, ["JobStatusChanged", "Suspended"],
        ["stop_driver"], {"deployment.stoppedWithSavepoint": ABSENT}),  # no savepoint asked
    Row("CREATED", "nonce", "CREATED", NEW, [], [ADOPTED],
        {"savepoints.pending": ABSENT, "savepoints.lastTriggerNonce": ABSENT}),  # waits
    Row("CREATED", "operator-restart", "CREATED", NEW, [], [ADOPTED], deployment="same"),
    Row("CREATED", "delete", "CREATED", NEW, [], DELETED, observed=False),

    # == RUNNING (batch) =========================================================================
    # (savepoint and last-state upgrades need checkpointing.storage: spec:invalid for a batch
    # job; resume: not suspended; a batch job takes no savepoints, so no savepoint results.)
    Row("RUNNING/batch", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"deployedGeneration": 2, "startTime": ABSENT},
        deployment="new"),
    Row("RUNNING/batch", "spec:same-plan", "RUNNING", RUN, [], [ADOPTED], deployment="same"),
    Row("RUNNING/batch", "spec:invalid", "RUNNING", "!Compiled=InvalidSpec Provisioned Running",
        ["InvalidSpec"], [], {"observedGeneration": 2, "deployedGeneration": 1}),
    Row("RUNNING/batch", "spec:409, retried", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0, ADOPTED], {"deployedGeneration": 2}, deployment="new"),
    Row("RUNNING/batch", "suspend", "SUSPENDED", SUSP, ["JobStatusChanged", "Suspended"],
        ["stop_driver"]),
    Row("RUNNING/batch", "driver:lost", "RESTARTING", RESTART, TO_RESTARTING, ["stop_driver"],
        {"restarts": 1, "error": "the driver disappeared"}),
    Row("RUNNING/batch", "driver:failed", "RESTARTING", RESTART, TO_RESTARTING,
        ["stop_driver"], {"restarts": 1, "error": "driver exited with code 1: boom"}),
    Row("RUNNING/batch", "driver:failed", "FAILED", FAIL, TO_FAILED, [],
        {"error": "driver failed: driver exited with code 1: boom (no restart strategy)",
         "endTime": str}, spec=NO_RESTARTS),
    Row("RUNNING/batch", "driver:lost", "FAILED", FAIL, TO_FAILED, [],
        {"error": "driver failed: the driver disappeared (no restart strategy)"},
        spec=NO_RESTARTS),
    Row("RUNNING/restarts-used", "driver:failed", "FAILED", FAIL, TO_FAILED, [],
        {"restarts": 1,
         "error": "driver failed: driver exited with code 1: boom (1 restarts used)"}),
    Row("RUNNING/batch", "driver:finished", "FINISHED", DONE, ["JobStatusChanged", "Finished"],
        [], {"endTime": str, "subtasks": "0/3"}),
    # Events are worth less than status: one the API server refuses is lost.
    Row("RUNNING/batch", "driver:finished, Event-500", "FINISHED", DONE, ["Finished"], []),
    # The runner refuses a savepoint of a job that does not run in epochs.
    Row("RUNNING/batch", "nonce", "RUNNING", RUN, ["SavepointFailed"],
        [ADOPTED, "savepoint(manual)"],
        {"savepoints.lastTriggerNonce": 1,
         "savepoints.lastError": f"the driver cannot take it: RuntimeError: {NOT_CONTINUOUS}"}),
    Row("RUNNING/batch", "ttl:expired", "RUNNING", RUN, [], [ADOPTED],
        {"driver.pod": "job-driver"}),  # not ended: nothing to clean up
    Row("RUNNING/batch", "operator-restart", "RUNNING", RUN, [], [ADOPTED], deployment="same",
        observed=True),
    Row("RUNNING/batch", "delete", "RUNNING", RUN, [], DELETED, observed=False),
    # Without a delete event the job is dropped when its status patch answers 404; its driver
    # is stopped, but the backend is never told to forget it (see the report).
    Row("RUNNING/batch", "namespace-deleted", "RUNNING", RUN, TO_RESTARTING, ["stop_driver"]),

    # == RUNNING (continuous) ====================================================================
    # (resume: not suspended. A nonce or TTL change is a spec change keeping the plan.)
    Row("RUNNING/stream", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"savepoints.last": ABSENT}, deployment="new"),
    Row("RUNNING/stream", "spec:savepoint", "CREATED", NEW + " Upgraded", BY_SAVEPOINT,
        [UPGRADE_SAVEPOINT, "stop_driver", f"provision(restart=0, from={SP3})"],
        {"savepoints.last.triggerType": "upgrade", "savepoints.last.path": SP3,
         "deployment.restoreFrom": SP3, "deployedGeneration": 2}, deployment="new"),
    Row("RUNNING/stream", "spec:savepoint", "RUNNING", RUN_S, ["SavepointFailed"],
        [UPGRADE_SAVEPOINT],
        {"savepoints.lastError": "savepoint 3 failed: the checkpoint storage is unavailable",
         "observedGeneration": 1, "deployedGeneration": 1},
        deployment="same", raises="SavepointDelayed", answer=SavepointAnswer.FAIL),
    Row("RUNNING/stream", "spec:savepoint", "RUNNING", RUN_S + " !Upgraded=UpgradeRefused",
        ["SavepointFailed", "UpgradeRefused"], [UPGRADE_SAVEPOINT],
        {"savepoints.lastError": REFUSAL, "observedGeneration": 2, "deployedGeneration": 1},
        deployment="same", answer=SavepointAnswer.REFUSE_UPGRADE),
    Row("RUNNING/stream", "spec:savepoint", "RUNNING", RUN_S, ["SavepointFailed"],
        [UPGRADE_SAVEPOINT], {"savepoints.lastError": "not taken within 0.05 s"},
        deployment="same", raises="SavepointDelayed", answer=SavepointAnswer.NEVER,
        savepoint_timeout=0.05),
    Row("RUNNING/stream", "spec:savepoint", "RUNNING", RUN_S, ["SavepointFailed"],
        [UPGRADE_SAVEPOINT],
        {"savepoints.lastError": "the driver cannot take it: ConnectionRefusedError: the "
         "driver's status server does not answer"},
        deployment="same", raises="SavepointDelayed", answer=SavepointAnswer.UNREACHABLE),
    # kopf retries a SavepointDelayed: the next savepoint lets the upgrade through; a failure
    # for the same reason is not said again.
    Row("RUNNING/stream", "spec:savepoint, retried", "CREATED", NEW + " Upgraded",
        ["SavepointFailed", *BY_SAVEPOINT],
        [UPGRADE_SAVEPOINT, UPGRADE_SAVEPOINT, "stop_driver", f"provision(restart=0, from={SP3})"],
        {"savepoints.lastError": ABSENT}, deployment="new", answer=SavepointAnswer.FAIL),
    Row("RUNNING/stream", "spec:savepoint, retried, fails again", "RUNNING", RUN_S,
        ["SavepointFailed"], [UPGRADE_SAVEPOINT, UPGRADE_SAVEPOINT], deployment="same",
        raises="SavepointDelayed", answer=SavepointAnswer.FAIL),
    # The driver died unseen: no savepoint is waited for; the lineage goes on from its newest
    # checkpoint.
    Row("RUNNING/stream", "spec:savepoint, driver lost unseen", "CREATED", NEW + " Upgraded",
        UPGRADED, ["stop_driver", P0], {"deployment.generation": 2}, deployment="same"),
    # last-state takes a savepoint too while the job runs...
    Row("RUNNING/stream", "spec:last-state", "CREATED", NEW + " Upgraded", BY_SAVEPOINT,
        [UPGRADE_SAVEPOINT, "stop_driver", f"provision(restart=0, from={SP3})"],
        deployment="new"),
    # ... and waits for it when it fails (no fall-back to the newest checkpoint).
    Row("RUNNING/stream", "spec:last-state", "RUNNING", RUN_S, ["SavepointFailed"],
        [UPGRADE_SAVEPOINT], deployment="same", raises="SavepointDelayed",
        answer=SavepointAnswer.FAIL),
    Row("RUNNING/stream", "spec:same-plan", "RUNNING", RUN_S, [], [ADOPTED], deployment="same"),
    Row("RUNNING/stream", "spec:invalid", "RUNNING", "!Compiled=InvalidSpec Provisioned Running "
        "Checkpointing", ["InvalidSpec"], []),
    Row("RUNNING/stream", "suspend", "SUSPENDED", SUSP + " Checkpointing",
        ["SavepointCompleted", "JobStatusChanged", "Suspended"],
        ["savepoint(suspend, stop)", "stop_driver"],
        {"deployment.stoppedWithSavepoint": SP3, "savepoints.last.triggerType": "suspend"},
        deployment="same"),
    Row("RUNNING/stream", "suspend", "RUNNING", RUN_S, ["SavepointFailed"],
        ["savepoint(suspend, stop)"],
        {"deployment.stoppedWithSavepoint": ABSENT, "observedGeneration": 2},
        raises="SavepointDelayed", answer=SavepointAnswer.FAIL),
    Row("RUNNING/stream", "suspend", "RUNNING", RUN_S, ["SavepointFailed"],
        ["savepoint(suspend, stop)"], {"savepoints.lastError": "not taken within 0.05 s"},
        raises="SavepointDelayed", answer=SavepointAnswer.NEVER, savepoint_timeout=0.05),
    Row("RUNNING/stream", "suspend:stateless", "SUSPENDED", SUSP + " Checkpointing",
        ["JobStatusChanged", "Suspended"], ["stop_driver"],
        {"deployment.stoppedWithSavepoint": ABSENT}),
    Row("RUNNING/stream", "driver:lost", "RESTARTING", RESTART + " Checkpointing",
        TO_RESTARTING, ["stop_driver"], {"restarts": 1}, deployment="same"),
    Row("RUNNING/stream", "driver:failed", "RESTARTING", RESTART + " Checkpointing",
        TO_RESTARTING, ["stop_driver"], {"restarts": 1}, deployment="same"),
    Row("RUNNING/stream", "driver:finished", "FINISHED", DONE + " Checkpointing",
        ["JobStatusChanged", "Finished"], []),
    Row("RUNNING/stream", "nonce", "RUNNING", RUN_S, ["SavepointTriggered"],
        [ADOPTED, "savepoint(manual)"],
        {"savepoints.pending.triggerNonce": 1, "savepoints.pending.triggerType": "manual"}),
    Row("RUNNING/stream", "nonce", "RUNNING", RUN_S, ["SavepointFailed"],
        [ADOPTED, "savepoint(manual)"],
        {"savepoints.pending": ABSENT, "savepoints.lastTriggerNonce": 1},
        answer=SavepointAnswer.UNREACHABLE),
    Row("RUNNING/stream", "ttl:expired", "RUNNING", RUN_S, [], [ADOPTED]),
    Row("RUNNING/stream", "operator-restart", "RUNNING", RUN_S, [], [ADOPTED],
        deployment="same", observed=True),
    Row("RUNNING/stream", "delete", "RUNNING", RUN_S, [], DELETED, observed=False),

    # == RUNNING (continuous), a savepointTriggerNonce savepoint pending ========================
    # The savepoint's outcome, as the monitor finds it in the driver's status. (A refusal is an
    # upgrade's only: the driver just takes a manual savepoint.)
    Row("RUNNING/savepoint-pending", "monitor", "RUNNING", RUN_S, ["SavepointCompleted"], [],
        {"savepoints.last.path": SP3, "savepoints.last.triggerType": "manual",
         "savepoints.last.triggerNonce": 1, "savepoints.lastTriggerNonce": 1,
         "savepoints.pending": ABSENT}),
    Row("RUNNING/savepoint-pending", "monitor", "RUNNING", RUN_S, ["SavepointFailed"], [],
        {"savepoints.lastError": "savepoint 3 failed: the checkpoint storage is unavailable",
         "savepoints.lastTriggerNonce": 1, "savepoints.pending": ABSENT},
        answer=SavepointAnswer.FAIL),
    Row("RUNNING/savepoint-pending", "monitor", "RUNNING", RUN_S, [], [],  # not yet: waits
        {"savepoints.pending.triggerNonce": 1}, answer=SavepointAnswer.NEVER),
    Row("RUNNING/savepoint-pending", "monitor", "RUNNING", RUN_S, ["SavepointFailed"], [],
        {"savepoints.lastError": "not reported within 0 s", "savepoints.pending": ABSENT},
        answer=SavepointAnswer.NEVER, savepoint_timeout=0),
    Row("RUNNING/savepoint-pending", "nonce:2", "RUNNING", RUN_S, [], [ADOPTED],
        {"savepoints.pending.triggerNonce": 1}, answer=SavepointAnswer.NEVER),  # 2 waits
    Row("RUNNING/savepoint-pending", "driver:failed", "RESTARTING", RESTART + " Checkpointing",
        [*TO_RESTARTING, "SavepointFailed"], ["stop_driver"],
        {"savepoints.lastError": "the job stopped before taking it",
         "savepoints.lastTriggerNonce": 1}, answer=SavepointAnswer.NEVER),
    # Questionable: the suspend's own savepoint drops the pending manual one (taken by the
    # driver, never recorded, no Event, lastTriggerNonce not set: nonce 1 asks again later).
    Row("RUNNING/savepoint-pending", "suspend", "SUSPENDED", SUSP + " Checkpointing",
        ["SavepointCompleted", "JobStatusChanged", "Suspended"],
        ["savepoint(suspend, stop)", "stop_driver"],
        {"deployment.stoppedWithSavepoint": SP4, "savepoints.last.triggerType": "suspend",
         "savepoints.history": [dict], "savepoints.pending": ABSENT,
         "savepoints.lastTriggerNonce": ABSENT}),
    # The pending request is in status: a new operator finds its outcome.
    Row("RUNNING/savepoint-pending", "operator-restart", "RUNNING", RUN_S,
        ["SavepointCompleted"], [ADOPTED], {"savepoints.last.triggerNonce": 1}),

    # == SUSPENDED ===============================================================================
    # (driver events, savepoint results and restarts: no driver runs and the monitor does not
    # look, see the "monitor" row; TTL: SUSPENDED has not ended.)
    Row("SUSPENDED/stream", "resume", "CREATED", NEW, ["Resumed", "JobStatusChanged",
                                                       "Submitted"],
        [f"provision(restart=0, from={SP3})"],
        {"deployment.restoreFrom": SP3, "deployedGeneration": 3}, deployment="new"),
    # Questionable: docs say a stateless resume starts from scratch; the suspend's savepoint
    # still wins.
    Row("SUSPENDED/stream", "resume:stateless", "CREATED", NEW,
        ["Resumed", "JobStatusChanged", "Submitted"], [f"provision(restart=0, from={SP3})"],
        deployment="new"),
    Row("SUSPENDED/stream", "resume+spec:savepoint", "CREATED", NEW + " Upgraded",
        ["SpecChanged", "Resumed", "JobStatusChanged", "Submitted"],
        ["stop_driver", f"provision(restart=0, from={SP3})"], deployment="new"),
    Row("SUSPENDED/batch", "resume", "CREATED", NEW,
        ["Resumed", "JobStatusChanged", "Submitted"], [P0], deployment="new"),
    # A new plan while suspended is compiled, and deployed by the resume.
    Row("SUSPENDED/stream", "spec:savepoint", "SUSPENDED", SUSP + " Checkpointing", [],
        ["stop_driver"], {"observedGeneration": 3, "deployedGeneration": 1},
        deployment="same"),
    Row("SUSPENDED/stream", "spec:same-plan", "SUSPENDED", SUSP + " Checkpointing", [],
        ["stop_driver"], deployment="same"),
    Row("SUSPENDED/stream", "spec:invalid", "SUSPENDED",
        "!Compiled=InvalidSpec Provisioned !Running=JobSuspended Checkpointing",
        ["InvalidSpec"], []),
    Row("SUSPENDED/stream", "monitor", "SUSPENDED", SUSP + " Checkpointing", [], [],
        observed=False),
    Row("SUSPENDED/stream", "nonce", "SUSPENDED", SUSP + " Checkpointing", [], ["stop_driver"],
        {"savepoints.pending": ABSENT}),
    Row("SUSPENDED/stream", "operator-restart", "SUSPENDED", SUSP + " Checkpointing", [],
        ["stop_driver"], deployment="same", observed=False),
    Row("SUSPENDED/stream", "delete", "SUSPENDED", SUSP + " Checkpointing", [], DELETED),

    # == FAILED ==================================================================================
    # (resume: not suspended; driver events, savepoints and restarts: an ended job is not
    # looked at; a nonce is ignored, see below.)
    Row("FAILED", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED, ["stop_driver", P0],
        {"error": ABSENT, "endTime": ABSENT}, deployment="new"),
    Row("FAILED/stream", "spec:savepoint", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"deployment.generation": 2}, deployment="same"),
    Row("FAILED", "spec:same-plan", "FAILED", FAIL, [], [], {"observedGeneration": 2}),
    Row("FAILED", "spec:invalid", "FAILED",
        "!Compiled=InvalidSpec Provisioned !Running=JobFailed !Succeeded=JobFailed "
        "Failed=JobFailed", ["InvalidSpec"], []),
    Row("FAILED", "suspend", "FAILED", FAIL, [], ["stop_driver"]),
    Row("FAILED", "nonce", "FAILED", FAIL, [], [], {"savepoints.pending": ABSENT}),
    Row("FAILED", "ttl:expired", "FAILED", FAIL, ["CleanedUp"], ["clean_up"],
        {"driver": ABSENT}),
    Row("FAILED", "monitor", "FAILED", FAIL, [], [], observed=False),
    Row("FAILED", "operator-restart", "FAILED", FAIL, [], [], observed=False),
    Row("FAILED", "delete", "FAILED", FAIL, [], DELETED),

    # == FINISHED ================================================================================
    # (resume: not suspended; driver events, savepoints and restarts: an ended job is not
    # looked at, see the "monitor" row; a nonce is ignored.)
    Row("FINISHED", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"endTime": ABSENT}, deployment="new"),
    Row("FINISHED", "spec:same-plan", "FINISHED", DONE, [], []),
    Row("FINISHED", "spec:invalid", "FINISHED",
        "!Compiled=InvalidSpec Provisioned !Running=JobFinished Succeeded", ["InvalidSpec"], []),
    Row("FINISHED", "suspend", "FINISHED", DONE, [], ["stop_driver"]),
    Row("FINISHED", "nonce", "FINISHED", DONE, [], [], {"savepoints.pending": ABSENT}),
    Row("FINISHED", "monitor", "FINISHED", DONE, [], [], observed=False),
    Row("FINISHED", "ttl:expired", "FINISHED", DONE, ["CleanedUp"], ["clean_up"],
        {"driver": ABSENT}),
    # Cleaned up as it finished (ttl 0 from the start): a new operator cleans up nothing twice.
    Row("FINISHED", "operator-restart", "FINISHED", DONE, [], [], {"driver": ABSENT},
        spec={"ttlSecondsAfterFinished": 0}),
    Row("FINISHED", "operator-restart", "FINISHED", DONE, [], [], {"driver.pod": "job-driver"}),
    Row("FINISHED", "delete", "FINISHED", DONE, [], DELETED),

    # == RESTARTING ==============================================================================
    # (driver events: its driver was stopped and is not looked at; savepoint results need
    # RUNNING; resume: not suspended; a nonce or TTL change is a spec change keeping the plan,
    # as spec:same-plan.)
    Row("RESTARTING", "monitor", "CREATED", RESTART.replace("JobRestarting", "JobCreated"),
        ["JobStatusChanged", "Submitted"], ["provision(restart=1, from=none)"],
        {"restarts": 1}, deployment="same"),
    Row("RESTARTING/stream", "monitor", "CREATED",
        RESTART.replace("JobRestarting", "JobCreated") + " Checkpointing",
        ["JobStatusChanged", "Submitted"], ["provision(restart=1, from=none)"],
        {"restarts": 1}, deployment="same"),  # resumes from its own newest checkpoint
    Row("RESTARTING", "monitor", "RESTARTING", RESTART, [], [], spec=DELAY_1H),
    Row("RESTARTING", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"restarts": 0, "error": ABSENT}, deployment="new"),
    # Questionable: a spec change that keeps the plan starts the driver at once (the delay is
    # dropped), while the status says RESTARTING until the next monitor cycle.
    Row("RESTARTING", "spec:same-plan", "RESTARTING", RESTART, [],
        ["provision(restart=1, from=none)"], {"restarts": 1}, spec=DELAY_1H),
    Row("RESTARTING", "spec:invalid", "RESTARTING",
        "!Compiled=InvalidSpec Provisioned !Running=JobRestarting", ["InvalidSpec"], []),
    Row("RESTARTING", "suspend", "SUSPENDED", SUSP, ["JobStatusChanged", "Suspended"],
        ["stop_driver"], {"restarts": 1}),
    # The delay is the old process's: a new operator restarts at once.
    Row("RESTARTING", "operator-restart", "CREATED",
        RESTART.replace("JobRestarting", "JobCreated"), ["JobStatusChanged", "Submitted"],
        ["provision(restart=1, from=none)", "provision(restart=1, from=none) adopted"],
        {"restarts": 1}, spec=DELAY_1H),
    Row("RESTARTING", "delete", "RESTARTING", RESTART, [], DELETED),

    # == upgrade refused: the job runs on at its deployed generation =============================
    # (resume: not suspended; driver lost and finished: as RUNNING/stream; a TTL change is a
    # spec change keeping the plan, as spec:same-plan.)
    # Questionable: any later spec change retries the refused upgrade, so a new nonce (or a
    # TTL) brings another refusal and its Events, and the nonce's savepoint is never taken.
    Row("upgrade-refused", "spec:same-plan", "RUNNING", REFUSED,
        ["SavepointFailed", "UpgradeRefused"], [UPGRADE_SAVEPOINT], {"deployedGeneration": 1}),
    Row("upgrade-refused", "nonce", "RUNNING", REFUSED, ["SavepointFailed", "UpgradeRefused"],
        [UPGRADE_SAVEPOINT], {"savepoints.pending": ABSENT, "savepoints.last": ABSENT}),
    Row("upgrade-refused", "spec:allowNonRestoredState", "CREATED", NEW + " Upgraded",
        BY_SAVEPOINT, [UPGRADE_SAVEPOINT, "stop_driver", f"provision(restart=0, from={SP3})"],
        {"deployedGeneration": 3}, deployment="new"),
    Row("upgrade-refused", "spec:savepoint", "RUNNING", REFUSED,
        ["SavepointFailed", "UpgradeRefused"], [UPGRADE_SAVEPOINT], {"observedGeneration": 3}),
    Row("upgrade-refused", "spec:stateless", "CREATED", NEW + " Upgraded", UPGRADED,
        ["stop_driver", P0], {"deployedGeneration": 3}, deployment="new"),
    Row("upgrade-refused", "spec:invalid", "RUNNING",
        "!Compiled=InvalidSpec Provisioned Running !Upgraded=UpgradeRefused Checkpointing",
        ["InvalidSpec"], []),
    # The suspend's savepoint carries no upgrade: taken. Upgraded=False stays.
    Row("upgrade-refused", "suspend", "SUSPENDED",
        SUSP + " !Upgraded=UpgradeRefused Checkpointing",
        ["SavepointCompleted", "JobStatusChanged", "Suspended"],
        ["savepoint(suspend, stop)", "stop_driver"], {"deployment.stoppedWithSavepoint": SP3}),
    # Questionable: the resume deploys the refused plan from the suspend's savepoint with no
    # check that it can take the state, and Upgraded=False (refused) stays.
    Row("upgrade-refused", "suspend, resume", "CREATED", NEW + " !Upgraded=UpgradeRefused",
        ["SavepointCompleted", "JobStatusChanged", "Suspended", "Resumed", "JobStatusChanged",
         "Submitted"], ["savepoint(suspend, stop)", "stop_driver",
                        f"provision(restart=0, from={SP3})"],
        {"deployedGeneration": 4, "deployment.restoreFrom": SP3}, deployment="new"),
    Row("upgrade-refused", "driver:failed", "RESTARTING",
        RESTART + " !Upgraded=UpgradeRefused Checkpointing", TO_RESTARTING, ["stop_driver"],
        deployment="same"),
    Row("upgrade-refused", "monitor", "RUNNING", REFUSED, [], [], observed=True),
    # The new operator reads the running deployment back from its plan ConfigMap and keeps
    # observing it; the refusal is not said again.
    Row("upgrade-refused", "operator-restart", "RUNNING", REFUSED, [], [], {
        "deployedGeneration": 1}, observed=True),
    Row("upgrade-refused", "delete", "RUNNING", REFUSED, [], DELETED),

    # == queued: waiting for a driver slot =======================================================
    # (driver events, savepoints, nonce, restarts, TTL: no driver yet.)
    Row("queued", "slot-freed", "CREATED", NEW, ["Submitted"], [P0],
        {"deployedGeneration": 1}, deployment="new"),
    Row("queued", "kopf-retry", "CREATED", QUEUED, [], [P0], raises="QueuedError"),
    # Questionable: while queued, a new generation is not reported (observedGeneration
    # stays 1: the Queued condition was said already).
    Row("queued", "spec:stateless", "CREATED", QUEUED, [], [P0], {"observedGeneration": 1},
        raises="QueuedError"),
    # Questionable: a job that never ran is told "previous version keeps running".
    Row("queued", "spec:invalid", "CREATED", "!Compiled=InvalidSpec !Provisioned=Queued",
        ["InvalidSpec"], []),
    Row("queued", "suspend", "SUSPENDED", QUEUED + " !Running=JobSuspended",
        ["JobStatusChanged", "Suspended"], ["stop_driver"]),
    Row("queued", "operator-restart", "CREATED", QUEUED, [], [P0], raises="QueuedError"),
    Row("queued", "delete", "CREATED", QUEUED, [], DELETED),
]


def expected_conditions(text: str) -> dict[str, str]:
    result = {}
    for token in text.split():
        value = "False" if token.startswith("!") else "True"
        kind, _, reason = token.lstrip("!").partition("=")
        result[kind] = f"{value}:{reason or USUAL[kind]}"
    return result


def dig(status: dict[str, Any], path: str) -> Any:
    value: Any = status
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return ABSENT
        value = value[part]
    return value


def check_field(path: str, actual: Any, wanted: Any) -> None:
    if isinstance(wanted, type):  # present, of that type
        assert isinstance(actual, wanted), f"{path}: {actual!r} is not a {wanted.__name__}"
    elif isinstance(wanted, list) and wanted and isinstance(wanted[0], type):
        assert isinstance(actual, list) and len(actual) == len(wanted), f"{path}: {actual!r}"
    else:
        assert actual == wanted, f"{path}: {actual!r} != {wanted!r}"


async def play(row: Row) -> Harness:
    h = Harness(max_drivers=1 if "slot" in row.event or row.start == "queued" else None,
                savepoint_timeout=row.savepoint_timeout)
    await STARTS[row.start](h, row.spec)
    if row.answer is not None:
        h.backend.savepoint_answer["job"] = row.answer
    h.mark()
    await EVENTS[row.event](h)
    return h


@pytest.mark.parametrize("row", [pytest.param(row, id=row.id) for row in TABLE])
def test_lifecycle(row: Row) -> None:
    h = asyncio.run(play(row))
    status = h.status()
    assert status.get("jobStatus") == row.job_status
    assert h.conditions() == expected_conditions(row.conditions)
    assert h.new_events() == row.events
    assert h.new_calls() == row.calls
    assert (type(h.raised).__name__ if h.raised else None) == row.raises, h.raised
    for path, wanted in row.fields.items():
        check_field(path, dig(status, path), wanted)
    if row.deployment is not None:
        before, after = dig(h.before, "deployment.id"), dig(status, "deployment.id")
        lineage = ("none" if after is ABSENT else "same" if after == before else "new")
        assert lineage == row.deployment
    if row.observed is not None:
        assert (h.observed() > 0) == row.observed


def test_the_table_names_only_known_states_and_events() -> None:
    assert {row.start for row in TABLE} <= STARTS.keys()
    assert {row.event for row in TABLE} <= EVENTS.keys()
    ids = [row.id for row in TABLE]
    assert len(ids) == len(set(ids)), "two rows with the same id"


def test_a_deleted_job_is_no_longer_observed_nor_provisioned() -> None:
    """After on_delete, monitor cycles leave the backend alone."""
    async def scenario() -> Harness:
        h = Harness()
        await running_stream(h, {})
        await h.controller.on_delete(h.job)
        h.kube.remove("DataflowJob", h.job.namespace, h.job.name)
        h.mark()
        await h.cycle(3)
        return h

    h = asyncio.run(scenario())
    assert h.observed() == 0 and h.new_calls() == [] and h.controller.records == {}


def test_the_fakes_answer_as_the_api_server_and_a_backend_do() -> None:
    """What the table relies on: merge patches of status, 404s, injected failures, adoption
    and the driver-slot limit."""
    kube = FakeKube()
    ref = kube.add_job("job", BATCH)
    assert kube.get("DataflowJob", "default", "nope") is None
    kube.merge_patch("DataflowJob", "default", "job",
                     {"status": {"a": 1, "b": {"c": 2}}, "spec": {"parallelism": 9}}, "status")
    kube.merge_patch("DataflowJob", "default", "job", {"status": {"b": None}}, "status")
    assert kube.status(ref) == {"a": 1} and kube.spec(ref) == BATCH
    with pytest.raises(ApiException) as gone:
        kube.merge_patch("DataflowJob", "default", "nope", {"status": {}}, "status")
    assert gone.value.status == 404
    kube.fail_next(409, method="merge_patch")
    kube.get("DataflowJob", "default", "job")  # another verb: not failed
    with pytest.raises(ApiException) as conflict:
        kube.merge_patch("DataflowJob", "default", "job", {"status": {"a": 2}}, "status")
    assert conflict.value.status == 409 and kube.status(ref) == {"a": 1}
    assert kube.set_spec(ref, BATCH) == 1 and kube.set_spec(ref, STREAM) == 2

    async def provisioned() -> FakeBackend:
        h = Harness(max_drivers=1)
        await running_batch(h, {})
        await operator_restart(h)  # the running driver is adopted, not started twice
        await h.apply(BATCH, name="other")  # queued behind it
        return h.backend

    backend = asyncio.run(provisioned())
    assert [str(c) for c in backend.calls] == [P0, ADOPTED, "provision(restart=0, from=none)"]
    assert len(backend.started) == 1 and backend.counts["observe"] >= 2
