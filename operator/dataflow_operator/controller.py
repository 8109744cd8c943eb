"""The DataflowJob controller: spec changes in, provisioned drivers and reconciled status out.

kopf calls :meth:`DataflowController.on_spec` on create, update and resume; one monitor task
observes every live job's driver and folds what it sees into status. A per-job lock keeps the
two from interleaving. Blocking Kubernetes calls run in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from dataflow_engine.errors import SpecError
from dataflow_engine.graph.states import IllegalStateTransition, JobStatus
from dataflow_engine.manifest import load_manifest_text
from dataflow_engine.policy import STRICT, JobPolicy
from dataflow_engine.runtime.checkpoint.savepoints import UPGRADE_REFUSED
from dataflow_engine.spec import DataflowJobSpec, UpgradeMode
from dataflow_engine.validation import parse_spec
from dataflow_operator import conditions as cond
from dataflow_operator import savepoints as sp
from dataflow_operator.backends.base import (
    Backend,
    DriverObservation,
    DriverPhase,
    DriverQueued,
)
from dataflow_operator.events import post_event
from dataflow_operator.kube import (
    TRANSIENT_STATUSES,
    Kube,
    StaleObjectError,
    merge_patch_between,
)
from dataflow_operator.metrics import Metrics
from dataflow_operator.plan import JOB_FILE_KEY, JobPlan, build_plan
from dataflow_operator.reconciler import (
    NORMAL,
    WARNING,
    Event,
    Transition,
    initial_vertices,
    observe,
    subtask_summary,
    with_job_status,
)
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.status_budget import within_budget
from dataflow_operator.status_model import DataflowJobStatus, DeploymentStatus, SavepointInfo

log = logging.getLogger("dataflow.operator")


class TransientError(Exception):
    """Worth retrying with backoff: API conflicts, throttling, timeouts."""

    #: Seconds before the retry; None: exponential backoff.
    delay: float | None = None


class MonitorStalled(RuntimeError):
    """The status monitor stopped cycling: /healthz fails, so the kubelet restarts us."""


#: A monitor cycle older than this (or 20 poll intervals) makes the operator unhealthy.
MONITOR_STALE_SECONDS = 120.0


class SavepointDelayed(TransientError):
    """A stateful upgrade could not get its savepoint yet (the driver is still starting, or
    the savepoint failed): retried, the job running as it was meanwhile."""

    delay = 10.0


class QueuedError(TransientError):
    """The job waits for a driver slot: retried soon, without backoff."""

    delay = 2.0


@dataclass
class JobRecord:
    ref: JobRef
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    generation: int = 0
    #: The spec of the running deployment (the last good one).
    spec: DataflowJobSpec | None = None
    plan: JobPlan | None = None
    status: DataflowJobStatus = field(default_factory=DataflowJobStatus)
    #: What was last written to the API server, to patch only on change.
    written: dict[str, Any] | None = None
    #: When a restart is due (monotonic seconds), after the strategy's delay.
    restart_at: float | None = None
    #: Bumped by every spec reconcile: an observation from an older epoch is dropped.
    epoch: int = 0


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUSES
    return isinstance(exc, (urllib3.exceptions.HTTPError, TimeoutError, ConnectionError,
                            StaleObjectError))


class DataflowController:
    def __init__(self, kube: Kube, backend: Backend, metrics: Metrics,
                 poll_interval: float = 1.0, concurrency: int = 16,
                 policy: JobPolicy = STRICT, savepoint_timeout: float = 120.0) -> None:
        self.kube = kube
        self.policy = policy
        self.backend = backend
        self.metrics = metrics
        self.poll_interval = poll_interval
        #: How long a driver has to report a savepoint it was asked for.
        self.savepoint_timeout = savepoint_timeout
        self.concurrency = concurrency
        self.records: dict[tuple[str, str], JobRecord] = {}
        #: When the monitor last finished a cycle (monotonic seconds), for the health probe.
        self.monitor_beat: float | None = None

    # -- spec handling -----------------------------------------------------------------

    def record_for(self, ref: JobRef, status: Mapping[str, Any] | None) -> JobRecord:
        key = (ref.namespace, ref.name)
        record = self.records.get(key)
        if record is None or record.ref.uid != ref.uid:
            record = JobRecord(ref)
            record.status = DataflowJobStatus.model_validate(dict(status or {}))
            record.written = record.status.model_dump(mode="json", by_alias=True)
            self.records[key] = record
        return record

    async def on_spec(self, ref: JobRef, spec: Mapping[str, Any], status: Mapping[str, Any] | None,
                      generation: int) -> None:
        record = self.record_for(ref, status)
        async with record.lock:
            started = time.perf_counter()
            try:
                valid = await self._reconcile_spec(record, dict(spec), generation)
                self.metrics.reconciled("ok" if valid else "invalid")
            except DriverQueued as exc:
                self.metrics.reconciled("queued")
                await self._queued(record, generation, str(exc))
                raise QueuedError(str(exc)) from exc
            except SavepointDelayed:
                self.metrics.reconciled("transient")
                raise
            except Exception as exc:
                if is_transient(exc):
                    self.metrics.reconciled("transient")
                    self.metrics.error("Transient")
                    raise TransientError(str(exc)) from exc
                self.metrics.reconciled("failed")
                await self._fail_provisioning(record, generation, exc)
            finally:
                self.metrics.reconcile_seconds(time.perf_counter() - started)

    async def _reconcile_spec(self, record: JobRecord, raw_spec: dict[str, Any],
                              generation: int) -> bool:
        """Compiles and provisions; False when the spec is invalid (reported in status)."""
        status = record.status
        record.generation = generation
        try:
            spec = parse_spec(raw_spec)
            plan = build_plan(record.ref.name, record.ref.namespace, spec, self.policy)
        except SpecError as exc:
            await self._invalid_spec(record, generation, exc)
            return False
        deployed_hash = (status.plan.hash if status.plan and status.deployed_generation is not None
                         else None)
        needs_deploy = deployed_hash != plan.status.hash
        current = status.job_status
        terminal = current is not None and current.is_globally_terminal
        upgrading = deployed_hash is not None and needs_deploy and not spec.suspend
        stateful = spec.job.upgrade_mode is not UpgradeMode.STATELESS
        previous = status.deployment
        stopped = previous.stopped_with_savepoint if previous else None
        # Savepoints are asked of a driver that runs a continuous job and was not stopped yet;
        # whether it still runs is looked at now: the status may be older than the driver's
        # end (the operator restarted, or the monitor has not looked since).
        running = (current is JobStatus.RUNNING and stopped is None
                   and (record.plan or plan).compiled.continuous)
        if running and stateful and (upgrading or spec.suspend):
            seen = await asyncio.to_thread(self.backend.observe, record.ref)
            running = seen.phase is DriverPhase.RUNNING
        events: list[Event] = []
        deployment: DeploymentStatus | None = None  # a new one when the driver starts afresh
        if upgrading and not stateful:
            deployment = _deployment(generation, "none")
        elif upgrading and running:
            if _upgrade_refused_before(status, generation):
                if record.plan is None:  # the operator restarted since
                    await self._adopt_running(record)
                return True  # said once; the job keeps running until the spec changes again
            taken, events = await self._take_savepoint(
                record, sp.UPGRADE, stop=True, upgrade_to=plan,
                allow_non_restored_state=spec.job.allow_non_restored_state)
            if taken is None:
                if not (record.status.savepoints.last_error or "").startswith(UPGRADE_REFUSED):
                    await self._savepoint_delayed(record, "upgrade", events, status)
                await self._refuse_upgrade(record, generation, events)
                return True
            deployment = _deployment(generation, taken.path)
        elif upgrading or current is JobStatus.SUSPENDED:
            deployment = (_deployment(generation, stopped) if stopped
                          else _continued(previous, generation) if stateful
                          else _deployment(generation, "none"))
        elif deployed_hash is None:
            deployment = _deployment(generation, spec.job.initial_savepoint_path or "none")
        status = record.status.model_copy(update={
            "observed_generation": generation,
            "plan": plan.status,
            "conditions": cond.set_condition(status.conditions, cond.COMPILED, True, "Compiled",
                                             f"{len(plan.status.job_vertices)} JobVertices, "
                                             f"{plan.status.total_slots} slots", generation),
        })
        if current is None:  # a nonce already set when the job is created asks for nothing
            status = status.model_copy(update={"savepoints": status.savepoints.model_copy(
                update={"last_trigger_nonce": spec.job.savepoint_trigger_nonce})})
        record.spec, record.plan, record.restart_at = spec, plan, None
        record.status = status
        if spec.suspend:
            if running and stateful:
                before = record.status
                taken, taken_events = await self._take_savepoint(record, sp.SUSPEND, stop=True)
                events += taken_events
                if taken is None:  # as in Flink's operator: not suspended without its state
                    await self._savepoint_delayed(record, "suspend", events, before)
                status = record.status
            await asyncio.to_thread(self.backend.stop_driver, record.ref)
            if not terminal and current is not JobStatus.SUSPENDED:
                status, moved = _new_job_status(status, JobStatus.SUSPENDED, generation)
                events += [*moved, Event(NORMAL, "Suspended", "driver stopped; resource kept")]
        elif not (terminal and not needs_deploy):
            deployment = deployment or previous or _deployment(generation, "latest")
            if upgrading:
                events.append(Event(NORMAL, "SpecChanged",
                                    f"plan changed ({deployed_hash} -> {plan.status.hash}); "
                                    f"redeploying ({spec.job.upgrade_mode.value} upgrade, "
                                    f"starting from {_restore_text(deployment, previous)})"))
                await asyncio.to_thread(self.backend.stop_driver, record.ref)
            fresh = (needs_deploy or current in (None, JobStatus.SUSPENDED)
                     or _queued_before(status))
            if current is JobStatus.SUSPENDED:
                events.append(Event(NORMAL, "Resumed", "starting the driver again from "
                                    f"{_restore_text(deployment, previous)}"))
            driver = await asyncio.to_thread(self.backend.provision, record.ref, spec, plan,
                                             0 if fresh else status.restarts, deployment)
            if fresh:
                first = current is None
                status, moved = _new_job_status(status, JobStatus.CREATED, generation)
                if first:
                    moved = []  # "Submitted" says it; "none -> CREATED" would add nothing
                kept = (cond.COMPILED, cond.PROVISIONED, cond.UPGRADED)
                status = status.model_copy(update={
                    "restarts": 0, "error": None, "start_time": None, "end_time": None,
                    "vertices": initial_vertices(plan.status),
                    "conditions": [c for c in status.conditions if c.type in kept]})
                events += [*moved, Event(NORMAL, "Submitted",
                                         f"driver started by the {self.backend.name} backend")]
            if upgrading:  # also ends an earlier upgrade's refusal
                status = status.model_copy(update={"conditions": cond.set_condition(
                    status.conditions, cond.UPGRADED, True, "Upgraded",
                    f"{spec.job.upgrade_mode.value} upgrade from "
                    f"{_restore_text(deployment, previous)}",
                    generation)})
            status = status.model_copy(update={
                "driver": driver,
                "deployment": deployment,
                "deployed_generation": generation,
                "subtasks": subtask_summary(status.vertices or initial_vertices(plan.status)),
                "conditions": cond.set_condition(status.conditions, cond.PROVISIONED, True,
                                                 "Provisioned", f"driver on {self.backend.name}",
                                                 generation),
            })
        record.epoch += 1
        await self._post(record, events)
        await self._write(record, status)
        return True

    async def _take_savepoint(self, record: JobRecord, trigger_type: str, *, stop: bool,
                              upgrade_to: JobPlan | None = None,
                              allow_non_restored_state: bool = False
                              ) -> tuple[SavepointInfo | None, list[Event]]:
        """Asks the running driver for a savepoint and waits for its outcome (the record's
        lock is held: nothing else happens to the job meanwhile); records it in status, and
        a savepoint that stopped the job in ``status.deployment`` straight away."""
        request = sp.request_id(trigger_type)
        body = sp.request_body(request, stop=stop,
                               upgrade_to=upgrade_to.compiled if upgrade_to else None,
                               allow_non_restored_state=allow_non_restored_state)
        failure = {"error": ""}
        try:
            await asyncio.to_thread(self.backend.request_savepoint, record.ref, body)
        except Exception as exc:
            failure["error"] = f"the driver cannot take it: {_api_message(exc)}"
        else:
            deadline = time.monotonic() + self.savepoint_timeout
            while time.monotonic() < deadline:
                await asyncio.sleep(self.poll_interval / 2)
                seen = await asyncio.to_thread(self.backend.observe, record.ref)
                entry = sp.reported(seen.runner, request)
                if entry is not None:
                    failure = entry
                    break
                if seen.phase is not DriverPhase.RUNNING:
                    failure["error"] = "the driver stopped before taking it"
                    break
            else:
                failure["error"] = f"not taken within {self.savepoint_timeout:g} s"
        savepoints, info, event = sp.resolved(record.status.savepoints, failure, trigger_type)
        record.status = record.status.model_copy(update={"savepoints": savepoints})
        if stop and info is not None:
            # Written at once: whatever comes next (a failed provisioning, an operator
            # restart) must know the driver is gone and where its state is.
            await self._post(record, [event])
            await self._write(record, _stopped_with(record.status, info.path))
            return info, []
        return info, [event]

    async def _savepoint_delayed(self, record: JobRecord, what: str, events: list[Event],
                                 before: DataflowJobStatus) -> NoReturn:
        """The savepoint an upgrade or suspend needs failed for a passing reason: it is
        retried, and said again only when the reason changed (no Event per retry)."""
        error = record.status.savepoints.last_error
        if error != before.savepoints.last_error:
            await self._post(record, events)
        await self._write(record, record.status)
        raise SavepointDelayed(f"{what} waits for a savepoint: {error}")

    async def _adopt_running(self, record: JobRecord) -> None:
        """The spec and plan of the deployment a refused upgrade left running, read back from
        its plan ConfigMap (what its driver runs), so that the job is observed again."""
        ref = record.ref
        found = await asyncio.to_thread(self.kube.get, "ConfigMap", ref.namespace,
                                        ref.plan_config_map)
        text = ((found or {}).get("data") or {}).get(JOB_FILE_KEY)
        if text is None:
            log.warning("%s/%s: no deployed plan to observe", ref.namespace, ref.name)
            return
        spec = load_manifest_text(text, ref.plan_config_map).spec
        record.spec, record.plan = spec, build_plan(ref.name, ref.namespace, spec, self.policy)

    async def _refuse_upgrade(self, record: JobRecord, generation: int,
                              events: list[Event]) -> None:
        """The running job cannot be upgraded with its state: it keeps running as it was."""
        status = record.status
        message = (f"upgrade to generation {generation} refused, the job keeps running "
                   f"generation {status.deployed_generation}: {status.savepoints.last_error}")
        status = status.model_copy(update={
            "observed_generation": generation,
            "conditions": cond.set_condition(status.conditions, cond.UPGRADED, False,
                                             "UpgradeRefused", message, generation)})
        await self._post(record, [*events, Event(WARNING, "UpgradeRefused", message)])
        await self._write(record, status)

    async def _invalid_spec(self, record: JobRecord, generation: int, exc: SpecError) -> None:
        status = record.status
        message = str(exc)
        if _already_rejected(status, generation, message):
            return  # seen before a restart: no second Event, no second count
        self.metrics.error("InvalidSpec")
        conditions = cond.set_condition(status.conditions, cond.COMPILED, False, "InvalidSpec",
                                        message, generation)
        if record.plan is not None or status.deployed_generation is not None:
            # Keep the last good deployment running, as Flink's operator does.
            status = status.model_copy(update={"observed_generation": generation,
                                               "conditions": conditions})
            await self._post(record, [Event(WARNING, "InvalidSpec",
                                            f"update rejected, previous version keeps "
                                            f"running: {message}")])
            await self._write(record, status)
            return
        conditions = cond.set_failed(conditions, "InvalidSpec", message, generation)
        status = status.model_copy(update={"observed_generation": generation,
                                           "conditions": conditions,
                                           "job_status": JobStatus.FAILED,
                                           "error": message, "end_time": cond.now()})
        await self._post(record, [Event(WARNING, "Failed", f"invalid spec: {message}")])
        await self._write(record, status)

    async def _queued(self, record: JobRecord, generation: int, message: str) -> None:
        """Provisioned=False, reason Queued: the job waits for a driver slot."""
        status = record.status
        if _queued_before(status):
            return  # already said
        conditions = cond.set_condition(status.conditions, cond.PROVISIONED, False, "Queued",
                                        message, generation)
        status = status.model_copy(update={"observed_generation": generation,
                                           "conditions": conditions,
                                           "job_status": status.job_status or JobStatus.CREATED})
        await self._post(record, [Event(NORMAL, "Queued", message)])
        await self._write(record, status)

    async def _fail_provisioning(self, record: JobRecord, generation: int,
                                 exc: BaseException) -> None:
        message = _api_message(exc)
        if _already_failed(record.status, generation, message):
            return
        self.metrics.error("ProvisioningFailed")
        log.warning("provisioning %s/%s failed: %s", record.ref.namespace, record.ref.name,
                    message)
        status = record.status
        conditions = cond.set_condition(status.conditions, cond.PROVISIONED, False,
                                        "ProvisioningFailed", message, generation)
        conditions = cond.set_failed(conditions, "ProvisioningFailed", message, generation)
        status = status.model_copy(update={"observed_generation": generation,
                                           "conditions": conditions,
                                           "job_status": JobStatus.FAILED, "error": message,
                                           "end_time": cond.now()})
        await self._post(record, [Event(WARNING, "Failed", f"provisioning failed: {message}")])
        await self._write(record, status)

    def forget(self, ref: JobRef) -> None:
        self.records.pop((ref.namespace, ref.name), None)

    async def _gone(self, ref: JobRef) -> bool:
        """True if the DataflowJob no longer exists (a delete event may never come, e.g. for
        a namespace deleted while the operator was not watching)."""
        try:
            found = await asyncio.to_thread(self.kube.get, "DataflowJob", ref.namespace, ref.name)
        except Exception:
            return False
        return found is None

    async def on_delete(self, ref: JobRef) -> None:
        record = self.records.pop((ref.namespace, ref.name), None)
        lock = record.lock if record else asyncio.Lock()
        async with lock:
            await asyncio.to_thread(self.backend.stop_driver, ref)
            await asyncio.to_thread(self.backend.forget, ref)

    # -- status --------------------------------------------------------------------------

    async def _write(self, record: JobRecord, status: DataflowJobStatus) -> None:
        """Patches status (within its byte budget) only when it changed since the last write.
        The record keeps every detail; only the written copy is summarised."""
        self.metrics.status_changed(record.status, status)
        record.status = status
        document = within_budget(status).model_dump(mode="json", by_alias=True)
        if document == record.written:
            return
        started = time.perf_counter()
        ref = record.ref
        try:
            await asyncio.to_thread(self.kube.merge_patch, "DataflowJob", ref.namespace,
                                    ref.name, {"status": merge_patch_between(record.written,
                                                                             document)},
                                    "status")
        except ApiException as exc:
            if exc.status == 404:
                self.forget(ref)
                return
            raise
        self.metrics.status_patched(time.perf_counter() - started)
        record.written = document

    async def _post(self, record: JobRecord, events: list[Event]) -> None:
        """Posted before the status they describe is written: if the operator dies between
        the two, the retry posts them again, so an Event is never lost (at least once)."""
        for event in events:
            try:
                await asyncio.to_thread(post_event, self.kube, record.ref, event.type,
                                        event.reason, event.message)
            except ApiException as exc:  # an Event is worth less than the reconcile
                self.metrics.error("EventPostFailed")
                log.warning("cannot post event %s: %s", event.reason, exc.reason)

    # -- the monitor ---------------------------------------------------------------------

    async def monitor(self, stopped: asyncio.Event) -> None:
        """Observes every live job until ``stopped``; one failing job never stops the loop."""
        gate = asyncio.Semaphore(self.concurrency)

        async def one(record: JobRecord, snapshot: object) -> None:
            async with gate:
                try:
                    await self.observe_job(record, snapshot)
                except DriverQueued:
                    pass  # a restart waiting for a driver slot: the next cycle tries again
                except Exception as exc:
                    if await self._gone(record.ref):  # e.g. its namespace was deleted
                        await self.on_delete(record.ref)
                        return
                    self.metrics.error("ObserveFailed")
                    log.warning("observing %s/%s: %s", record.ref.namespace, record.ref.name,
                                exc)

        while not stopped.is_set():
            live = [r for r in list(self.records.values()) if self._needs_observation(r)]
            if live:
                try:
                    snapshot = await asyncio.to_thread(self.backend.snapshot,
                                                       [r.ref for r in live])
                except Exception as exc:
                    self.metrics.error("ReadDriversFailed")
                    log.warning("reading drivers: %s", exc)
                else:
                    await asyncio.gather(*(one(r, snapshot) for r in live))
            await self._clean_up_expired()
            self.metrics.jobs(self.records.values())
            self.monitor_beat = time.monotonic()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopped.wait(), timeout=self.poll_interval)

    async def _clean_up_expired(self) -> None:
        """Deletes the pods of jobs that ended longer than their ttlSecondsAfterFinished ago.
        ``status.driver`` goes with them: a job without it is cleaned up, also after an
        operator restart."""
        now = datetime.now(UTC)
        for record in list(self.records.values()):
            spec, status = record.spec, record.status
            if (spec is None or spec.ttl_seconds_after_finished is None
                    or status.job_status is None or not status.job_status.is_globally_terminal
                    or status.end_time is None or status.driver is None):
                continue
            ttl = spec.ttl_seconds_after_finished
            if now < cond.parse_time(status.end_time) + timedelta(seconds=ttl):
                continue
            async with record.lock:
                if record.status is not status:
                    continue  # reconciled meanwhile: look again next cycle
                try:
                    deleted = await asyncio.to_thread(self.backend.clean_up, record.ref)
                except Exception as exc:
                    self.metrics.error("CleanUpFailed")
                    log.warning("cleaning up %s/%s: %s", record.ref.namespace, record.ref.name,
                                exc)
                    continue
                if deleted:
                    await self._post(record, [Event(
                        NORMAL, "CleanedUp", f"the job ended {ttl} s ago or more "
                        "(ttlSecondsAfterFinished): its driver was deleted")])
                await self._write(record, status.model_copy(update={"driver": None}))

    def monitor_health(self) -> str:
        """Raises MonitorStalled unless the monitor finished a cycle lately: a status loop that
        hangs (or died) leaves every job's status stale while kopf's watch looks fine."""
        if self.monitor_beat is None:
            raise MonitorStalled("the status monitor has not completed a cycle yet")
        age = time.monotonic() - self.monitor_beat
        limit = max(MONITOR_STALE_SECONDS, 20 * self.poll_interval)
        if age > limit:
            raise MonitorStalled(f"the status monitor's last cycle ended {age:.0f} s ago "
                                 f"(limit {limit:.0f} s)")
        return f"last cycle {age:.1f} s ago, {len(self.records)} jobs"

    @staticmethod
    def _needs_observation(record: JobRecord) -> bool:
        """A driver runs (or should): not for a job stopped on purpose (suspended or being
        suspended, or stopped with a savepoint for an upgrade that is not deployed yet) or
        ended. A suspend waiting for its savepoint finds the driver's end itself."""
        status = record.status.job_status
        deployment = record.status.deployment
        return (record.spec is not None and not record.spec.suspend and status is not None
                and status is not JobStatus.SUSPENDED and not status.is_globally_terminal
                and (deployment is None or deployment.stopped_with_savepoint is None))

    async def observe_job(self, record: JobRecord, snapshot: object = None) -> None:
        if record.lock.locked():
            return  # a spec change (e.g. waiting for a savepoint) has it: look next cycle
        epoch = record.epoch
        observation = None
        if record.status.job_status is not JobStatus.RESTARTING:
            observation = await asyncio.to_thread(self.backend.observe, record.ref, snapshot)
        if record.lock.locked():
            return
        async with record.lock:
            if record.spec is None or record.plan is None or not self._needs_observation(record):
                return
            if record.status.job_status is JobStatus.RESTARTING:
                await self._maybe_restart(record)
                return
            if observation is None or record.epoch != epoch:
                return  # the spec changed while we looked; look again next cycle
            transition: Transition = observe(record.status, record.spec, observation,
                                             record.generation)
            if transition.restart_after is not None:
                await asyncio.to_thread(self.backend.stop_driver, record.ref)
                record.restart_at = time.monotonic() + transition.restart_after
            await self._post(record, transition.events)
            await self._write(record, transition.status)
            await self._manual_savepoint(record, observation)

    async def _manual_savepoint(self, record: JobRecord, observation: DriverObservation) -> None:
        """savepointTriggerNonce: a changed nonce asks the running driver for a savepoint; a
        later look finds its outcome in the driver's status."""
        assert record.spec is not None
        status = record.status
        savepoints = status.savepoints
        nonce = record.spec.job.savepoint_trigger_nonce
        events: list[Event] = []
        if savepoints.pending is not None:
            entry = sp.reported(observation.runner, savepoints.pending.request)
            if entry is None and status.job_status is JobStatus.RUNNING:
                asked = cond.parse_time(savepoints.pending.since)
                if datetime.now(UTC) - asked < timedelta(seconds=self.savepoint_timeout):
                    return
                entry = {"error": f"not reported within {self.savepoint_timeout:g} s"}
            savepoints, _, event = sp.resolved(
                savepoints, entry or {"error": "the job stopped before taking it"}, sp.MANUAL,
                savepoints.pending.trigger_nonce)
            events.append(event)
        elif (nonce is not None and nonce != savepoints.last_trigger_nonce
              and status.job_status is JobStatus.RUNNING):
            request = sp.request_id(sp.MANUAL)
            try:
                await asyncio.to_thread(self.backend.request_savepoint, record.ref,
                                        sp.request_body(request, stop=False))
            except Exception as exc:
                savepoints, _, event = sp.resolved(
                    savepoints, {"error": f"the driver cannot take it: {_api_message(exc)}"},
                    sp.MANUAL, nonce)
                events.append(event)
            else:
                savepoints = sp.pending(savepoints, request, sp.MANUAL, nonce)
                events.append(Event(NORMAL, "SavepointTriggered",
                                    f"savepoint asked for (savepointTriggerNonce {nonce})"))
        else:
            return
        await self._post(record, events)
        await self._write(record, status.model_copy(update={"savepoints": savepoints}))

    async def _maybe_restart(self, record: JobRecord) -> None:
        """The restart strategy's delay passed: the same deployment starts again (from its
        own newest checkpoint, or where it began if it took none)."""
        if record.restart_at is not None and time.monotonic() < record.restart_at:
            return
        assert record.spec is not None and record.plan is not None
        status = record.status
        driver = await asyncio.to_thread(self.backend.provision, record.ref, record.spec,
                                         record.plan, status.restarts, status.deployment)
        status, events = with_job_status(status, JobStatus.CREATED, record.generation)
        status = status.model_copy(update={"driver": driver})
        record.restart_at = None
        await self._post(record, [*events, Event(
            NORMAL, "Submitted", f"driver restarted (restart {status.restarts})")])
        await self._write(record, status)


