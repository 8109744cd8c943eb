"""Fixtures of the `node` tier: pods that really run.

The tier runs on the session's plane (the `plane` fixture of tests/conftest.py, started by
tests/planes.py), which the k8s tier, running before it, uses too: when the node tier is among
the session's tests, that plane has a real node (`hack/cluster up --real-node`: kubelet,
containerd, runc, CNI, kube-proxy, CoreDNS; root only) and the project's image built into it
(`hack/image build`). It fails, never skips, when either cannot be done.

Against a cluster of your own: DATAFLOW_TEST_KUBECONFIG names its kubeconfig and
DATAFLOW_TEST_IMAGE an image of this project its nodes can run; volumes then come from
DATAFLOW_TEST_STORAGE_CLASS (dynamically provisioned, ReadWriteMany) instead of a
PersistentVolume on this machine.
"""

from __future__ import annotations

import os
import re
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from node_helpers import RealCluster, create_restricted_namespace

from kafka_helpers import KAFKA_ENV, kafka_broker
from kube_helpers import IMAGE_ENV, KUBECONFIG_ENV, Kube
from operator_helpers import Operators, admission_policies
from planes import Plane

#: The node tests' namespaces carry it, and the chart's admission policies apply there.
POLICED = "dataflow.io/node-test"
#: The label as a key of `helm --set`, whose dots would otherwise nest.
POLICED_KEY = POLICED.replace(".", "\\.")


@pytest.fixture(scope="session")
def real_cluster(plane: Plane, crd: None, helm: str) -> Iterator[RealCluster]:
    """The session's plane, whose pods really run, with the chart's admission policies bound
    to the node tests' namespaces: every node test's executors, made by a real Spark driver,
    must be admitted by them (the k8s tier, which also runs on this cluster, works in
    namespaces of its own)."""
    if plane.image is None:
        if not plane.started_here:
            pytest.fail(f"{KUBECONFIG_ENV} is set: set {IMAGE_ENV} to this project's image too",
                        pytrace=False)
        pytest.fail("the node tier needs a real node, and starting one needs root "
                    f"(hack/cluster up --real-node; this is uid {os.geteuid()})", pytrace=False)
    cluster = RealCluster(plane.kube, plane.image, plane.started_here)
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
    simulated = set(real_cluster.kube.kwok_nodes())  # beside it, for the k8s tier
    addresses = [address["address"] for node in nodes["items"]
                 if node["metadata"]["name"] not in simulated
                 for address in node["status"].get("addresses", [])
                 if address["type"] == "InternalIP"]
    assert len(addresses) == 1, f"one real node expected, found addresses {addresses}"
    with kafka_broker(addresses[0]) as bootstrap:
        yield bootstrap
