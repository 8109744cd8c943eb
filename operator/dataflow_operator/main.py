"""Assembling and running the operator process."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
from aiohttp import web

from dataflow_operator.backends.base import Backend
from dataflow_operator.backends.kubernetes import KubernetesBackend
from dataflow_operator.backends.local import LocalBackend
from dataflow_operator.controller import DataflowController
from dataflow_operator.handlers import build_registry
from dataflow_operator.kube import Kube, load_config
from dataflow_operator.leader import LeaderElector, default_identity
from dataflow_operator.metrics import Metrics
from dataflow_operator.settings import BackendKind, OperatorSettings
from dataflow_operator.status_tokens import StatusTokens


def build_controller(settings: OperatorSettings) -> DataflowController:
    kube = Kube(load_config(settings.kubeconfig))
    backend: Backend
    tokens = (StatusTokens.from_file(settings.status_key_file) if settings.status_key_file
              else StatusTokens.in_state_dir(settings.state_dir))
    if settings.backend is BackendKind.LOCAL:
        backend = LocalBackend(kube, settings.state_dir, tokens, settings.local_master,
                               settings.max_local_drivers)
    else:
        backend = KubernetesBackend(kube, settings.image, tokens)
    return DataflowController(kube, backend, Metrics(), settings.poll_interval,
                              settings.concurrency, settings.policy, settings.savepoint_timeout)


#: Threads for blocking Kubernetes calls; asyncio's default (cores + 4) starves bulk applies.
THREADS = 64


class LeadershipLost(RuntimeError):
    """Another replica may lead now: this one stopped, and exits non-zero to start over."""


async def run_operator(settings: OperatorSettings) -> None:
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(THREADS))
    if settings.kubeconfig:
        os.environ["KUBECONFIG"] = settings.kubeconfig  # for kopf's own client login
    controller = build_controller(settings)
    if settings.metrics_port:
        controller.metrics.serve(settings.metrics_port)
    if settings.leader_election is None:
        await _run_kopf(settings, controller, stop_flag=None)
        return
    elector = LeaderElector(controller.kube, settings.leader_election, default_identity())
    controller.metrics.leading(False)
    async with _standby_health(settings.health_port, controller.kube):
        await elector.acquire()
    controller.metrics.leading(True)
    lost = asyncio.Event()
    keeper = asyncio.create_task(elector.keep(lost))
    try:
        await _run_kopf(settings, controller, stop_flag=lost)
    finally:
        keeper.cancel()
        controller.metrics.leading(False)
        if not lost.is_set():
            await asyncio.to_thread(elector.release)
    if lost.is_set():
        raise LeadershipLost(f"lost the Lease {settings.leader_election.namespace}/"
                             f"{settings.leader_election.name}")


@contextlib.asynccontextmanager
async def _standby_health(port: int | None, kube: Kube) -> AsyncIterator[None]:
    """/healthz while waiting to lead (kopf, which serves it otherwise, is not running yet):
    healthy while the API server answers, so the kubelet leaves a standby alone."""
    if not port:
        yield
        return

    async def healthz(_: web.Request) -> web.Response:
        try:
            await asyncio.wait_for(asyncio.to_thread(kube.ping), timeout=10)
        except Exception as exc:
            return web.json_response({"api": str(exc), "leader": "standby"}, status=500)
        return web.json_response({"api": "ok", "leader": "standby"})

    app = web.Application()
    app.add_routes([web.get("/healthz", healthz)])
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    try:
        yield
    finally:
        await runner.cleanup()


async def _run_kopf(settings: OperatorSettings, controller: DataflowController,
                    stop_flag: asyncio.Event | None) -> None:
    registry = build_registry(controller,
                              finalize_on_delete=settings.backend is BackendKind.LOCAL)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # kopf reads the files itself: in-cluster first, then $KUBECONFIG (set above).
        return (kopf.login_with_service_account(**kwargs)
                or kopf.login_with_kubeconfig(**kwargs))

    liveness = (f"http://0.0.0.0:{settings.health_port}/healthz"
                if settings.health_port else None)
    await kopf.operator(
        registry=registry,
        standalone=True,
        clusterwide=not settings.namespaces,
        namespaces=list(settings.namespaces),
        liveness_endpoint=liveness,
        stop_flag=stop_flag,
    )
