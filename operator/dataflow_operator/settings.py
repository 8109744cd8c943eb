"""How an operator process is configured (``dataflow operator`` flags, Helm values)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from dataflow_engine.compiler.policy import STRICT, JobPolicy


class BackendKind(StrEnum):
    KUBERNETES = "kubernetes"
    LOCAL = "local"


def default_state_dir() -> Path:
    """Under $XDG_STATE_HOME (~/.local/state by default); root's under /var/lib instead, which
    the user its local drivers run as can reach (a directory below /root it cannot)."""
    state = os.environ.get("XDG_STATE_HOME")
    if not state and os.geteuid() == 0:
        return Path("/var/lib/dataflow-operator")
    return Path(state or Path.home() / ".local" / "state") / "dataflow-operator"


@dataclass(frozen=True)
class LeaderElection:
    """A Lease that replicas of the operator elect their leader on (dataflow_operator.leader)."""

    namespace: str
    name: str = "dataflow-operator"
    #: A standby takes an unchanged Lease over after this long.
    lease_seconds: int = 15
    #: The holder gives up if it could not renew for this long (less than lease_seconds).
    renew_deadline_seconds: float = 10.0
    #: Between two attempts to acquire or renew.
    retry_seconds: float = 2.0


#: Namespaces no job runs in: the cluster's own (the chart adds the operator's).
PROTECTED_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})


@dataclass(frozen=True)
class OperatorSettings:
    backend: BackendKind = BackendKind.KUBERNETES
    #: Namespaces to watch; empty means every namespace but the excluded ones.
    namespaces: tuple[str, ...] = ()
    #: Namespaces whose jobs are never run (watching every namespace); none may be watched.
    excluded_namespaces: frozenset[str] = PROTECTED_NAMESPACES
    kubeconfig: str | None = None
    image: str = "dataflow-operator:0.1.0"
    #: JVM options of every job's driver and executors (Flink's env.java.opts.all in the
    #: operator's default configuration); empty: the JVM's defaults.
    jvm_options: str = ""
    state_dir: Path = field(default_factory=default_state_dir)
    #: The key of the drivers' status tokens (None: one kept in the state directory).
    status_key_file: Path | None = None
    local_master: str = "local[2]"
    #: Local drivers running at once: one per two cores (each embeds a local[2] Spark).
    max_local_drivers: int = max(1, (os.cpu_count() or 2) // 2)
    #: Who local drivers run as (a user name or uid) when the operator runs as root; an
    #: operator that is not root runs them as itself.
    local_driver_user: str = "dataflow-driver"
    #: Seconds between looks at each running job's driver.
    poll_interval: float = 1.0
    #: Seconds a driver has to take a savepoint it was asked for (upgrade, suspend, nonce).
    savepoint_timeout: float = 120.0
    #: Jobs observed at once.
    concurrency: int = 16
    health_port: int | None = 8080
    metrics_port: int | None = 9090
    #: What jobs may choose: images, service accounts, function modules.
    policy: JobPolicy = STRICT
    #: Replicas elect a leader on this Lease; None runs without election (one replica only).
    leader_election: LeaderElection | None = None
