"""Fixtures of the `k8s` test tier: a real Kubernetes API server.

The tier runs on the session's plane (the `plane` fixture of tests/conftest.py, started by
tests/planes.py), which it shares with the node tier:

- When the session's tests include the node tier (and this is root), the plane has a real node
  (`hack/cluster up --real-node`) and the project's image built into it, and this tier runs
  there with that image, as DATAFLOW_TEST_KUBECONFIG and DATAFLOW_TEST_IMAGE would make it:
  drivers and the chart's operator really start, so the tier's claims, written against KWOK's
  simulated nodes, are checked where pods really run (a second run of the tier against the
  real node used to check that). The plane also has one KWOK node, tainted with
  SIMULATED_TAINT, for the tests of KWOK itself; their pods tolerate the taint
  (planes.ON_KWOK).
- Else (`-m k8s`, `-m "unit or k8s"`), a plane of KWOK nodes only (`hack/cluster up`: etcd,
  kube-apiserver, kube-controller-manager, kube-scheduler and KWOK on loopback ports; see
  docs/local-control-plane.md): no pod really runs. The tier's files that need no node
  (conftest.NODELESS_FILES) run on such a plane of their own beside the other worker's.

Either plane is stopped after the last test that uses it. Set DATAFLOW_TEST_KUBECONFIG to the
path of a kubeconfig to run the tier against that cluster instead (kind, or a real one):
nothing is started or stopped then, and each test works in a namespace of its own. On a cluster
whose pods really run, set DATAFLOW_TEST_IMAGE to this project's image (`hack/image build`
prints it): drivers and the chart's operator then start.

Set DATAFLOW_TEST_KEEP_CLUSTER=1 to leave the started plane running after the session (its
kubeconfig path is printed); `hack/cluster down` stops it.
"""

from __future__ import annotations

import contextlib
import re
import secrets
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kube_helpers import Kube, KubectlError, wait_until
from operator_helpers import Operators, driver_reachable_directory
from planes import Plane


@pytest.fixture(scope="session")
def kube(plane: Plane) -> Kube:
    """The cluster of the k8s tier: the session's plane."""
    return plane.kube


@pytest.fixture(scope="session")
def image(plane: Plane) -> str | None:
    """This project's image, where the cluster's pods really run (else None)."""
    return plane.image


def _namespace_name(test_name: str) -> str:
    stem = re.sub(r"[^a-z0-9]+", "-", test_name.lower()).strip("-")
    stem = stem.removeprefix("test-")[:40].strip("-")
    return f"t-{stem}-{secrets.token_hex(3)}"


@pytest.fixture
def namespace(kube: Kube, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace (with its default service account), deleted after the test."""
    name = _namespace_name(request.node.name)
    kube.create_namespace(name)
    try:
        wait_until(
            f"the default service account of {name}",
            lambda: kube.get("serviceaccount", "default", "--namespace", name),
        )
        yield name
    finally:
        with contextlib.suppress(KubectlError):  # the namespace's deletion only starts here
            kube.delete_namespace(name)


@pytest.fixture
def driver_tmp() -> Iterator[Path]:
    """A directory for what local drivers read and write (checkpoints, files of the test's):
    tmp_path is private to the tests' user, and a root operator's drivers run as another."""
    path = driver_reachable_directory()
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def operators(kube: Kube, namespace: str, crd: None, image: str | None,
              tmp_path: Path) -> Iterator[Operators]:
    """Starts operator processes watching the test's namespace; stops them afterwards."""
    running = Operators(kube, namespace, tmp_path, image=image)
    yield running
    running.stop_all()
    print(running.logs()[-6000:], file=sys.stderr)  # shown when the test failed
