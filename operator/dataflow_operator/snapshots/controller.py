"""The DataflowSnapshot controller: takes, imports, records, expires and disposes of snapshots.

A snapshot a user creates is asked of its job's running driver (``POST /savepoints`` with the
snapshot's trigger id) and resolved by the job's monitor cycle, which reads the driver's status
document anyway: :meth:`SnapshotController.after_observation` completes or fails the snapshots
in flight, creates the periodic ones that are due (taken the same way) and, now and then,
deletes the snapshots the job's retention no longer keeps. Deleting a completed savepoint's
DataflowSnapshot disposes of its files through the job's running driver, which deletes only
savepoint directories of its own job.

Snapshots in flight are kept on the job's record (under its lock, as everything that talks to
the job's driver); after an operator restart kopf's resume handler registers them again.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import pydantic
from kubernetes.client.exceptions import ApiException

from dataflow_engine.compiler.validation import problems_from_pydantic
from dataflow_engine.errors import SpecError
from dataflow_engine.graph.states import JobStatus
from dataflow_engine.rest import SavepointEntry, SavepointTriggerRequest
from dataflow_engine.spec.model import DataflowJobSpec
from dataflow_operator.backends.base import DriverObservation
from dataflow_operator.kube import api_message
from dataflow_operator.observer import savepoints as observed_savepoints
from dataflow_operator.resources.meta import LABEL_JOB
from dataflow_operator.snapshots import objects, periodic, retention
from dataflow_operator.snapshots.model import (
    IMPORT,
    LABEL_TRIGGER,
    PERIODIC,
    SNAPSHOT_KIND,
    USER,
    DataflowSnapshotSpec,
    DataflowSnapshotStatus,
    SnapshotState,
)
from dataflow_operator.status import conditions as cond
from dataflow_operator.status.events import NORMAL, WARNING, Event, post_event
from dataflow_operator.status.model import SavepointInfo

if TYPE_CHECKING:
    from dataflow_operator.controller import DataflowController, JobRecord

log = logging.getLogger("dataflow.operator")

#: How often a job's snapshots are listed for retention when none completed meanwhile.
RETENTION_PERIOD = 60.0


@dataclass(frozen=True)
class SnapshotRef:
    """A DataflowSnapshot: what its Events name."""

    name: str
    namespace: str
    uid: str


@dataclass(frozen=True)
class InFlight:
    """A snapshot asked of the job's driver and not yet reported."""

    name: str
    uid: str
    kind: str
    trigger: str
    since: str
    generation: int


class SnapshotWaiting(Exception):
    """The snapshot's job cannot take it yet (it is starting, or not known to this operator
    yet): kopf asks again after ``delay`` seconds."""

    delay = 5.0


