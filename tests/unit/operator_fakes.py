"""In-memory fakes of what DataflowController talks to, for unit tests of its lifecycle.

``FakeKube`` stands in for the API server (the DataflowJob object and its status, Events, the
plan ConfigMap) and ``FakeBackend`` for a backend whose drivers a test scripts: their phase,
the runner's status document, and how they answer savepoint requests. Both count every call.
Nothing sleeps and nothing leaves the process.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kubernetes.client.exceptions import ApiException

from dataflow_engine.rest import (
    PROTOCOL_VERSION,
    SavepointFailureReason,
    SavepointTriggerRequest,
    parse_status,
)
from dataflow_engine.runtime.checkpoint.savepoints import UPGRADE_REFUSED
from dataflow_operator.backends.base import DriverObservation, DriverPhase, DriverQueued
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status.model import DriverStatus

if TYPE_CHECKING:
    from dataflow_engine.spec.model import DataflowJobSpec
    from dataflow_operator.plan import JobPlan
    from dataflow_operator.status.model import DeploymentStatus

API_VERSION = "dataflow.io/v1alpha1"
Key = tuple[str, str, str]  # kind, namespace, name


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: ``patch`` applied to ``target`` (a new object; null removes a key)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def api_error(status: int, message: str = "") -> ApiException:
    """An ApiException as the client raises it, with the server's JSON body."""
    reasons = {404: "Not Found", 409: "Conflict", 422: "Unprocessable Entity",
               429: "Too Many Requests", 500: "Internal Server Error",
               503: "Service Unavailable"}
    error = ApiException(status=status, reason=reasons.get(status, "Error"))
    error.body = json.dumps({"kind": "Status", "code": status,
                             "message": message or f"fake API server: {status}"})
    return error


@dataclass
class _Failure:
    status: int
    method: str | None
    kind: str | None
    message: str


