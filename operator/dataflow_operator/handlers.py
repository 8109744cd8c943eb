"""kopf wiring: which events reach the controller, how kopf itself is configured, and the probes
behind /healthz."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import kopf

from dataflow_engine.spec.model import API_GROUP, API_VERSION
from dataflow_operator.controller import DataflowController, MonitorStalled, TransientError
from dataflow_operator.diffbase import DigestDiffBaseStorage
from dataflow_operator.kube import Kube
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.snapshots.controller import SnapshotRef, SnapshotWaiting
from dataflow_operator.snapshots.model import SNAPSHOT_PLURAL

PLURAL = "dataflowjobs"
#: kopf's own bookkeeping lives in annotations under our group, not in status.
ANNOTATION_PREFIX = f"operator.{API_GROUP}"
#: A /healthz probe: what it found, or an exception when the operator is not healthy.
Probe = Callable[[], Awaitable[str]]


def build_registry(controller: DataflowController, finalize_on_delete: bool,
                   excluded_namespaces: frozenset[str] = frozenset()) -> kopf.OperatorRegistry:
    """Handlers bound to one controller; a finalizer only when deletion needs more than GC.
    Jobs of an excluded namespace match no handler, so kopf leaves them untouched (watching
    every namespace, the protected ones are excluded)."""
    registry = kopf.OperatorRegistry()
    resource = (API_GROUP, API_VERSION, PLURAL)

    def in_scope(namespace: str | None, **_: Any) -> bool:
        return (namespace or "default") not in excluded_namespaces

    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(
            prefix=ANNOTATION_PREFIX)
        settings.persistence.diffbase_storage = DigestDiffBaseStorage()
        settings.posting.level = logging.ERROR
        # The watched namespaces are given; scanning the cluster's namespaces and CRDs would
        # need cluster-wide read access the operator's least-privilege account does not have.
        settings.scanning.disabled = True
        settings.watching.server_timeout = 300
        # kopf keeps one worker per object, idle for batching.idle_timeout after its last
        # event: a worker limit would make a bulk apply wait for idle workers to expire.

    @kopf.on.resume(*resource, registry=registry, when=in_scope)
    @kopf.on.create(*resource, registry=registry, when=in_scope)
    @kopf.on.update(*resource, field="spec", registry=registry, when=in_scope)
    async def spec_changed(name: str, namespace: str | None, uid: str, spec: kopf.Spec,
                           status: kopf.Status, meta: kopf.Meta, retry: int,
                           **_: Any) -> None:
        ref = JobRef(name=name, namespace=namespace or "default", uid=uid)
        try:
            await controller.on_spec(ref, spec, status, int(meta.get("generation") or 0))
        except TransientError as exc:
            delay = exc.delay if exc.delay is not None else min(60, 2 ** retry)
            raise kopf.TemporaryError(str(exc), delay=delay) from exc

    @kopf.on.delete(*resource, registry=registry, optional=not finalize_on_delete,
                    when=in_scope)
    async def deleted(name: str, namespace: str | None, uid: str, **_: Any) -> None:
        await controller.on_delete(JobRef(name=name, namespace=namespace or "default", uid=uid))

    snapshots = (API_GROUP, API_VERSION, SNAPSHOT_PLURAL)

    @kopf.on.resume(*snapshots, registry=registry, when=in_scope)
    @kopf.on.create(*snapshots, registry=registry, when=in_scope)
    async def snapshot_created(name: str, namespace: str | None, uid: str, spec: kopf.Spec,
                               status: kopf.Status, meta: kopf.Meta, labels: kopf.Labels,
                               **_: Any) -> None:
        ref = SnapshotRef(name=name, namespace=namespace or "default", uid=uid)
        try:
            await controller.snapshots.on_snapshot(ref, spec, status, labels,
                                                   int(meta.get("generation") or 1),
                                                   meta.get("creationTimestamp"))
        except SnapshotWaiting as exc:
            raise kopf.TemporaryError(str(exc), delay=exc.delay) from exc

    # Always finalized: disposing of a savepoint's files needs the operator.
    @kopf.on.delete(*snapshots, registry=registry, when=in_scope)
    async def snapshot_deleted(name: str, namespace: str | None, uid: str, spec: kopf.Spec,
                               status: kopf.Status, **_: Any) -> None:
        ref = SnapshotRef(name=name, namespace=namespace or "default", uid=uid)
        await controller.snapshots.on_delete(ref, spec, status)

    @kopf.on.startup(registry=registry)
    async def start_monitor(memo: kopf.Memo, **_: Any) -> None:
        memo["monitor_stopped"] = asyncio.Event()
        memo["monitor"] = asyncio.create_task(controller.monitor(memo["monitor_stopped"]))

    @kopf.on.cleanup(registry=registry)
    async def stop_monitor(memo: kopf.Memo, **_: Any) -> None:
        memo["monitor_stopped"].set()
        await memo["monitor"]

    return registry


def health_probes(controller: DataflowController, memo: kopf.Memo) -> dict[str, Probe]:
    """The leader's /healthz probes, so the kubelet restarts an operator that lost the API server
    or whose status loop stalled; ``memo`` is kopf's, where the monitor task is kept."""
    async def monitor_alive() -> str:
        task = memo.get("monitor")
        if task is not None and task.done():
            raise MonitorStalled(f"the status monitor ended: {task.exception()!r}"
                                 if not task.cancelled() else "the status monitor was cancelled")
        return controller.monitor_health()

    return {"api": _api_reachable(controller.kube), "monitor": monitor_alive}


def standby_probes(kube: Kube) -> dict[str, Probe]:
    """A standby's /healthz: healthy while the API server answers, so the kubelet leaves it
    alone while it waits to lead (it runs no status loop)."""
    async def standby() -> str:
        return "standby"

    return {"api": _api_reachable(kube), "leader": standby}


def _api_reachable(kube: Kube) -> Probe:
    async def api_reachable() -> str:
        await asyncio.wait_for(asyncio.to_thread(kube.ping), timeout=10)
        return "ok"

    return api_reachable
