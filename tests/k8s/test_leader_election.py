"""Replicas of the operator elect one leader on a Lease; a standby takes over when it goes."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kube_helpers import Kube, free_port, wait_until
from operator_helpers import (
    OperatorProcess,
    Operators,
    events,
    healthz,
    job_manifest,
    wait_condition,
)

pytestmark = pytest.mark.k8s
LEASE = "dfo-leader"


def _lease(kube: Kube, namespace: str) -> dict[str, Any]:
    return (kube.get("lease", LEASE, "--namespace", namespace) or {}).get("spec") or {}


def _healthy(port: int) -> dict[str, Any] | None:
    """The probes' JSON while /healthz answers 200, else None."""
    code, probes = healthz(port)
    return probes if code == 200 else None


def _leader(operators: list[OperatorProcess]) -> OperatorProcess:
    def leading() -> OperatorProcess | None:
        found = [o for o in operators if o.process.poll() is None
                 and "leading: Lease" in o.log.read_text(errors="replace")]
        assert len(found) <= 1, "two replicas lead at once"
        return found[0] if found else None

    leader: OperatorProcess = wait_until("a leader", leading, timeout=60)
    return leader


def test_one_replica_leads_and_a_standby_takes_over(kube: Kube, namespace: str,
                                                    operators: Operators) -> None:
    election = ("--leader-election", "--leader-election-namespace", namespace,
                "--leader-election-id", LEASE)
    ports = [free_port(), free_port()]
    replicas = [operators.start("kubernetes", *election, "--health-port", str(port))
                for port in ports]
    first = _leader(replicas)
    standby = next(r for r in replicas if r is not first)
    holder = wait_until("the Lease", lambda: _lease(kube, namespace).get("holderIdentity"))
    wait_until("the standby waiting", lambda: "waiting to lead" in standby.log.read_text())
    # Both are healthy: the leader with kopf's probes, the standby with the API server's.
    leader_port, standby_port = (ports[replicas.index(r)] for r in (first, standby))
    assert "monitor" in wait_until("the leader's /healthz", lambda: _healthy(leader_port))
    assert _healthy(standby_port) == {"api": "ok", "leader": "standby"}

    kube.apply(job_manifest("a"), namespace=namespace)
    wait_condition(kube, namespace, "a", "Provisioned")
    time.sleep(2)  # a second, acting replica would post its own Submitted by now
    assert len(events(kube, namespace, "a", "Submitted")) == 1
    assert "leading: Lease" not in standby.log.read_text()

    # A clean shutdown releases the Lease: the standby leads well before it would expire.
    first.stop()
    stopped = time.monotonic()
    assert _leader([standby]) is standby
    assert time.monotonic() - stopped < 10
    assert "monitor" in wait_until("kopf's /healthz on the new leader",
                                   lambda: _healthy(standby_port))
    lease = _lease(kube, namespace)
    assert lease["holderIdentity"] != holder and lease["leaseTransitions"] >= 1
    kube.apply(job_manifest("b"), namespace=namespace)
    wait_condition(kube, namespace, "b", "Provisioned")

    # A leader that dies holds the Lease until it expires; then a new replica takes over.
    standby.kill()
    third = operators.start("kubernetes", *election)
    assert _leader([third]) is third
    kube.apply(job_manifest("c"), namespace=namespace)
    wait_condition(kube, namespace, "c", "Provisioned")
    assert [len(events(kube, namespace, name, "Submitted")) for name in "abc"] == [1, 1, 1]
