"""Leader election on a coordination.k8s.io Lease, as Kubernetes' own controllers do it.

Replicas of the operator share one Lease: the holder runs kopf and the status monitor, the
others wait. The holder renews the Lease every ``retry_seconds``; a standby takes it over when
its record has not changed for ``lease_seconds`` by the standby's own clock (so clock skew
between nodes does not matter), or at once when the holder released it on a clean shutdown. A
holder that cannot renew within ``renew_deadline_seconds`` stops leading before its Lease can
expire, so two leaders never act at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException

from dataflow_operator.kube import Kube
from dataflow_operator.settings import LeaderElection

log = logging.getLogger(__name__)


def default_identity() -> str:
    """The pod's name (the chart sets POD_NAME) and a random suffix: a restarted container is a
    new candidate, as in client-go."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"


def _micro_time(instant: datetime) -> str:
    return instant.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, kube: Kube, election: LeaderElection, identity: str) -> None:
        self.kube = kube
        self.election = election
        self.identity = identity
        self.leading = False
        #: The Lease record last seen (holder, renewTime) and when, by our monotonic clock.
        self._observed: tuple[Any, Any] | None = None
        self._observed_at = 0.0

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        election = self.election
        now = datetime.now(UTC)
        lease = self.kube.get("Lease", election.namespace, election.name)
        if lease is None:
            return self._write(self._lease_object(now, now, 0), create=True)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = (holder, spec.get("renewTime"))
        if record != self._observed:
            self._observed, self._observed_at = record, time.monotonic()
        duration = spec.get("leaseDurationSeconds") or election.lease_seconds
        held_by_other = holder and holder != self.identity
        if held_by_other and time.monotonic() < self._observed_at + duration:
            return False
        transitions = int(spec.get("leaseTransitions") or 0)
        if holder == self.identity:
            acquired = spec.get("acquireTime") or _micro_time(now)
        else:
            acquired, transitions = _micro_time(now), transitions + 1
        body = self._lease_object(now, acquired, transitions)
        body["metadata"]["resourceVersion"] = lease["metadata"]["resourceVersion"]
        return self._write(body, create=False)

    def release(self) -> None:
        """Gives the Lease up on a clean shutdown, so a standby takes over at once."""
        if not self.leading:
            return
        self.leading = False
        lease = self.kube.get("Lease", self.election.namespace, self.election.name)
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self.identity:
            return
        lease["spec"] = {"leaseDurationSeconds": 1,
                         "renewTime": _micro_time(datetime.now(UTC)),
                         "leaseTransitions": lease["spec"].get("leaseTransitions", 0)}
        self._write(lease, create=False)

    async def acquire(self) -> None:
        """Returns once this process leads."""
        log.info("waiting to lead: Lease %s/%s as %s", self.election.namespace,
                 self.election.name, self.identity)
        while not await self._attempt():
            await asyncio.sleep(self.election.retry_seconds)
        self.leading = True
        log.info("leading: Lease %s/%s acquired", self.election.namespace, self.election.name)

    async def keep(self, lost: asyncio.Event) -> None:
        """Renews the Lease until cancelled; sets ``lost`` when it could not in time."""
        renewed = time.monotonic()
        while True:
            await asyncio.sleep(self.election.retry_seconds)
            if await self._attempt():
                renewed = time.monotonic()
            elif time.monotonic() - renewed > self.election.renew_deadline_seconds:
                self.leading = False
                log.error("lost the Lease %s/%s: stopping", self.election.namespace,
                          self.election.name)
                lost.set()
                return

    async def _attempt(self) -> bool:
        try:
            return await asyncio.to_thread(self.try_acquire_or_renew)
        except Exception as exc:  # the API server is away: no luck this round
            log.warning("leader election: %s", exc)
            return False

    def _lease_object(self, now: datetime, acquired: datetime | str,
                      transitions: int) -> dict[str, Any]:
        return {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.election.name, "namespace": self.election.namespace},
            "spec": {"holderIdentity": self.identity,
                     "leaseDurationSeconds": self.election.lease_seconds,
                     "acquireTime": acquired if isinstance(acquired, str)
                     else _micro_time(acquired),
                     "renewTime": _micro_time(now), "leaseTransitions": transitions}}

    def _write(self, lease: dict[str, Any], create: bool) -> bool:
        try:
            if create:
                self.kube.create(lease)
            else:
                self.kube.replace(lease)
        except ApiException as exc:
            if exc.status == 409:  # another candidate was faster
                return False
            raise
        return True
