"""The monitor probe behind /healthz: healthy only while the status loop keeps cycling."""

from __future__ import annotations

import time

import pytest

from dataflow_operator.controller import MONITOR_STALE_SECONDS, DataflowController, MonitorStalled
from dataflow_operator.metrics import Metrics

pytestmark = pytest.mark.unit


def _controller(poll_interval: float) -> DataflowController:
    return DataflowController(kube=None, backend=None, metrics=Metrics(),  # type: ignore[arg-type]
                              poll_interval=poll_interval)


def test_healthy_only_after_a_recent_cycle() -> None:
    controller = _controller(poll_interval=1.0)
    with pytest.raises(MonitorStalled, match="has not completed a cycle"):
        controller.monitor_health()
    controller.monitor_beat = time.monotonic()
    assert "last cycle" in controller.monitor_health()
    controller.monitor_beat = time.monotonic() - MONITOR_STALE_SECONDS - 1
    with pytest.raises(MonitorStalled, match="last cycle ended"):
        controller.monitor_health()


def test_a_long_poll_interval_is_not_mistaken_for_a_stall() -> None:
    controller = _controller(poll_interval=30.0)
    controller.monitor_beat = time.monotonic() - MONITOR_STALE_SECONDS - 1
    assert "last cycle" in controller.monitor_health()  # 20 intervals: 600 s
