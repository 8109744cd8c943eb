"""The DataflowJob controller: one reconcile per event or monitor tick, each running
observe → validate → reconcile → record.

kopf calls :meth:`DataflowController.on_spec` on create, update and resume (validate the spec,
reconcile the deployment); the monitor calls :meth:`DataflowController.monitor_cycle` every
poll interval (observe each live job's driver, reconcile restarts, savepoints and TTL). What to
do is decided by the pure functions of :mod:`dataflow_operator.reconciler` from what
:mod:`dataflow_operator.observer` folded into the status; the controller carries the actions
out through a backend and records the outcome with :mod:`dataflow_operator.status.recorder`.
A per-job lock keeps the two paths from interleaving. Blocking calls run in threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import urllib3.exceptions
from kubernetes.client.exceptions import ApiException

from dataflow_engine.compiler.manifest import load_manifest_text
from dataflow_engine.compiler.policy import STRICT, JobPolicy
from dataflow_engine.compiler.validation import parse_spec
from dataflow_engine.errors import SpecError
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import SavepointEntry, SavepointFailureReason
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.autoscaler import scaling
from dataflow_operator.backends.base import Backend, DriverObservation, DriverPhase, DriverQueued
from dataflow_operator.kube import TRANSIENT_STATUSES, Kube, StaleObjectError, api_message
from dataflow_operator.metrics import Metrics
from dataflow_operator.observer import savepoints as observed_savepoints
from dataflow_operator.observer.job_status import observe
from dataflow_operator.plan import JOB_FILE_KEY, JobPlan, build_plan
from dataflow_operator.reconciler import deployment, restart, rollback, ttl
from dataflow_operator.reconciler.actions import (
    AdoptRunning,
    CleanUp,
    Provision,
    Reconciled,
    ScheduleRestart,
    StopDriver,
)
from dataflow_operator.reconciler.deployment import SavepointFailure, SpecChange, reconcile_spec
from dataflow_operator.reconciler.savepoints import (
    SavepointRequest,
    manual_requested,
    manual_savepoint,
)
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.snapshots.controller import InFlight, SnapshotController, SnapshotWaiting
from dataflow_operator.status.events import Event
from dataflow_operator.status.model import DataflowJobStatus
from dataflow_operator.status.recorder import JobGone, StatusRecorder

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


class SnapshotDelayed(TransientError):
    """The DataflowSnapshot a new job starts from is not completed yet: asked again soon."""

    delay = SnapshotWaiting.delay


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
    #: Snapshots asked of the driver and not yet reported, by trigger id.
    snapshots: dict[str, InFlight] = field(default_factory=dict)
    #: When the retention last listed the job's snapshots (the event loop's clock).
    retention_checked: float = float("-inf")
    #: The spec as the user wrote it (the job runs it with the autoscaler's overrides).
    raw_spec: dict[str, Any] | None = None
    #: When the autoscaler last sampled the job's driver (monotonic seconds).
    autoscaler_sampled: float = float("-inf")
    #: A rescale that could not be deployed yet is tried again then (monotonic seconds).
    rescale_retry_at: float | None = None
    rescale_attempts: int = 0


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
        self.recorder = StatusRecorder(kube, metrics)
        self.poll_interval = poll_interval
        #: How long a driver has to report a savepoint it was asked for.
        self.savepoint_timeout = savepoint_timeout
        self.concurrency = concurrency
        self.records: dict[tuple[str, str], JobRecord] = {}
        #: When the monitor last finished a cycle (monotonic seconds), for the health probe.
        self.monitor_beat: float | None = None
        self.snapshots = SnapshotController(self)

    def record_for(self, ref: JobRef, status: Mapping[str, Any] | None) -> JobRecord:
        key = (ref.namespace, ref.name)
        record = self.records.get(key)
        if record is None or record.ref.uid != ref.uid:
            record = JobRecord(ref)
            record.status = DataflowJobStatus.model_validate(dict(status or {}))
            record.written = record.status.model_dump(mode="json", by_alias=True)
            self.records[key] = record
        return record

    # -- spec changes ----------------------------------------------------------------------

    async def on_spec(self, ref: JobRef, spec: Mapping[str, Any], status: Mapping[str, Any] | None,
                      generation: int) -> None:
        record = self.record_for(ref, status)
        async with record.lock:
            await self._reconcile_reporting(record, dict(spec), generation)

    async def _reconcile_reporting(self, record: JobRecord, raw_spec: dict[str, Any],
                                   generation: int) -> None:
        """Reconciles the spec (the record's lock held), says what kept it from being
        provisioned in the status, and raises kopf's retry for what passes."""
        started = time.perf_counter()
        try:
            valid = await self._reconcile_spec(record, raw_spec, generation)
            self.metrics.reconciled("ok" if valid else "invalid")
        except DriverQueued as exc:
            self.metrics.reconciled("queued")
            said = deployment.queued(record.status, generation, str(exc))
            if said is not None:
                await self.record_status(record, said.status, said.events)
            raise QueuedError(str(exc)) from exc
        except SavepointDelayed:
            self.metrics.reconciled("transient")
            raise
        except SnapshotWaiting as exc:
            self.metrics.reconciled("transient")
            said = deployment.queued(record.status, generation, str(exc),
                                     reason="WaitingForSnapshot")
            if said is not None:
                await self.record_status(record, said.status, said.events)
            raise SnapshotDelayed(str(exc)) from exc
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
        """Validates the spec and reconciles the deployment to it; False when the spec is
        invalid (reported in status)."""
        record.generation, record.raw_spec = generation, raw_spec
        try:
            spec = parse_spec(raw_spec)
            if record.status.deployed_generation is None:  # its first deployment
                spec = await self.snapshots.initial_savepoint(record.ref.namespace, spec)
            plan = build_plan(record.ref.name, record.ref.namespace, spec, self.policy)
            spec, plan = self._scaled(record, spec, plan)
        except SpecError as exc:
            deployed = record.plan is not None or record.status.deployed_generation is not None
            said = deployment.rejected(record.status, generation, str(exc), deployed)
            if said is not None:
                self.metrics.error("InvalidSpec")
                await self.record_status(record, said.status, said.events)
            return False
        change = SpecChange(spec, plan, record.plan, record.status, generation,
                            self.backend.name)
        driver_running = None
        if change.needs_driver_look():
            seen = await asyncio.to_thread(self.backend.observe, record.ref)
            driver_running = seen.phase is DriverPhase.RUNNING
        decision = reconcile_spec(change, driver_running)
        if isinstance(decision, SavepointRequest):
            if decision.adopts_spec:
                self._adopt(record, spec, plan)
            failure = await self._take_savepoint(record, decision)
            change = dataclasses.replace(change, status=record.status)
            decision = reconcile_spec(change, driver_running, failure)
            assert isinstance(decision, Reconciled), "one savepoint per reconcile"
        if decision.interim is not None:  # the spec is the job's now
            self._adopt(record, spec, plan)
            record.status = decision.interim
        status, events = await self._carry_out(record, decision)
        if decision.interim is not None:
            record.epoch += 1
        await self.record_status(record, status, events)
        if decision.retry is not None:
            raise SavepointDelayed(decision.retry)
        return True

    def _scaled(self, record: JobRecord, spec: DataflowJobSpec,
                plan: JobPlan) -> tuple[DataflowJobSpec, JobPlan]:
        """The spec with the autoscaler's overrides, and its plan; the user's when there are
        none, or when the operator's policy refuses the rescaled plan (the autoscaler then
        gives its overrides up, and says why)."""
        scaled = scaling.scaled_spec(spec, plan.compiled, record.status)
        if scaled is spec:
            return spec, plan
        try:
            return scaled, build_plan(record.ref.name, record.ref.namespace, scaled,
                                      self.policy)
        except SpecError as exc:
            record.status, _ = scaling.given_up(record.status, record.spec,
                                                f"the rescaled plan is refused: {exc}")
            return spec, plan

    @staticmethod
    def _adopt(record: JobRecord, spec: DataflowJobSpec, plan: JobPlan) -> None:
        record.spec, record.plan, record.restart_at = spec, plan, None

    async def _take_savepoint(self, record: JobRecord,
                              request: SavepointRequest) -> SavepointFailure | None:
        """Asks the running driver for a stop-with-savepoint and waits for its outcome (the
        record's lock is held: nothing else happens to the job meanwhile). A completed one
        is recorded at once with the deployment it stopped: whatever comes next (a failed
        provisioning, an operator restart) must know the driver is gone and where its state
        is. A failed one is returned, for the reconciler to decide."""
        previous_error = record.status.savepoints.last_error
        outcome: SavepointEntry | str
        try:
            await asyncio.to_thread(self.backend.request_savepoint, record.ref,
                                    request.message())
        except Exception as exc:
            outcome = f"the driver cannot take it: {api_message(exc)}"
        else:
            outcome = f"not taken within {self.savepoint_timeout:g} s"
            deadline = time.monotonic() + self.savepoint_timeout
            while time.monotonic() < deadline:
                await asyncio.sleep(self.poll_interval / 2)
                seen = await asyncio.to_thread(self.backend.observe, record.ref)
                entry = observed_savepoints.reported(seen.runner, request.request)
                if entry is not None:
                    outcome = entry
                    break
                if seen.phase is not DriverPhase.RUNNING:
                    outcome = "the driver stopped before taking it"
                    break
        savepoints, info, event = observed_savepoints.resolved(
            record.status.savepoints, outcome, request.trigger_type)
        record.status = record.status.model_copy(update={"savepoints": savepoints})
        if info is not None:
            status = observed_savepoints.named(
                record.status, await self.snapshots.record_taken(record, info))
            await self.record_status(record, observed_savepoints.stopped_with(status, info.path),
                                     [event])
            return None
        refused = (not isinstance(outcome, str)
                   and outcome.reason is SavepointFailureReason.UPGRADE_REFUSED)
        return SavepointFailure(event, previous_error, refused)

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

    async def _fail_provisioning(self, record: JobRecord, generation: int,
                                 exc: BaseException) -> None:
        message = api_message(exc)
        said = deployment.provisioning_failed(record.status, generation, message)
        if said is None:
            return
        self.metrics.error("ProvisioningFailed")
        log.warning("provisioning %s/%s failed: %s", record.ref.namespace, record.ref.name,
                    message)
        await self.record_status(record, said.status, said.events)

    # -- deletion --------------------------------------------------------------------------

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
            if record is not None:
                await self.snapshots.abandon(record, "the job was deleted")
            await asyncio.to_thread(self.backend.stop_driver, ref)
            await asyncio.to_thread(self.backend.forget, ref)

    # -- carrying out and recording --------------------------------------------------------

    async def _carry_out(self, record: JobRecord,
                         decision: Reconciled) -> tuple[DataflowJobStatus, list[Event]]:
        """Runs the decision's actions through the backend, in order; returns the status and
        Events to record (the driver a provisioning reported, a clean-up's Event)."""
        status, events = decision.status, list(decision.events)
        for action in decision.actions:
            match action:
                case StopDriver():
                    await asyncio.to_thread(self.backend.stop_driver, record.ref)
                    await self.snapshots.abandon(record, "the job was stopped before taking it")
                case Provision(restart=count, deployment=deployed):
                    assert record.spec is not None and record.plan is not None
                    driver = await asyncio.to_thread(self.backend.provision, record.ref,
                                                     record.spec, record.plan, count, deployed)
                    status = status.model_copy(update={"driver": driver})
                case ScheduleRestart(after=delay):
                    record.restart_at = time.monotonic() + delay
                case CleanUp(deleted=event):
                    if await asyncio.to_thread(self.backend.clean_up, record.ref):
                        events.append(event)
                case AdoptRunning():
                    await self._adopt_running(record)
        return status, events

    async def record_status(self, record: JobRecord, status: DataflowJobStatus,
                            events: list[Event]) -> None:
        """Posts the Events, then writes the status (only when it changed)."""
        await self.recorder.post(record.ref, events)
        self.metrics.status_changed(record.status, status)
        record.status = status
        try:
            record.written = await self.recorder.write(record.ref, record.written, status)
        except JobGone:
            self.forget(record.ref)

    # -- the monitor -----------------------------------------------------------------------

    async def monitor(self, stopped: asyncio.Event) -> None:
        """Observes every live job until ``stopped``; one failing job never stops the loop."""
        while not stopped.is_set():
            await self.monitor_cycle()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stopped.wait(), timeout=self.poll_interval)

    async def monitor_cycle(self) -> None:
        """One look at every live job's driver, then the TTL clean-up."""
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

        live = [r for r in list(self.records.values()) if self._needs_observation(r)]
        if live:
            try:
                snapshot = await asyncio.to_thread(self.backend.snapshot, [r.ref for r in live])
            except Exception as exc:
                self.metrics.error("ReadDriversFailed")
                log.warning("reading drivers: %s", exc)
            else:
                await asyncio.gather(*(one(r, snapshot) for r in live))
        await self._retry_rescales()
        await self._clean_up_expired()
        self.metrics.jobs(self.records.values())
        self.monitor_beat = time.monotonic()

    async def _retry_rescales(self) -> None:
        """Rescales whose deployment was delayed, once their back-off passed: the job may be
        stopped with its savepoint meanwhile, which the monitor does not observe."""
        now = time.monotonic()
        for record in list(self.records.values()):
            if record.rescale_retry_at is None or now < record.rescale_retry_at:
                continue
            async with record.lock:
                record.rescale_retry_at = None
                if self.records.get((record.ref.namespace, record.ref.name)) is record:
                    await self._rescale(record)  # what it adopted may wait for its driver

    async def _clean_up_expired(self) -> None:
        """Deletes the pods of jobs that ended longer than their ttlSecondsAfterFinished ago."""
        now = datetime.now(UTC)
        for record in list(self.records.values()):
            spec, status = record.spec, record.status
            if spec is None or not ttl.expired(spec, status, now):
                continue
            async with record.lock:
                if record.status is not status:
                    continue  # reconciled meanwhile: look again next cycle
                try:
                    cleaned, events = await self._carry_out(record, ttl.clean_up(spec, status))
                except Exception as exc:
                    self.metrics.error("CleanUpFailed")
                    log.warning("cleaning up %s/%s: %s", record.ref.namespace, record.ref.name,
                                exc)
                    continue
                await self.record_status(record, cleaned, events)

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
        deployed = record.status.deployment
        return (record.spec is not None and not record.spec.suspend and status is not None
                and status is not JobStatus.SUSPENDED and not status.is_globally_terminal
                and (deployed is None or deployed.stopped_with_savepoint is None))

    async def observe_job(self, record: JobRecord, snapshot: object = None) -> None:
        """Observe (outside the lock: a slow driver holds up no spec change), then reconcile
        restarts and manual savepoints, and record."""
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
                if not await self._maybe_roll_back(record):
                    await self._maybe_restart(record)
                return
            if observation is None or record.epoch != epoch:
                return  # the spec changed while we looked; look again next cycle
            observed = observe(record.status, record.spec, observation, record.generation)
            decision = restart.after_observation(observed, record.spec, record.generation)
            status, events = await self._carry_out(record, decision)
            status = rollback.stable(record.spec, status) or status
            await self.record_status(record, status, events)
            running = self._needs_observation(record)
            await self.snapshots.after_observation(record, observation, running)
            if await self._maybe_roll_back(record):
                return
            if running:
                await self._manual_savepoint(record, observation)
                await self._autoscale(record, observation)

    async def _autoscale(self, record: JobRecord, observation: DriverObservation) -> None:
        """A sample for the autoscaler now and then, and the rescale it decided."""
        spec, plan, runner = record.spec, record.plan, observation.runner
        if spec is None or plan is None or runner is None:
            return
        now = time.monotonic()
        if now - record.autoscaler_sampled >= scaling.sample_period(spec, plan.compiled):
            record.autoscaler_sampled = now
            # In a thread: a plan for a thousand vertices takes a few hundred milliseconds.
            scaled = await asyncio.to_thread(scaling.autoscale, spec, plan.compiled,
                                             record.status, runner, time.time())
            if scaled is not None:
                await self.record_status(record, scaled.status, scaled.events)
        if record.rescale_retry_at is None and scaling.rescale_due(spec, plan.compiled,
                                                                   record.status):
            await self._rescale(record)

    async def _rescale(self, record: JobRecord) -> None:
        """Deploys the autoscaler's overrides as a spec change is deployed (the record's lock
        held). What passes (a savepoint the driver cannot take yet, a driver slot, the API
        server) is tried again after a back-off, also while the job is stopped with its
        savepoint; what refuses the rescale (a refused upgrade, a rolled-back generation)
        makes the autoscaler give its overrides up, once."""
        if record.raw_spec is None or record.plan is None:
            return  # kopf's resume handler has not reconciled the job yet
        try:
            await self._reconcile_reporting(record, record.raw_spec, record.generation)
        except TransientError as exc:
            record.rescale_attempts += 1
            delay = exc.delay or min(60.0, 2.0 ** record.rescale_attempts)
            record.rescale_retry_at = time.monotonic() + delay
            log.info("%s/%s: rescale delayed %.0f s: %s", record.ref.namespace,
                     record.ref.name, delay, exc)
            return
        record.rescale_attempts, record.rescale_retry_at = 0, None
        spec, plan = record.spec, record.plan
        assert spec is not None and plan is not None
        if scaling.rescale_due(spec, plan.compiled, record.status):
            status, event = scaling.refused(record.status, spec)
        else:
            status, event = record.status, scaling.applied(record.status, plan.compiled)
        await self.record_status(record, status, [event])

    async def _manual_savepoint(self, record: JobRecord, observation: DriverObservation) -> None:
        assert record.spec is not None
        decision = manual_savepoint(record.spec, record.status, observation.runner,
                                    datetime.now(UTC), self.savepoint_timeout)
        if isinstance(decision, SavepointRequest):
            refused = None
            try:
                await asyncio.to_thread(self.backend.request_savepoint, record.ref,
                                        decision.message())
            except Exception as exc:
                refused = api_message(exc)
            decision = manual_requested(record.spec, record.status, decision, refused)
        if decision is None:
            return
        status = decision.status
        taken = status.savepoints.last
        if taken is not None and taken != record.status.savepoints.last:
            status = observed_savepoints.named(status,
                                               await self.snapshots.record_taken(record, taken))
        await self.record_status(record, status, decision.events)

    async def _maybe_roll_back(self, record: JobRecord) -> bool:
        """Rolls an upgrade that is not healthy in time (or failed) back to the last stable
        spec (spec.job.upgrade.rollbackTimeout); True if it did."""
        assert record.spec is not None
        why = rollback.due(record.spec, record.status, datetime.now(UTC))
        if why is None or record.status.last_stable_spec is None:
            return False
        ref = record.ref
        try:
            stable = parse_spec(json.loads(record.status.last_stable_spec))
            plan = build_plan(ref.name, ref.namespace, stable, self.policy)
        except (SpecError, ValueError) as exc:  # e.g. the job policy has changed since
            said = rollback.failed(record.status, f"the last stable spec no longer "
                                   f"compiles ({why}): {exc}", record.generation)
            await self.record_status(record, said.status, said.events)
            return False
        decision = rollback.roll_back(record.status, plan, why, record.generation)
        if not decision.actions:  # refused
            await self.record_status(record, decision.status, decision.events)
            return False
        previous = (record.spec, record.plan)
        record.spec, record.plan, record.restart_at = stable, plan, None
        record.epoch += 1
        try:
            status, events = await self._carry_out(record, decision)
        except Exception as exc:
            record.spec, record.plan = previous
            said = rollback.failed(record.status, f"the rollback ({why}) could not start "
                                   f"the driver: {api_message(exc)}", record.generation)
            await self.record_status(record, said.status, said.events)
            return False
        await self.record_status(record, status, events)
        return True

    async def _maybe_restart(self, record: JobRecord) -> None:
        """Once the restart strategy's delay passed, the driver starts again."""
        if record.restart_at is not None and time.monotonic() < record.restart_at:
            return
        status, events = await self._carry_out(record, restart.restart(record.status,
                                                                       record.generation))
        record.restart_at = None
        await self.record_status(record, status, events)
