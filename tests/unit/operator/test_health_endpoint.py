"""/healthz answers in JSON whether its probes pass or fail, for the leader and a standby alike."""

from __future__ import annotations

import asyncio
import socket
import time
from typing import Any

import aiohttp
import kopf
import pytest

from dataflow_operator.controller import DataflowController, MonitorStalled
from dataflow_operator.handlers import Probe, health_probes, standby_probes
from dataflow_operator.main import run_probes, serve_health
from dataflow_operator.metrics import Metrics

pytestmark = pytest.mark.unit


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get_healthz(probes: dict[str, Probe]) -> tuple[int, str, Any]:
    """Serves the probes and asks /healthz once: status, content type and the JSON body."""
    async def ask() -> tuple[int, str, Any]:
        port = _free_port()
        async with serve_health(port, probes), aiohttp.ClientSession() as session, \
                session.get(f"http://127.0.0.1:{port}/healthz") as response:
            return response.status, response.content_type, await response.json()

    return asyncio.run(ask())


async def _ok() -> str:
    return "ok"


async def _stalled() -> str:
    raise MonitorStalled("the status monitor has not completed a cycle yet")


async def _timed_out() -> str:
    raise TimeoutError


def test_a_failing_probe_answers_500_with_every_probe_in_json() -> None:
    assert _get_healthz({"api": _ok, "monitor": _stalled}) == (500, "application/json", {
        "api": "ok", "monitor": {"error": "the status monitor has not completed a cycle yet"}})


def test_passing_probes_answer_200_with_their_results_in_json() -> None:
    assert _get_healthz({"api": _ok, "leader": _ok}) == (
        200, "application/json", {"api": "ok", "leader": "ok"})


def test_an_error_without_a_message_is_named_by_its_type() -> None:
    assert asyncio.run(run_probes({"api": _timed_out})) == (500, {"api": {"error": "TimeoutError"}})


class _Kube:
    def __init__(self, error: Exception | None = None) -> None:
        self.error = error

    def ping(self) -> None:
        if self.error is not None:
            raise self.error


async def _crashing_monitor() -> None:
    raise RuntimeError("lost")


def _controller(kube: _Kube) -> DataflowController:
    return DataflowController(kube=kube, backend=None, metrics=Metrics())  # type: ignore[arg-type]


def test_the_leaders_probes_check_the_api_server_and_the_status_loop() -> None:
    controller = _controller(_Kube(ConnectionError("connection refused")))
    controller.monitor_beat = time.monotonic()

    async def check() -> tuple[int, dict[str, Any]]:
        monitor = asyncio.create_task(_crashing_monitor())
        await asyncio.wait([monitor])
        return await run_probes(health_probes(controller, kopf.Memo(monitor=monitor)))

    assert asyncio.run(check()) == (500, {
        "api": {"error": "connection refused"},
        "monitor": {"error": "the status monitor ended: RuntimeError('lost')"}})


def test_a_standby_answers_for_the_api_server_alone() -> None:
    assert asyncio.run(run_probes(standby_probes(_Kube()))) == (  # type: ignore[arg-type]
        200, {"api": "ok", "leader": "standby"})
