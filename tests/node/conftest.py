"""Fixtures of the `node` tier: pods that really run.

By default the session starts a plane with a real node (`hack/cluster up --real-node`: kubelet,
containerd, runc, CNI, kube-proxy, CoreDNS; root only) and builds the project's image into the
node (`hack/image build`). It fails, never skips, when either cannot be done.

Against a cluster of your own: DATAFLOW_TEST_KUBECONFIG names its kubeconfig and
DATAFLOW_TEST_IMAGE an image of this project its nodes can run; volumes then come from
DATAFLOW_TEST_STORAGE_CLASS (dynamically provisioned, ReadWriteMany) instead of a
PersistentVolume on this machine.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_helpers import RealCluster, create_restricted_namespace, run_hack

from kafka_helpers import KAFKA_ENV, kafka_broker
from kube_helpers import (
    CLUSTER_SCRIPT,
    IMAGE_ENV,
    KEEP_ENV,
    KUBECONFIG_ENV,
    REPO_ROOT,
    Kube,
    wait_until,
)
from operator_helpers import CRD_FILE, Operators, admission_policies

IMAGE_SCRIPT = REPO_ROOT / "hack" / "image"


def _last_line(result: subprocess.CompletedProcess[str], what: str) -> str:
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{result.stderr[-6000:]}",
                    pytrace=False)
    return lines[-1]


#: The node tests' namespaces carry it, and the chart's admission policies apply there.
POLICED = "dataflow.io/node-test"
#: The label as a key of `helm --set`, whose dots would otherwise nest.
POLICED_KEY = POLICED.replace(".", "\\.")


@pytest.fixture(scope="session")
def real_cluster(helm: str) -> Iterator[RealCluster]:
    """The cluster, with the chart's admission policies bound to the node tests' namespaces:
    every node test's executors, made by a real Spark driver, must be admitted by them (the k8s
    tier, which also runs on this cluster, works in namespaces of its own)."""
    with _cluster() as cluster:
        policies = admission_policies(
            helm, cluster.image,
            f"admissionPolicies.namespaceSelector.matchLabels.{POLICED_KEY}=yes")
        cluster.kube.apply(*policies)
        try:
            yield cluster
        finally:
            for policy in policies:
                cluster.kube.kubectl("delete", policy["kind"].lower(), policy["metadata"]["name"],
                                     "--ignore-not-found", check=False)


@contextlib.contextmanager
def _cluster() -> Iterator[RealCluster]:
    external = os.environ.get(KUBECONFIG_ENV)
    if external:
        image = os.environ.get(IMAGE_ENV)
        if not image:
            pytest.fail(f"{KUBECONFIG_ENV} is set: set {IMAGE_ENV} to this project's image too",
                        pytrace=False)
        yield RealCluster(Kube.for_kubeconfig(Path(external).resolve(), False), image, False)
        return
    built = run_hack(CLUSTER_SCRIPT, "build", "--node", timeout=3600)
    if built.returncode != 0:
        pytest.fail(f"hack/cluster build --node failed:\n{built.stderr[-6000:]}", pytrace=False)
    kubeconfig = Path(_last_line(run_hack(CLUSTER_SCRIPT, "up", "--real-node", "--no-build",
                                          "--timeout", "240", timeout=600),
                                 "hack/cluster up --real-node"))
    try:
        image = _last_line(run_hack(IMAGE_SCRIPT, "build", timeout=3600), "hack/image build")
        kube = Kube.for_kubeconfig(kubeconfig, started_here=True)
        kube.kubectl("apply", "-f", str(CRD_FILE))
        wait_until("the CRD's conditions", lambda: (kube.get(
            "crd", "dataflowjobs.dataflow.io") or {}).get("status", {}).get("conditions"))
        kube.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                     "crd/dataflowjobs.dataflow.io")
        yield RealCluster(kube, image, True)
    finally:
        if os.environ.get(KEEP_ENV):
            print(f"\nkept the real-node plane running: KUBECONFIG={kubeconfig}", file=sys.stderr)
        else:
            stopped = run_hack(CLUSTER_SCRIPT, "down", str(kubeconfig), timeout=300)
            print(stopped.stderr, file=sys.stderr, end="")


@pytest.fixture
def real_kube(real_cluster: RealCluster) -> Kube:
    return real_cluster.kube


def _namespace_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    return f"n-{stem.removeprefix('test-')[:40].strip('-')}-{secrets.token_hex(3)}"


@pytest.fixture
def restricted_namespace(real_kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    name = _namespace_name(request.node.name)
    create_restricted_namespace(real_kube, name)
    real_kube.kubectl("label", "namespace", name, f"{POLICED}=yes")
    try:
        yield name
    finally:
        real_kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found",
                          check=False)


@pytest.fixture
def real_operators(real_cluster: RealCluster, restricted_namespace: str,
                   tmp_path: Path) -> Iterator[Operators]:
    """Operator processes (Kubernetes backend, the built image) watching the test's namespace."""
    running = Operators(real_cluster.kube, restricted_namespace, tmp_path,
                        image=real_cluster.image)
    yield running
    running.stop_all()
    print(running.logs()[-6000:], file=sys.stderr)  # shown when the test failed


@pytest.fixture(scope="session")
def node_kafka_bootstrap(real_cluster: RealCluster) -> Iterator[str]:
    """A broker the real node's pods reach: ``$DATAFLOW_TEST_KAFKA_BOOTSTRAP``, else one of
    ``hack/kafka up`` on the node's address (the local plane's node is this machine)."""
    external = os.environ.get(KAFKA_ENV)
    if external:
        yield external
        return
    if not real_cluster.started_here:
        pytest.fail(f"{KUBECONFIG_ENV} is set: set {KAFKA_ENV} to a broker its pods reach",
                    pytrace=False)
    nodes = real_cluster.kube.get("nodes")
    assert nodes is not None
    addresses = [address["address"] for node in nodes["items"]
                 for address in node["status"].get("addresses", [])
                 if address["type"] == "InternalIP"]
    assert len(addresses) == 1, f"one real node expected, found addresses {addresses}"
    with kafka_broker(addresses[0]) as bootstrap:
        yield bootstrap
