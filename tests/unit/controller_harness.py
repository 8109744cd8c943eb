"""A DataflowController on fakes, driven through its entry points as kopf and the monitor
drive it, for tests that follow one job (and its snapshots) through a story."""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Coroutine
from typing import Any

from operator_fakes import FakeBackend, FakeKube

from dataflow_operator.controller import DataflowController
from dataflow_operator.metrics import Metrics
from dataflow_operator.resources.meta import JobRef
from dataflow_operator.snapshots.controller import SnapshotRef
from dataflow_operator.snapshots.model import SnapshotState
from operator_helpers import KEYED_SUM_PIPELINE

#: A continuous job with keyed state and durable checkpoints, upgraded through savepoints.
STREAM: dict[str, Any] = {
    "parallelism": 2, "epochInterval": "300ms",
    "restartStrategy": {"type": "fixed-delay", "attempts": 2, "delay": "0s"},
    "checkpointing": {"interval": "300ms", "storage": "/data/checkpoints"},
    "job": {"upgradeMode": "savepoint"},
    "pipeline": KEYED_SUM_PIPELINE,
}


def run_async(test: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Runs an async test in an event loop of its own."""
    @functools.wraps(test)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(test(*args, **kwargs))

    return run


class ControllerHarness:
    """A DataflowController over a FakeKube and a FakeBackend, moved through kopf's handlers
    (called by hand) and the monitor's cycle."""

    def __init__(self, savepoint_timeout: float = 10.0) -> None:
        self.kube = FakeKube()
        self.backend = FakeBackend(self.kube)
        self.controller = DataflowController(self.kube, self.backend, Metrics(),  # type: ignore[arg-type]
                                             poll_interval=0.002,
                                             savepoint_timeout=savepoint_timeout)

    def restart_operator(self) -> None:
        """A new operator process: nothing kept but what the API server holds."""
        self.controller = DataflowController(self.kube, self.backend,  # type: ignore[arg-type]
                                             Metrics(), poll_interval=0.002,
                                             savepoint_timeout=self.controller.savepoint_timeout)

    async def running(self, spec: dict[str, Any], name: str = "job") -> JobRef:
        ref = self.kube.add_job(name, spec)
        await self.on_spec(ref)
        await self.controller.monitor_cycle()
        self.backend.driver(ref).run()
        await self.controller.monitor_cycle()
        assert self.kube.status(ref)["jobStatus"] == "RUNNING"
        return ref

    async def on_spec(self, ref: JobRef) -> None:
        job = self.kube.job(ref)
        assert job is not None
        await self.controller.on_spec(ref, job["spec"], job.get("status", {}),
                                      int(job["metadata"]["generation"]))

    def create(self, name: str, spec: dict[str, Any]) -> None:
        self.kube.create({"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowSnapshot",
                          "metadata": {"name": name, "namespace": "default"}, "spec": spec})

    async def kopf(self) -> None:
        """kopf's create (or resume) handler for every snapshot not yet final."""
        for obj in self.snapshots():
            if SnapshotState(obj.get("status", {}).get("state", "TRIGGER_PENDING")).final:
                continue
            meta = obj["metadata"]
            await self.controller.snapshots.on_snapshot(
                SnapshotRef(meta["name"], "default", meta["uid"]), obj["spec"],
                obj.get("status"), meta.get("labels") or {}, 1, meta["creationTimestamp"])

    async def cycle(self, times: int = 1) -> None:
        """A monitor cycle, then kopf's handlers for the snapshots it created."""
        for _ in range(times):
            await self.controller.monitor_cycle()
            await self.kopf()

    async def delete(self, name: str) -> None:
        """kubectl delete: kopf's finalizer handler, then the object goes."""
        obj = self.snapshot(name)
        meta = obj["metadata"]
        await self.controller.snapshots.on_delete(
            SnapshotRef(meta["name"], "default", meta["uid"]), obj["spec"], obj.get("status"))
        self.kube.remove("DataflowSnapshot", "default", name)

    def snapshots(self) -> list[dict[str, Any]]:
        return [copy.deepcopy(o) for (kind, _, _), o in sorted(self.kube.objects.items())
                if kind == "DataflowSnapshot"]

    def snapshot(self, name: str) -> dict[str, Any]:
        found = self.kube.get("DataflowSnapshot", "default", name)
        assert found is not None, name
        return found

    def reasons(self, name: str) -> list[str]:
        return [e["reason"] for e in self.kube.events if e["involvedObject"]["name"] == name]