def _upgrade_refused_before(status: DataflowJobStatus, generation: int) -> bool:
    return any(c.type == cond.UPGRADED and c.status == "False"
               and c.observed_generation == generation for c in status.conditions)


def _deployment(generation: int, restore_from: str) -> DeploymentStatus:
    """A new deployment (its own checkpoint lineage) starting from ``restore_from``."""
    return DeploymentStatus(id=f"{generation}-{uuid.uuid4().hex[:8]}", generation=generation,
                            restore_from=restore_from)


def _continued(previous: DeploymentStatus | None, generation: int) -> DeploymentStatus:
    """A last-state start: the previous deployment's lineage goes on from its newest
    checkpoint (or from where it began, if it never took one)."""
    if previous is None:
        return _deployment(generation, "latest")
    return previous.model_copy(update={"generation": generation,
                                       "stopped_with_savepoint": None})


def _stopped_with(status: DataflowJobStatus, path: str) -> DataflowJobStatus:
    deployment = status.deployment or DeploymentStatus(
        id="", generation=status.deployed_generation or 0, restore_from="latest")
    return status.model_copy(update={"deployment": deployment.model_copy(
        update={"stopped_with_savepoint": path})})


def _restore_text(deployment: DeploymentStatus, previous: DeploymentStatus | None) -> str:
    began = {"none": "scratch", "latest": "the latest checkpoint"}.get(
        deployment.restore_from, deployment.restore_from)
    continued = previous is not None and deployment.id == previous.id
    if continued and deployment.restore_from != "latest":
        return f"its newest checkpoint (or {began}, if it took none)"
    return began


