"""kopf wiring: which events reach the controller, and how kopf itself is configured."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from dataflow_engine.spec import API_GROUP, API_VERSION
from dataflow_operator.controller import DataflowController, MonitorStalled, TransientError
from dataflow_operator.diffbase import DigestDiffBaseStorage
from dataflow_operator.resources.meta import JobRef

PLURAL = "dataflowjobs"
#: kopf's own bookkeeping lives in annotations under our group, not in status.
ANNOTATION_PREFIX = f"operator.{API_GROUP}"


def build_registry(controller: DataflowController,
                   finalize_on_delete: bool) -> kopf.OperatorRegistry:
    """Handlers bound to one controller; a finalizer only when deletion needs more than GC."""
    registry = kopf.OperatorRegistry()
    resource = (API_GROUP, API_VERSION, PLURAL)

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

    @kopf.on.resume(*resource, registry=registry)
    @kopf.on.create(*resource, registry=registry)
    @kopf.on.update(*resource, field="spec", registry=registry)
    async def spec_changed(name: str, namespace: str | None, uid: str, spec: kopf.Spec,
                           status: kopf.Status, meta: kopf.Meta, retry: int,
                           **_: Any) -> None:
        ref = JobRef(name=name, namespace=namespace or "default", uid=uid)
        try:
            await controller.on_spec(ref, spec, status, int(meta.get("generation") or 0))
        except TransientError as exc:
            delay = exc.delay if exc.delay is not None else min(60, 2 ** retry)
            raise kopf.TemporaryError(str(exc), delay=delay) from exc

    @kopf.on.delete(*resource, registry=registry, optional=not finalize_on_delete)
    async def deleted(name: str, namespace: str | None, uid: str, **_: Any) -> None:
        await controller.on_delete(JobRef(name=name, namespace=namespace or "default", uid=uid))

    @kopf.on.startup(registry=registry)
    async def start_monitor(memo: kopf.Memo, **_: Any) -> None:
        memo["monitor_stopped"] = asyncio.Event()
        memo["monitor"] = asyncio.create_task(controller.monitor(memo["monitor_stopped"]))

    # /healthz (--health-port) runs these and answers 500 when one raises (at once: PERMANENT,
    # not kopf's retries), so the kubelet restarts an operator that lost the API server or
    # whose status loop stalled.
    @kopf.on.probe(id="api", errors=kopf.ErrorsMode.PERMANENT, registry=registry)
    async def api_reachable(**_: Any) -> str:
        await asyncio.wait_for(asyncio.to_thread(controller.kube.ping), timeout=10)
        return "ok"

    @kopf.on.probe(id="monitor", errors=kopf.ErrorsMode.PERMANENT, registry=registry)
    async def monitor_alive(memo: kopf.Memo, **_: Any) -> str:
        task = memo.get("monitor")
        if task is not None and task.done():
            raise MonitorStalled(f"the status monitor ended: {task.exception()!r}"
                                 if not task.cancelled() else "the status monitor was cancelled")
        return controller.monitor_health()

    @kopf.on.cleanup(registry=registry)
    async def stop_monitor(memo: kopf.Memo, **_: Any) -> None:
        memo["monitor_stopped"].set()
        await memo["monitor"]

    return registry