class FakeKube:
    """The API server, as far as the controller and the fake backend use it: objects by kind,
    namespace and name; merge patches (``sub="status"`` changes status only, as the status
    subresource does); created Events kept in order. ``get`` answers None for an absent
    object, the other verbs 404. ``fail_next`` makes a coming call raise an ApiException."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[str, Any]] = {}
        #: Every Event created, in order.
        self.events: list[dict[str, Any]] = []
        #: Every call: (verb, kind).
        self.calls: list[tuple[str, str]] = []
        self._failures: list[_Failure] = []
        self._lock = threading.RLock()
        self._uids = itertools.count(1)
        self._versions = itertools.count(1)

    # -- the test's side -------------------------------------------------------------------

    def add_job(self, name: str, spec: dict[str, Any], namespace: str = "default") -> JobRef:
        """Creates a DataflowJob (generation 1, no status) and returns its reference."""
        uid = f"uid-{name}-{next(self._uids)}"
        self.objects[("DataflowJob", namespace, name)] = {
            "apiVersion": API_VERSION, "kind": "DataflowJob",
            "metadata": {"name": name, "namespace": namespace, "uid": uid, "generation": 1,
                         "resourceVersion": str(next(self._versions))},
            "spec": copy.deepcopy(spec)}
        return JobRef(name=name, namespace=namespace, uid=uid)

    def set_spec(self, ref: JobRef, spec: dict[str, Any]) -> int:
        """Replaces the job's spec; the generation moves only if the spec changed (as the API
        server does). Returns the generation."""
        obj = self._job(ref)
        if obj["spec"] != spec:
            obj["spec"] = copy.deepcopy(spec)
            obj["metadata"]["generation"] += 1
            obj["metadata"]["resourceVersion"] = str(next(self._versions))
        return int(obj["metadata"]["generation"])

    def job(self, ref: JobRef) -> dict[str, Any] | None:
        found = self.objects.get(("DataflowJob", ref.namespace, ref.name))
        return copy.deepcopy(found) if found is not None else None

    def spec(self, ref: JobRef) -> dict[str, Any]:
        return copy.deepcopy(self._job(ref)["spec"])

    def generation(self, ref: JobRef) -> int:
        return int(self._job(ref)["metadata"]["generation"])

    def status(self, ref: JobRef) -> dict[str, Any]:
        """The stored status ({} before the operator wrote any)."""
        return copy.deepcopy(self._job(ref).get("status") or {})

    def remove(self, kind: str, namespace: str, name: str) -> None:
        """Deletes an object behind the operator's back (e.g. its namespace went)."""
        self.objects.pop((kind, namespace, name), None)

    def fail_next(self, status: int, *, method: str | None = None, kind: str | None = None,
                  message: str = "", times: int = 1) -> None:
        """The next ``times`` calls (of ``method`` on ``kind``, when given) raise an
        ApiException of ``status``: 409, 500 and the like are transient, 404 means gone."""
        for _ in range(times):
            self._failures.append(_Failure(status, method, kind, message))

    def event_reasons(self, ref: JobRef | None = None) -> list[str]:
        return [e["reason"] for e in self.events_of(ref)]

    def events_of(self, ref: JobRef | None = None) -> list[dict[str, Any]]:
        return [e for e in self.events
                if ref is None or (e["involvedObject"]["name"], e["involvedObject"]["uid"])
                == (ref.name, ref.uid)]

    def _job(self, ref: JobRef) -> dict[str, Any]:
        return self.objects[("DataflowJob", ref.namespace, ref.name)]

    def _enter(self, method: str, kind: str) -> None:
        self.calls.append((method, kind))
        for failure in self._failures:
            if failure.method in (None, method) and failure.kind in (None, kind):
                self._failures.remove(failure)
                raise api_error(failure.status, failure.message)

    # -- what Kube offers --------------------------------------------------------------------

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            self._enter("get", kind)
            found = self.objects.get((kind, namespace, name))
            return copy.deepcopy(found) if found is not None else None

    def list(self, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        with self._lock:
            self._enter("list", kind)
            parts = [part for part in selector.split(",") if part]
            wanted = dict(part.split("=", 1) for part in parts if "=" in part)
            present = {part for part in parts if "=" not in part}  # "key": the label exists

            def matches(labels: dict[str, str]) -> bool:
                return wanted.items() <= labels.items() and present <= labels.keys()

            return [copy.deepcopy(obj) for (k, ns, _), obj in sorted(self.objects.items())
                    if k == kind and ns == namespace
                    and matches(obj.get("metadata", {}).get("labels") or {})]

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            kind, meta = obj["kind"], dict(obj["metadata"])
            self._enter("create", kind)
            if "name" not in meta:
                meta["name"] = f"{meta.get('generateName', '')}{next(self._uids):05d}"
            stored = {**copy.deepcopy(obj), "metadata": {
                "uid": f"uid-{meta['name']}", "generation": 1,
                "creationTimestamp": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                **meta, "resourceVersion": str(next(self._versions))}}
            if kind == "Event":
                self.events.append(stored)
                return copy.deepcopy(stored)
            key = (kind, meta["namespace"], meta["name"])
            if key in self.objects:
                raise api_error(409, f"{kind} {meta['name']} already exists")
            self.objects[key] = stored
            return copy.deepcopy(stored)

    def replace(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            meta = obj["metadata"]
            self._enter("replace", obj["kind"])
            key = (obj["kind"], meta["namespace"], meta["name"])
            if key not in self.objects:
                raise api_error(404)
            self.objects[key] = copy.deepcopy(obj)
            return copy.deepcopy(obj)

    def merge_patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any],
                    sub: str | None = None) -> dict[str, Any]:
        with self._lock:
            self._enter("merge_patch", kind)
            key = (kind, namespace, name)
            if key not in self.objects:
                raise api_error(404, f"{kind} {name} not found")
            obj = self.objects[key]
            if sub == "status":
                patch = {"status": patch.get("status")} if "status" in patch else {}
            else:
                patch = {k: v for k, v in patch.items() if k != "status"}
            self.objects[key] = merge_patch(obj, patch)
            self.objects[key]["metadata"]["resourceVersion"] = str(next(self._versions))
            return copy.deepcopy(self.objects[key])

    def delete(self, kind: str, namespace: str, name: str,
               grace_seconds: int | None = None) -> bool:
        with self._lock:
            self._enter("delete", kind)
            return self.objects.pop((kind, namespace, name), None) is not None

    def create_or_adopt(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            meta = obj["metadata"]
            self._enter("create_or_adopt", obj["kind"])
            key = (obj["kind"], meta["namespace"], meta["name"])
            self.objects[key] = copy.deepcopy(obj)
            return copy.deepcopy(obj)

    def ping(self, timeout: float = 5) -> None:
        with self._lock:
            self._enter("ping", "")


class SavepointAnswer(StrEnum):
    """How a fake driver answers a savepoint request."""

    #: Listed with a path at the next look (a stopping one ends the job: FINISHED).
    COMPLETE = "complete"
    #: Listed with an error at the next look (``FakeBackend.savepoint_error``).
    FAIL = "fail"
    #: An upgrade's request (with ``upgradeTo``, without allowNonRestoredState) is listed
    #: with the runner's refusal; any other completes.
    REFUSE_UPGRADE = "refuse-upgrade"
    #: Accepted and never listed (the driver never reaches an epoch boundary).
    NEVER = "never"
    #: The request itself fails (the driver's status server cannot be reached).
    UNREACHABLE = "unreachable"


#: The error a fake runner lists for an upgrade whose plan cannot take its state.
REFUSAL = (f"{UPGRADE_REFUSED}, so the job keeps running: operator 'sums' has state the new "
           "plan does not (allow non-restored state to drop it)")


#: What a runner answers a savepoint request of a job that does not run in epochs.
NOT_CONTINUOUS = ("only a running continuous (STREAMING, unbounded source) job takes "
                  "savepoints")


@dataclass
class FakeDriver:
    """One driver run: what ``observe`` reports of it. The test moves it with run(),
    finish(), fail(), pend() and lose(); the backend with savepoint requests and stops."""

    job: JobRef
    plan_hash: str
    #: (JobVertex id, parallelism) of the plan it runs.
    vertices: list[tuple[str, int]]
    continuous: bool
    restart: int
    restore_from: str | None
    phase: DriverPhase = DriverPhase.PENDING
    pending_reason: str = ""
    pending_message: str = ""
    #: Why it failed (the observation's message).
    message: str = ""
    #: The runner's jobStatus; None while no runner serves a status document.
    job_status: str | None = None
    subtask_state: str = "CREATED"
    #: Savepoint requests accepted and not listed yet.
    requests: list[dict[str, Any]] = field(default_factory=list)
    #: The runner's ``checkpoints.savepoints`` entries, newest last.
    savepoints: list[dict[str, Any]] = field(default_factory=list)
    #: Rates the runner reports since ``loaded``, by JobVertex id: (records in per second,
    #: records out per second, busy ratio); a source's records in are what its head read.
    load: dict[str, tuple[float, float, float]] = field(default_factory=dict)
    loaded: float = 0.0
    #: When it started running (epoch ms), its runner's startTime.
    started: int = 0

    # -- moved by the test -----------------------------------------------------------------

    def run(self, spark_started: bool = True) -> FakeDriver:
        """The driver runs; its runner reports RUNNING subtasks (or, before Spark started,
        jobStatus CREATED and SCHEDULED subtasks)."""
        self.phase = DriverPhase.RUNNING
        self.started = self.started or int(time.time() * 1000)
        self.pending_reason = self.pending_message = ""
        self.job_status = "RUNNING" if spark_started else "CREATED"
        self.subtask_state = "RUNNING" if spark_started else "SCHEDULED"
        return self

    def finish(self) -> FakeDriver:
        """The job ran to its end: the driver exited 0, its last document says FINISHED."""
        self.phase, self.job_status, self.subtask_state = (DriverPhase.SUCCEEDED, "FINISHED",
                                                           "FINISHED")
        return self

    def with_load(self, load: dict[str, tuple[float, float, float]]) -> FakeDriver:
        """Counters that grow at these rates from now on (see :attr:`load`)."""
        self.load, self.loaded = load, time.monotonic()
        return self

    def fail(self, message: str = "driver exited with code 1: boom") -> FakeDriver:
        self.phase, self.message = DriverPhase.FAILED, message
        if self.job_status is not None:
            self.job_status, self.subtask_state = "FAILED", "FAILED"
        return self

    def pend(self, reason: str = "", message: str = "") -> FakeDriver:
        """Pending; with a reason (e.g. Unschedulable) when it cannot start."""
        self.phase, self.pending_reason, self.pending_message = (DriverPhase.PENDING, reason,
                                                                 message)
        return self

    def lose(self) -> FakeDriver:
        """The driver is gone (its pod deleted, its process record lost): Missing."""
        self.phase = DriverPhase.MISSING
        return self

    @property
    def alive(self) -> bool:
        return self.phase in (DriverPhase.PENDING, DriverPhase.RUNNING)

    # -- what observe reports ----------------------------------------------------------------

    def runner(self) -> dict[str, Any] | None:
        """The runner's status document as the runner writes it (a
        ``dataflow_engine.rest.DriverStatusDocument``)."""
        if self.job_status is None:
            return None
        now = int(time.time() * 1000)
        document: dict[str, Any] = {
            "schemaVersion": PROTOCOL_VERSION, "jobName": self.job.name, "jobId": self.plan_hash,
            "runtimeMode": "STREAMING" if self.continuous else "BATCH",
            "startTime": self.started or now,
            "updateTime": now, "jobStatus": self.job_status,
            "error": (self.message or None) if self.job_status == "FAILED" else None,
            "vertices": [self._vertex(vertex_id, parallelism)
                         for vertex_id, parallelism in self.vertices],
            "checkpoints": None}
        if self.continuous:
            document["checkpoints"] = {
                "epochs": 5, "completed": 2, "failed": 0, "consecutiveFailures": 0,
                "lastFailure": None,
                "lastCompleted": {"id": 2, "time": now, "durationMs": 12, "stateSize": 640,
                                  "path": f"/checkpoints/{self.job.name}/chk-2"},
                "restoredFrom": (self.restore_from if self.restore_from not in (None, "none",
                                                                                "latest")
                                 else None),
                "savepoints": copy.deepcopy(self.savepoints), "kafkaPartitions": []}
            document["metricsTime"] = now  # its counters are as of now: an epoch just ended
        return document

    def _vertex(self, vertex_id: str, parallelism: int) -> dict[str, Any]:
        if vertex_id not in self.load:
            return {"id": vertex_id, "name": vertex_id, "parallelism": parallelism,
                    "maxParallelism": 128, "subtasks": [
                        {"index": i, "state": self.subtask_state, "attempt": 0,
                         "recordsIn": 10, "recordsOut": 10} for i in range(parallelism)]}
        elapsed = time.monotonic() - self.loaded
        records_in, records_out, busy = self.load[vertex_id]
        per_subtask = {"recordsIn": int(records_in * elapsed / parallelism),
                       "recordsOut": int(records_out * elapsed / parallelism),
                       "busyMs": int(busy * elapsed * 1000)}
        return {"id": vertex_id, "name": vertex_id, "parallelism": parallelism,
                "maxParallelism": 128, "subtasks": [
                    {"index": i, "state": self.subtask_state, "attempt": 0, **per_subtask}
                    for i in range(parallelism)],
                "operators": [{"name": "head", "type": "head",
                               "recordsIn": int(records_in * elapsed),
                               "recordsOut": int(records_in * elapsed)}]}

    def observation(self) -> DriverObservation:
        if self.phase is DriverPhase.MISSING:
            return DriverObservation(DriverPhase.MISSING)
        runner = self.runner()
        document = parse_status(runner) if runner is not None else None
        assert runner is None or document is not None, "the fake's document must parse"
        return DriverObservation(
            self.phase, document, self.message if self.phase is DriverPhase.FAILED else "",
            self.plan_hash, self.pending_reason if self.phase is DriverPhase.PENDING else "",
            self.pending_message if self.phase is DriverPhase.PENDING else "")


@dataclass(frozen=True)
class Call:
    """One backend call that changes something (observe and snapshot are only counted)."""

    method: str
    job: str
    #: provision: the restart number; the deployment's restoreFrom, id and generation.
    restart: int | None = None
    restore_from: str | None = None
    deployment_id: str | None = None
    generation: int | None = None
    #: provision: an existing driver of this plan was adopted, none started.
    adopted: bool = False
    #: request_savepoint: the request's body.
    request: dict[str, Any] | None = None
    #: dispose_savepoint: the savepoint's path.
    path: str | None = None

    def __str__(self) -> str:
        if self.method == "provision":
            return (f"provision(restart={self.restart}, from={self.restore_from})"
                    + (" adopted" if self.adopted else ""))
        if self.method == "request_savepoint":
            assert self.request is not None
            trigger = str(self.request["nonce"]).split("-", 1)[0]
            flags = "".join([", stop" if self.request.get("stop") else "",
                             ", upgradeTo" if "upgradeTo" in self.request else ""])
            return f"savepoint({trigger}{flags})"
        return self.method


class FakeBackend:
    """The Backend protocol over scripted drivers, one current driver per job.

    ``provision`` writes the plan ConfigMap (through the FakeKube, so its failures reach the
    controller as a real backend's would) and starts a Pending driver unless one of the same
    plan is alive; beyond ``max_drivers`` alive drivers it raises DriverQueued. Savepoint
    requests are answered per job as ``savepoint_answer`` says, at the next ``observe``. Every
    call is counted in ``counts``; those that change something are kept in ``calls``."""

    name = "fake"

    def __init__(self, kube: FakeKube | None = None, max_drivers: int | None = None) -> None:
        self.kube = kube
        self.max_drivers = max_drivers
        #: The current driver of each job (an ended one stays until stopped or cleaned up).
        self.drivers: dict[tuple[str, str], FakeDriver] = {}
        #: Every driver ever started, in order.
        self.started: list[FakeDriver] = []
        self.calls: list[Call] = []
        self.counts: dict[str, int] = dict.fromkeys(
            ("provision", "request_savepoint", "dispose_savepoint", "forget", "clean_up",
             "stop_driver", "snapshot", "observe"), 0)
        #: How each job's drivers answer savepoint requests (by job name); default COMPLETE.
        self.savepoint_answer: dict[str, SavepointAnswer] = {}
        #: The error a FAIL answer lists.
        self.savepoint_error = "savepoint 3 failed: the checkpoint storage is unavailable"
        #: Raised by the next call of a method (e.g. {"provision": RuntimeError("boom")}).
        self.raise_next: dict[str, BaseException] = {}
        self._savepoint_ids = itertools.count(3)
        self._lock = threading.RLock()

    # -- the test's side -------------------------------------------------------------------

    def driver(self, ref: JobRef) -> FakeDriver:
        """The job's current driver (KeyError if none)."""
        return self.drivers[(ref.namespace, ref.name)]

    def has_driver(self, ref: JobRef) -> bool:
        return (ref.namespace, ref.name) in self.drivers

    def calls_of(self, ref: JobRef) -> list[Call]:
        return [c for c in self.calls if c.job == ref.name]

    def provisions(self, ref: JobRef) -> list[Call]:
        return [c for c in self.calls_of(ref) if c.method == "provision"]

    def requests(self, ref: JobRef) -> list[dict[str, Any]]:
        return [c.request for c in self.calls_of(ref)
                if c.method == "request_savepoint" and c.request is not None]

    # -- the Backend protocol ----------------------------------------------------------------

    def _count(self, method: str) -> None:
        self.counts[method] += 1
        error = self.raise_next.pop(method, None)
        if error is not None:
            raise error

    def provision(self, job: JobRef, spec: DataflowJobSpec, plan: JobPlan,
                  restart: int, deployment: DeploymentStatus | None = None) -> DriverStatus:
        with self._lock:
            key = (job.namespace, job.name)
            current = self.drivers.get(key)
            # Adopted: a driver of this plan that runs, or this very run, ended (as the local
            # backend finds an ended run's record, and never runs it twice).
            adopt = (current is not None and current.plan_hash == plan.status.hash
                     and current.phase is not DriverPhase.MISSING
                     and (current.alive or current.restart == restart))
            self.calls.append(Call(
                "provision", job.name, restart=restart,
                restore_from=deployment.restore_from if deployment else None,
                deployment_id=deployment.id if deployment else None,
                generation=deployment.generation if deployment else None, adopted=adopt))
            self._count("provision")
            if self.kube is not None:
                self.kube.create_or_adopt({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": job.plan_config_map, "namespace": job.namespace,
                                 "ownerReferences": [job.owner_reference()]},
                    "data": dict(plan.files)})
            if adopt:
                return self._status(job)
            others = sum(1 for k, d in self.drivers.items() if k != key and d.alive)
            if self.max_drivers is not None and others >= self.max_drivers:
                raise DriverQueued(f"{others} of {self.max_drivers} fake drivers are running; "
                                   "the job starts when one ends")
            driver = FakeDriver(
                job, plan.status.hash, [(v.id, v.parallelism) for v in plan.status.job_vertices],
                plan.compiled.continuous, restart,
                deployment.restore_from if deployment else None)
            self.drivers[key] = driver
            self.started.append(driver)
            return self._status(job)

    @staticmethod
    def _status(job: JobRef) -> DriverStatus:
        return DriverStatus(pod=job.driver_pod, logs=f"fake logs of {job.name}")

    def request_savepoint(self, job: JobRef, message: SavepointTriggerRequest) -> None:
        request = message.model_dump(mode="json", by_alias=True, exclude_none=True)
        with self._lock:
            self.calls.append(Call("request_savepoint", job.name, request=copy.deepcopy(request)))
            self._count("request_savepoint")
            driver = self.drivers.get((job.namespace, job.name))
            if driver is None or driver.phase is not DriverPhase.RUNNING:
                raise RuntimeError("no driver runs")
            if not driver.continuous:  # as the runner's POST /savepoints refuses it
                raise RuntimeError(NOT_CONTINUOUS)
            answer = self.savepoint_answer.get(job.name, SavepointAnswer.COMPLETE)
            if answer is SavepointAnswer.UNREACHABLE:
                raise ConnectionRefusedError("the driver's status server does not answer")
            driver.requests.append(copy.deepcopy(request))

    def dispose_savepoint(self, job: JobRef, path: str) -> bool:
        with self._lock:
            self.calls.append(Call("dispose_savepoint", job.name, path=path))
            self._count("dispose_savepoint")
            driver = self.drivers.get((job.namespace, job.name))
            if driver is None or driver.phase is not DriverPhase.RUNNING:
                raise RuntimeError("no driver runs")
            return True

    def forget(self, job: JobRef) -> None:
        with self._lock:
            self.calls.append(Call("forget", job.name))
            self._count("forget")
            self.drivers.pop((job.namespace, job.name), None)

    def clean_up(self, job: JobRef) -> bool:
        with self._lock:
            self.calls.append(Call("clean_up", job.name))
            self._count("clean_up")
            return self.drivers.pop((job.namespace, job.name), None) is not None

    def stop_driver(self, job: JobRef) -> None:
        with self._lock:
            self.calls.append(Call("stop_driver", job.name))
            self._count("stop_driver")
            driver = self.drivers.pop((job.namespace, job.name), None)
            if driver is not None and driver.alive:
                driver.phase = DriverPhase.MISSING

    def snapshot(self, jobs: list[JobRef]) -> object:
        with self._lock:
            self._count("snapshot")
            return None

    def observe(self, job: JobRef, snapshot: object = None) -> DriverObservation:
        with self._lock:
            self._count("observe")
            driver = self.drivers.get((job.namespace, job.name))
            if driver is None:
                return DriverObservation(DriverPhase.MISSING)
            if driver.phase is DriverPhase.RUNNING:
                self._answer(driver)
            return driver.observation()

    def _answer(self, driver: FakeDriver) -> None:
        """The epoch boundary: accepted requests are listed, as the runner lists them."""
        answer = self.savepoint_answer.get(driver.job.name, SavepointAnswer.COMPLETE)
        if answer is SavepointAnswer.NEVER:
            return
        for request in driver.requests:
            entry: dict[str, Any] = {"nonce": request["nonce"], "time": int(time.time() * 1000),
                                     "id": None, "path": None, "error": None,
                                     "stop": bool(request.get("stop")),
                                     "kind": request.get("kind", "savepoint"),
                                     "drained": bool(request.get("drain"))}
            upgrade = request.get("upgradeTo")
            if answer is SavepointAnswer.FAIL:
                entry["error"] = self.savepoint_error
            elif (answer is SavepointAnswer.REFUSE_UPGRADE and upgrade is not None
                  and not upgrade.get("allowNonRestoredState")):
                entry.update(error=REFUSAL, reason=SavepointFailureReason.UPGRADE_REFUSED.value)
            else:
                number = next(self._savepoint_ids)
                directory = ("checkpoints" if request.get("kind") == "checkpoint"
                             else "savepoints")
                leaf = "chk" if directory == "checkpoints" else "savepoint"
                entry.update(id=number, path=f"/{directory}/{driver.job.name}/{leaf}-{number}")
            driver.savepoints.append(entry)
            if entry["path"] is not None and entry["stop"]:  # stop-with-savepoint: the end
                driver.finish()
        driver.requests.clear()