def _new_job_status(status: DataflowJobStatus, target: JobStatus,
                    generation: int) -> tuple[DataflowJobStatus, list[Event]]:
    """Operator-driven moves (deploy, redeploy, suspend, resume) start a new JobStatus history
    when the state machine has no edge from the old one, as a new ExecutionGraph would."""
    previous = status.job_status
    try:
        return with_job_status(status, target, generation)
    except IllegalStateTransition:
        status, _ = with_job_status(status.model_copy(update={"job_status": None}), target,
                                    generation)
        return status, [Event(NORMAL, "JobStatusChanged",
                              f"{previous.value if previous else 'none'} -> {target.value} "
                              "(new deployment)")]


def _already_failed(status: DataflowJobStatus, generation: int, message: str) -> bool:
    """This generation already failed with this message (e.g. reported before a restart)."""
    return (status.observed_generation == generation and status.job_status is JobStatus.FAILED
            and any(c.type == cond.FAILED and c.status == "True" and c.message == message
                    for c in status.conditions))


def _already_rejected(status: DataflowJobStatus, generation: int, message: str) -> bool:
    """This generation's spec was already reported invalid with this message."""
    return (status.observed_generation == generation
            and any(c.type == cond.COMPILED and c.status == "False" and c.message == message
                    for c in status.conditions))


def _queued_before(status: DataflowJobStatus) -> bool:
    return any(c.type == cond.PROVISIONED and c.status == "False" and c.reason == "Queued"
               for c in status.conditions)


def _api_message(exc: BaseException) -> str:
    if isinstance(exc, ApiException):
        try:
            return str(json.loads(exc.body or "").get("message", exc.reason))
        except (TypeError, ValueError):
            return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"