class SnapshotController:
    def __init__(self, jobs: DataflowController) -> None:
        self.jobs = jobs

    # -- a snapshot created (or seen again after a restart) -----------------------------------

    async def on_snapshot(self, ref: SnapshotRef, spec: Mapping[str, Any],
                          status: Mapping[str, Any] | None, labels: Mapping[str, str],
                          generation: int, created: str | None) -> None:
        current = DataflowSnapshotStatus.model_validate(dict(status or {}))
        if current.state.final:
            return
        try:
            parsed = DataflowSnapshotSpec.model_validate(dict(spec))
        except pydantic.ValidationError as exc:
            message = str(SpecError(problems_from_pydantic(exc, "spec", DataflowSnapshotSpec)))
            await self._end(ref, current, SnapshotState.FAILED, message, generation)
            return
        savepoint = parsed.savepoint
        if savepoint is not None and savepoint.already_exists:
            assert savepoint.path is not None
            trigger = labels.get(LABEL_TRIGGER, IMPORT)
            if trigger != IMPORT and await self._recorded(ref):
                return  # the operator's record of a savepoint it took: written already
            await self._write(ref, objects.completed(trigger, savepoint.path, None, generation))
            await self._post(ref, Event(NORMAL, "SnapshotImported", f"savepoint at "
                                        f"{savepoint.path}"))
            return
        job_name = parsed.job_reference.name
        record = self.jobs.records.get((ref.namespace, job_name))
        if record is None:
            if await asyncio.to_thread(self.jobs.kube.get, "DataflowJob", ref.namespace,
                                       job_name) is None:
                await self._end(ref, current, SnapshotState.ABANDONED,
                                f"spec.jobReference: no DataflowJob {job_name!r} in namespace "
                                f"{ref.namespace!r}", generation)
                return
            raise SnapshotWaiting(f"DataflowJob {job_name!r} is not known to the operator yet")
        trigger = labels.get(LABEL_TRIGGER, USER)
        async with record.lock:
            why_not = _cannot_take(record, parsed.kind)
            if why_not is not None:
                await self._end(ref, current, SnapshotState.ABANDONED, why_not, generation)
                return
            if current.state is SnapshotState.IN_PROGRESS and current.trigger_id is not None:
                record.snapshots.setdefault(current.trigger_id, InFlight(
                    ref.name, ref.uid, parsed.kind, trigger,
                    current.trigger_timestamp or cond.now(), generation))
                return
            patient = (cond.now_datetime() - cond.parse_time(created or cond.now())
                       < timedelta(seconds=self.jobs.savepoint_timeout))
            if record.plan is None or record.status.job_status is not JobStatus.RUNNING:
                if patient:
                    raise SnapshotWaiting(f"the job is {record.status.job_status or 'starting'}, "
                                          "not RUNNING")
                await self._end(ref, current, SnapshotState.ABANDONED,
                                f"the job did not run within {self.jobs.savepoint_timeout:g} s",
                                generation)
                return
            await self._trigger(record, ref, parsed.kind, trigger, generation, patient)

    async def _trigger(self, record: JobRecord, ref: SnapshotRef, kind: str, trigger: str,
                       generation: int, patient: bool) -> None:
        """Asks the job's driver for the snapshot; IN_PROGRESS until the driver reports it.
        A driver that refuses while ``patient`` (within the savepoint timeout of the
        snapshot's creation) is asked again: a job just RUNNING may not have begun its epochs
        (flink-kubernetes-operator's TRIGGER_PENDING)."""
        trigger_id = f"{kind}-{uuid.uuid4().hex[:12]}"
        request = SavepointTriggerRequest.model_validate({"nonce": trigger_id, "kind": kind})
        since = cond.now()
        status = DataflowSnapshotStatus(state=SnapshotState.IN_PROGRESS, trigger_type=trigger,
                                        trigger_id=trigger_id, trigger_timestamp=since,
                                        observed_generation=generation)
        try:
            await asyncio.to_thread(self.jobs.backend.request_savepoint, record.ref, request)
        except Exception as exc:
            if patient:
                raise SnapshotWaiting(f"the driver cannot take it yet: {api_message(exc)}"
                                      ) from exc
            await self._end(ref, status, SnapshotState.FAILED,
                            f"the driver cannot take it: {api_message(exc)}", generation)
            await self.jobs.recorder.post(record.ref, [Event(
                WARNING, "SavepointFailed" if kind == "savepoint" else "CheckpointFailed",
                f"{trigger} {kind} {ref.name} failed: the driver cannot take it")])
            return
        record.snapshots[trigger_id] = InFlight(ref.name, ref.uid, kind, trigger, since,
                                                generation)
        await self._write(ref, status)

    # -- what each monitor cycle does for a running job -----------------------------------

    async def after_observation(self, record: JobRecord, observation: DriverObservation,
                                running: bool) -> None:
        """Resolves the snapshots in flight; while the job still ``running`` (observed),
        creates the periodic ones that are due and applies retention. ``record.lock`` is
        held."""
        completed = await self._resolve(record, observation)
        if not running:
            await self.abandon(record, "the job stopped before taking it")
        elif record.plan is not None and record.plan.compiled.continuous:
            await self._periodic(record)
            await self._retain(record, completed)

    async def abandon(self, record: JobRecord, why: str) -> None:
        """The job's driver is gone (stopped, suspended, ended, deleted): what was in flight
        will never be reported; ABANDONED, as flink-kubernetes-operator's."""
        for trigger_id, flight in list(record.snapshots.items()):
            await self._settle(record, flight, trigger_id, why, SnapshotState.ABANDONED)

    async def _resolve(self, record: JobRecord, observation: DriverObservation) -> bool:
        """Completes or fails what the driver reported (or will not); True if a snapshot
        completed."""
        any_completed = False
        for trigger_id, flight in list(record.snapshots.items()):
            entry = observed_savepoints.reported(observation.runner, trigger_id)
            if entry is not None:
                any_completed |= await self._settle(record, flight, trigger_id, entry)
            elif (cond.now_datetime() - cond.parse_time(flight.since)
                  > timedelta(seconds=self.jobs.savepoint_timeout)):
                await self._settle(record, flight, trigger_id,
                                   f"not reported within {self.jobs.savepoint_timeout:g} s")
        return any_completed

    async def _settle(self, record: JobRecord, flight: InFlight, trigger_id: str,
                      outcome: SavepointEntry | str,
                      state: SnapshotState = SnapshotState.FAILED) -> bool:
        """Records one outcome; the flight is let go once that is written (a failed write is
        tried again next cycle). True if it completed."""
        try:
            completed = await self._resolved(record, flight, trigger_id, outcome, state)
        except ApiException as exc:
            log.warning("%s/%s: cannot record snapshot %s: %s", record.ref.namespace,
                        record.ref.name, flight.name, api_message(exc))
            return False
        record.snapshots.pop(trigger_id, None)
        return completed

    async def _resolved(self, record: JobRecord, flight: InFlight, trigger_id: str,
                        outcome: SavepointEntry | str, state: SnapshotState) -> bool:
        ref = SnapshotRef(flight.name, record.ref.namespace, flight.uid)
        generation = flight.generation
        if not isinstance(outcome, str) and outcome.completed and outcome.kind != flight.kind:
            outcome = (f"the driver took a {outcome.kind} for a {flight.kind} request: its "
                       f"engine is older than the operator's (at {outcome.path})")
        if isinstance(outcome, str) or not outcome.completed or outcome.path is None:
            error = outcome if isinstance(outcome, str) else (outcome.error or "no path")
            pending = DataflowSnapshotStatus(state=SnapshotState.IN_PROGRESS,
                                             trigger_type=flight.trigger, trigger_id=trigger_id,
                                             trigger_timestamp=flight.since)
            await self._end(ref, pending, state, error, generation)
            self.jobs.metrics.snapshot(flight.kind, state.value.lower())
            reason = "SavepointFailed" if flight.kind == "savepoint" else "CheckpointFailed"
            status = record.status
            if flight.kind == "savepoint":
                status = status.model_copy(update={"savepoints": observed_savepoints.failed(
                    status.savepoints, error)})
            await self.jobs.record_status(record, status, [Event(
                WARNING, reason, f"{flight.trigger} {flight.kind} {flight.name} failed: "
                f"{cond.bounded(error)}")])
            return False
        await self._write(ref, objects.completed(flight.trigger, outcome.path,
                                                 outcome.checkpoint_id, generation, trigger_id,
                                                 flight.since))
        await self._post(ref, Event(NORMAL, "Completed", f"{flight.kind} "
                                    f"{outcome.checkpoint_id} at {outcome.path}"))
        self.jobs.metrics.snapshot(flight.kind, "completed")
        status = record.status
        if flight.kind == "savepoint":
            info = SavepointInfo(path=outcome.path, time=cond.from_millis(outcome.time),
                                 checkpoint_id=outcome.checkpoint_id,
                                 trigger_type=flight.trigger, snapshot=flight.name)
            status = status.model_copy(update={"savepoints": observed_savepoints.completed(
                status.savepoints, info)})
        reason = "SavepointCompleted" if flight.kind == "savepoint" else "CheckpointCompleted"
        await self.jobs.record_status(record, status, [Event(
            NORMAL, reason, f"{flight.trigger} {flight.kind} {outcome.checkpoint_id} at "
            f"{outcome.path} ({flight.name})")])
        return True

    async def _periodic(self, record: JobRecord) -> None:
        """Creates the periodic snapshots that are due; the create handler takes them."""
        assert record.spec is not None
        now = cond.now_datetime()
        for kind in (periodic.SAVEPOINT, periodic.CHECKPOINT):
            in_flight = any(f.trigger == PERIODIC and f.kind == kind
                            for f in record.snapshots.values())
            if not periodic.due(record.spec, record.status, kind, now, in_flight):
                continue
            snapshot = objects.taken_by_operator(record.ref, PERIODIC, kind, now)
            try:
                await asyncio.to_thread(self.jobs.kube.create, snapshot)
            except ApiException as exc:  # asked again after an interval, not every cycle
                event = Event(WARNING, "SnapshotFailed", f"periodic {kind} not created: "
                              f"{api_message(exc)}")
            else:
                event = Event(NORMAL, "SnapshotTriggered",
                              f"periodic {kind} {snapshot['metadata']['name']}")
                self.jobs.metrics.snapshot(kind, "triggered")
            await self.jobs.record_status(
                record, periodic.triggered(record.status, kind, cond.now()), [event])

    async def _retain(self, record: JobRecord, completed: bool) -> None:
        """Deletes the snapshots of the job the retention no longer keeps (their delete
        handler disposes of the files); looks after a completion, else every
        RETENTION_PERIOD seconds."""
        assert record.spec is not None
        clock = asyncio.get_running_loop().time()
        if not completed and clock - record.retention_checked < RETENTION_PERIOD:
            return
        record.retention_checked = clock
        listed = await asyncio.to_thread(self.jobs.kube.list, SNAPSHOT_KIND,
                                         record.ref.namespace,
                                         f"{LABEL_JOB}={record.ref.name},{LABEL_TRIGGER}")
        taken = [objects.taken_snapshot(obj) for obj in listed]
        checkpoints = record.spec.checkpointing
        doomed = retention.expired(taken, record.spec.job.savepoint,
                                   retention.protected_paths(record.status), cond.now_datetime(),
                                   checkpoints.retained if checkpoints is not None else 1)
        if not doomed:
            return
        kinds = {snapshot.name: snapshot.kind for snapshot in taken}
        for name in doomed:
            await asyncio.to_thread(self.jobs.kube.delete, SNAPSHOT_KIND, record.ref.namespace,
                                    name)
            self.jobs.metrics.snapshot(kinds[name], "expired")
        gone = set(doomed)
        status = record.status
        history = [i for i in status.savepoints.history if i.snapshot not in gone]
        status = status.model_copy(update={"savepoints": status.savepoints.model_copy(
            update={"history": history})})
        await self.jobs.record_status(record, status, [Event(
            NORMAL, "SnapshotsExpired", f"{len(doomed)} snapshot(s) beyond the retention "
            f"deleted: {', '.join(doomed)}")])

    # -- savepoints the operator took for an upgrade, a suspend or a nonce --------------------

    async def record_taken(self, record: JobRecord, info: SavepointInfo) -> SavepointInfo:
        """Records a savepoint the operator took as a DataflowSnapshot (Completed); returns
        ``info`` naming it. A failure to record it costs only the object, never the upgrade."""
        snapshot = objects.taken_by_operator(record.ref, info.trigger_type, "savepoint",
                                             cond.now_datetime(), info.path)
        name = snapshot["metadata"]["name"]
        try:
            created = await asyncio.to_thread(self.jobs.kube.create, snapshot)
            ref = SnapshotRef(name, record.ref.namespace, created["metadata"].get("uid", ""))
            await self._write(ref, objects.completed(info.trigger_type, info.path,
                                                     info.checkpoint_id, 1))
        except ApiException as exc:
            log.warning("%s/%s: cannot record savepoint %s as a DataflowSnapshot: %s",
                        record.ref.namespace, record.ref.name, info.path, api_message(exc))
            return info
        return info.model_copy(update={"snapshot": name})

    # -- the job starting from one ----------------------------------------------------------

    async def initial_savepoint(self, namespace: str, spec: DataflowJobSpec) -> DataflowJobSpec:
        """The spec with ``initialSavepoint.snapshotRef`` resolved to the snapshot's path (a
        savepoint's, or a retained checkpoint's, as initialSavepointPath takes either); raises
        SnapshotWaiting while it is being taken (or not created yet), SpecError when it failed
        or was abandoned."""
        reference = spec.job.initial_savepoint
        if reference is None:
            return spec
        at = "spec.job.initialSavepoint.snapshotRef"
        name = reference.snapshot_ref.name
        found = await asyncio.to_thread(self.jobs.kube.get, SNAPSHOT_KIND, namespace, name)
        if found is None:
            raise SnapshotWaiting(f"{at}: no DataflowSnapshot {name!r} yet")
        status = DataflowSnapshotStatus.model_validate(found.get("status") or {})
        if not status.state.final:
            raise SnapshotWaiting(f"{at}: DataflowSnapshot {name!r} is {status.state.value}")
        if status.state is not SnapshotState.COMPLETED or status.path is None:
            raise SpecError.single(at, f"DataflowSnapshot {name!r} is {status.state.value}: "
                                   f"{status.error or 'no path'}")
        job = spec.job.model_copy(update={"initial_savepoint": None,
                                          "initial_savepoint_path": status.path})
        return spec.model_copy(update={"job": job})

    # -- a snapshot deleted -------------------------------------------------------------------

    async def on_delete(self, ref: SnapshotRef, spec: Mapping[str, Any],
                        status: Mapping[str, Any] | None) -> None:
        """Disposes of a completed savepoint's files when asked to, through the job's running
        driver; a snapshot whose files cannot be disposed of is deleted all the same (an
        Event on the job says why they were kept), so a deletion never hangs."""
        try:
            parsed = DataflowSnapshotSpec.model_validate(dict(spec))
        except pydantic.ValidationError:
            return
        current = DataflowSnapshotStatus.model_validate(dict(status or {}))
        savepoint = parsed.savepoint
        if (savepoint is None or not savepoint.disposes or current.path is None
                or current.state is not SnapshotState.COMPLETED):
            return
        job = await asyncio.to_thread(self.jobs.kube.get, "DataflowJob", ref.namespace,
                                      parsed.job_reference.name)
        if job is None or job["metadata"].get("deletionTimestamp"):
            log.info("%s/%s deleted with its job: savepoint %s kept", ref.namespace, ref.name,
                     current.path)
            return
        record = self.jobs.records.get((ref.namespace, parsed.job_reference.name))
        if record is None:
            raise SnapshotWaiting(f"DataflowJob {parsed.job_reference.name!r} is not known to "
                                  "the operator yet")
        event: Event
        if current.path in retention.protected_paths(record.status):
            event = Event(WARNING, "SavepointKept", f"{ref.name}: {current.path} kept: the "
                          "job would restore from it")
        elif record.status.job_status is not JobStatus.RUNNING:
            event = Event(NORMAL, "SavepointKept", f"{ref.name}: {current.path} kept: no "
                          "running driver to dispose of it")
        else:
            try:
                disposed = await asyncio.to_thread(self.jobs.backend.dispose_savepoint,
                                                   record.ref, current.path)
            except Exception as exc:
                event = Event(WARNING, "SavepointKept",
                              f"{ref.name}: {current.path} kept: {api_message(exc)}")
            else:
                event = Event(NORMAL, "SavepointDisposed", f"{ref.name}: {current.path}"
                              + ("" if disposed else " (already gone)"))
                self.jobs.metrics.snapshot("savepoint", "disposed")
        await self.jobs.recorder.post(record.ref, [event])

    # -- writing ------------------------------------------------------------------------------

    async def _recorded(self, ref: SnapshotRef) -> bool:
        """The snapshot's status was written already (read again: the event that brought it
        here may predate the write)."""
        found = await asyncio.to_thread(self.jobs.kube.get, SNAPSHOT_KIND, ref.namespace,
                                        ref.name)
        state = ((found or {}).get("status") or {}).get("state")
        return state is not None and SnapshotState(state).final

    async def _end(self, ref: SnapshotRef, status: DataflowSnapshotStatus, state: SnapshotState,
                   error: str, generation: int) -> None:
        await self._write(ref, objects.ended_badly(status, state, error, generation))
        reason = "Failed" if state is SnapshotState.FAILED else "Abandoned"
        await self._post(ref, Event(WARNING, reason, error))

    async def _write(self, ref: SnapshotRef, status: DataflowSnapshotStatus) -> None:
        document = status.model_dump(mode="json", by_alias=True)
        try:
            await asyncio.to_thread(self.jobs.kube.merge_patch, SNAPSHOT_KIND, ref.namespace,
                                    ref.name, {"status": document}, "status")
        except ApiException as exc:
            if exc.status != 404:  # deleted meanwhile: nothing left to say it on
                raise

    async def _post(self, ref: SnapshotRef, event: Event) -> None:
        try:
            await asyncio.to_thread(post_event, self.jobs.kube, ref, event.type, event.reason,
                                    event.message, SNAPSHOT_KIND)
        except ApiException as exc:
            log.warning("cannot post event %s on %s: %s", event.reason, ref.name, exc.reason)


def _cannot_take(record: JobRecord, kind: str) -> str | None:
    """Why the job can never take this snapshot (None: it can, once it runs)."""
    status = record.status.job_status
    if record.plan is not None and not record.plan.compiled.continuous:
        return ("only a continuous job (STREAMING, with an unbounded source) takes snapshots; "
                f"DataflowJob {record.ref.name!r} is not one")
    if (record.spec is not None and record.spec.suspend) or status is JobStatus.SUSPENDED:
        return f"DataflowJob {record.ref.name!r} is suspended"
    if status is not None and status.is_globally_terminal:
        return f"DataflowJob {record.ref.name!r} has ended ({status.value})"
    if kind == "checkpoint" and (record.spec is None or record.spec.checkpointing is None
                                 or record.spec.checkpointing.storage is None):
        return (f"DataflowJob {record.ref.name!r} keeps no durable checkpoints: a checkpoint "
                "snapshot needs spec.checkpointing.storage")
    return None


