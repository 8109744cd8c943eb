"""Assembling and running the operator process."""

from __future__ import annotations

import asyncio
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf

from dataflow_operator.backends.base import Backend
from dataflow_operator.backends.kubernetes import KubernetesBackend
from dataflow_operator.backends.local import LocalBackend
from dataflow_operator.controller import DataflowController
from dataflow_operator.handlers import build_registry
from dataflow_operator.kube import Kube, load_config
from dataflow_operator.metrics import Metrics
from dataflow_operator.settings import BackendKind, OperatorSettings


def build_controller(settings: OperatorSettings) -> DataflowController:
    kube = Kube(load_config(settings.kubeconfig))
    backend: Backend
    if settings.backend is BackendKind.LOCAL:
        backend = LocalBackend(kube, settings.state_dir, settings.local_master,
                               settings.max_local_drivers)
    else:
        backend = KubernetesBackend(kube, settings.image)
    return DataflowController(kube, backend, Metrics(), settings.poll_interval,
                              settings.concurrency, settings.policy)


#: Threads for blocking Kubernetes calls; asyncio's default (cores + 4) starves bulk applies.
THREADS = 64


async def run_operator(settings: OperatorSettings) -> None:
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(THREADS))
    if settings.kubeconfig:
        os.environ["KUBECONFIG"] = settings.kubeconfig  # for kopf's own client login
    controller = build_controller(settings)
    if settings.metrics_port:
        controller.metrics.serve(settings.metrics_port)
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
    )
