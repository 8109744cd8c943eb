"""Fixtures of the `k8s` test tier: a real Kubernetes API server.

By default the session starts its own control plane with `hack/cluster up` (etcd,
kube-apiserver, kube-controller-manager, kube-scheduler and KWOK on loopback ports; see
docs/local-control-plane.md) and stops it at the end. Set DATAFLOW_TEST_KUBECONFIG to the path
of a kubeconfig to run the tier against that cluster instead (kind, or a real one): nothing is
started or stopped then, and each test works in a namespace of its own. On a cluster whose pods
really run, set DATAFLOW_TEST_IMAGE to this project's image (`hack/image build` prints it for the
real node of `hack/cluster up --real-node`): drivers and the chart's operator then start.

Set DATAFLOW_TEST_KEEP_CLUSTER=1 to leave the started plane running after the session (its
kubeconfig path is printed); `hack/cluster down` stops it.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube_helpers import CLUSTER_SCRIPT, IMAGE_ENV, KEEP_ENV, KUBECONFIG_ENV, Kube, wait_until
from operator_helpers import CRD_FILE, Operators, driver_reachable_directory


def _run_cluster(*args: str, timeout: float | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CLUSTER_SCRIPT), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _start_plane() -> Path:
    # A first run builds the binaries (minutes); later runs find them cached.
    built = _run_cluster("build", timeout=None)
    if built.returncode != 0:
        pytest.fail(f"hack/cluster build failed:\n{built.stderr}", pytrace=False)
    started = _run_cluster("up", "--no-build", timeout=300)
    lines = started.stdout.strip().splitlines()
    if started.returncode != 0 or not lines:
        pytest.fail(
            f"hack/cluster up failed (exit {started.returncode}):\n{started.stderr}",
            pytrace=False,
        )
    return Path(lines[-1])


@pytest.fixture(scope="session")
def kube() -> Iterator[Kube]:
    """The cluster of the k8s tier: DATAFLOW_TEST_KUBECONFIG's, or a plane started for it."""
    external = os.environ.get(KUBECONFIG_ENV)
    if external:
        path = Path(external).expanduser().resolve()
        if not path.is_file():
            pytest.fail(f"{KUBECONFIG_ENV}={external}: no such file", pytrace=False)
        cluster = Kube.for_kubeconfig(path, started_here=False)
        ready = cluster.kubectl("get", "--raw", "/readyz", check=False, timeout=30)
        if ready.returncode != 0 or ready.stdout.strip() != "ok":
            pytest.fail(f"cluster of {KUBECONFIG_ENV} is not ready:\n{ready.stderr}", pytrace=False)
        yield cluster
        return

    kubeconfig = _start_plane()
    try:
        yield Kube.for_kubeconfig(kubeconfig, started_here=True)
    finally:
        if os.environ.get(KEEP_ENV):
            print(f"\nkept the control plane running: KUBECONFIG={kubeconfig}", file=sys.stderr)
        else:
            stopped = _run_cluster("down", str(kubeconfig), timeout=120)
            print(stopped.stderr, file=sys.stderr, end="")
            if stopped.returncode != 0:
                pytest.fail(f"hack/cluster down failed:\n{stopped.stderr}", pytrace=False)


def _namespace_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    stem = stem.removeprefix("test-")[:40].strip("-")
    return f"t-{stem}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace (with its default service account), deleted after the test."""
    name = _namespace_name(request.node.name)
    kube.kubectl("create", "namespace", name)
    try:
        wait_until(
            f"the default service account of {name}",
            lambda: kube.get("serviceaccount", "default", "--namespace", name),
        )
        yield name
    finally:
        kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found", check=False)


@pytest.fixture(scope="session")
def crd(kube: Kube) -> None:
    """The DataflowJob CRD, installed once per session."""
    kube.kubectl("apply", "-f", str(CRD_FILE))
    # `kubectl wait` fails outright while the new CRD has no conditions yet.
    wait_until("the CRD's conditions", lambda: (kube.get(
        "crd", "dataflowjobs.dataflow.io") or {}).get("status", {}).get("conditions"))
    kube.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                 "crd/dataflowjobs.dataflow.io")


@pytest.fixture
def driver_tmp() -> Iterator[Path]:
    """A directory for what local drivers read and write (checkpoints, files of the test's):
    tmp_path is private to the tests' user, and a root operator's drivers run as another."""
    path = driver_reachable_directory()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def operators(kube: Kube, namespace: str, crd: None, tmp_path: Path) -> Iterator[Operators]:
    """Starts operator processes watching the test's namespace; stops them afterwards."""
    running = Operators(kube, namespace, tmp_path, image=os.environ.get(IMAGE_ENV))
    yield running
    running.stop_all()
    print(running.logs()[-6000:], file=sys.stderr)  # shown when the test failed
