"""Assembling and running the operator process."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
from aiohttp import web

from dataflow_operator.backends.base import Backend
from dataflow_operator.backends.kubernetes import KubernetesBackend
from dataflow_operator.backends.local import LocalBackend
from dataflow_operator.backends.status_tokens import StatusTokens
from dataflow_operator.controller import DataflowController
from dataflow_operator.handlers import Probe, build_registry, health_probes, standby_probes
from dataflow_operator.kube import Kube, load_config
from dataflow_operator.leader import LeaderElector, default_identity
from dataflow_operator.metrics import Metrics
from dataflow_operator.settings import BackendKind, OperatorSettings


def build_controller(settings: OperatorSettings) -> DataflowController:
    kube = Kube(load_config(settings.kubeconfig))
    backend: Backend
    tokens = (StatusTokens.from_file(settings.status_key_file) if settings.status_key_file
              else StatusTokens.in_state_dir(settings.state_dir))
    if settings.backend is BackendKind.LOCAL:
        backend = LocalBackend(kube, settings.state_dir, tokens, settings.local_master,
                               settings.max_local_drivers, settings.local_driver_user,
                               jvm_options=settings.jvm_options)
    else:
        backend = KubernetesBackend(kube, settings.image, tokens, settings.jvm_options)
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
    async with serve_health(settings.health_port, standby_probes(controller.kube)):
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


#: /healthz answers from probes this recent, however often the kubelet asks.
HEALTH_CACHE_SECONDS = 10.0


@contextlib.asynccontextmanager
async def serve_health(port: int | None, probes: Mapping[str, Probe]) -> AsyncIterator[None]:
    """/healthz on ``port`` (none without one): each probe's result in JSON, with status 500 and
    the error in place of a failed probe's result, so a person sees why the kubelet restarts."""
    if not port:
        yield
        return
    app = web.Application()
    app.add_routes([web.get("/healthz", _HealthCheck(probes).answer)])
    runner = web.AppRunner(app, handle_signals=False)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    try:
        yield
    finally:
        await runner.cleanup()


class _HealthCheck:
    """Runs the probes at most every HEALTH_CACHE_SECONDS, one run at a time."""

    def __init__(self, probes: Mapping[str, Probe]) -> None:
        self.probes = probes
        self.lock = asyncio.Lock()
        #: When the probes last ran, and the answer they gave.
        self.last: tuple[float, int, dict[str, Any]] | None = None

    async def answer(self, _request: web.Request) -> web.Response:
        async with self.lock:
            if self.last is None or time.monotonic() - self.last[0] >= HEALTH_CACHE_SECONDS:
                status, body = await run_probes(self.probes)
                self.last = (time.monotonic(), status, body)
            _, status, body = self.last
        return web.json_response(body, status=status)


async def run_probes(probes: Mapping[str, Probe]) -> tuple[int, dict[str, Any]]:
    """200 and every probe's result, or 500 when one raised, with {"error": ...} as its result."""
    outcomes = await asyncio.gather(*(probe() for probe in probes.values()),
                                    return_exceptions=True)
    body = {name: {"error": str(outcome) or type(outcome).__name__}
            if isinstance(outcome, BaseException) else outcome
            for name, outcome in zip(probes, outcomes, strict=True)}
    failed = any(isinstance(outcome, BaseException) for outcome in outcomes)
    return (500 if failed else 200), body


async def _run_kopf(settings: OperatorSettings, controller: DataflowController,
                    stop_flag: asyncio.Event | None) -> None:
    registry = build_registry(controller,
                              finalize_on_delete=settings.backend is BackendKind.LOCAL,
                              excluded_namespaces=settings.excluded_namespaces)

    @kopf.on.login(registry=registry)
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        # kopf reads the files itself: in-cluster first, then $KUBECONFIG (set above).
        return (kopf.login_with_service_account(**kwargs)
                or kopf.login_with_kubeconfig(**kwargs))

    memo = kopf.Memo()  # kopf's startup handler keeps the monitor task in it
    async with serve_health(settings.health_port, health_probes(controller, memo)):
        await kopf.operator(
            registry=registry,
            standalone=True,
            clusterwide=not settings.namespaces,
            namespaces=list(settings.namespaces),
            memo=memo,
            stop_flag=stop_flag,
        )
