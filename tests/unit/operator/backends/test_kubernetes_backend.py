"""What the Kubernetes backend reads off a driver pod."""

from __future__ import annotations

from typing import Any

import pytest

from dataflow_operator.backends.base import DriverPhase
from dataflow_operator.backends.kubernetes import KubernetesBackend, PodSnapshot
from dataflow_operator.backends.status_tokens import StatusTokens
from dataflow_operator.resources.meta import JobRef

pytestmark = pytest.mark.unit
JOB = JobRef(name="wc", namespace="ns", uid="uid-1")


def _observe(status: dict[str, Any]) -> tuple[DriverPhase, str, str]:
    pod = {"metadata": {"name": JOB.driver_pod, "labels": {}}, "status": status}
    backend = KubernetesBackend(kube=None, image="img",  # type: ignore[arg-type]
                                tokens=StatusTokens(b"k" * 32))
    seen = backend.observe(JOB, PodSnapshot({(JOB.namespace, JOB.driver_pod): pod}))
    return seen.phase, seen.pending_reason, seen.pending_message


def test_the_schedulers_verdict_on_a_pending_driver() -> None:
    assert _observe({"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/1 nodes are available: 1 Insufficient cpu."}]}) == (
        DriverPhase.PENDING, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.")


def test_a_stuck_container_but_not_one_that_is_starting() -> None:
    def waiting(reason: str) -> dict[str, Any]:
        return {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [{"name": "driver", "state": {
                    "waiting": {"reason": reason, "message": "pull access denied"}}}]}

    assert _observe(waiting("ImagePullBackOff")) == (
        DriverPhase.PENDING, "ImagePullBackOff", "pull access denied")
    assert _observe(waiting("ContainerCreating")) == (DriverPhase.PENDING, "", "")
    assert _observe({"phase": "Pending"}) == (DriverPhase.PENDING, "", "")
