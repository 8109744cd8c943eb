"""Fixtures shared by every test tier, the order the tiers run in, and how they are shared out.

The tiers run unit, spark, k8s, node (in collection order within a tier): quick failures come
first, and a session resource that only some tiers use lives only while they run. The spark
tier's Kafka broker and HDFS stop, and its SparkSession is stopped, after its last test
(tests/lifetimes.py). The node tier's tests that start real nodes of their own (marked
`machine_to_itself`) run before the k8s tier: its plane (tests/planes.py) has a real node when
the node tier runs, and a machine has room for one.

`hack/test` runs two pytest-xdist workers (TierScheduling): one runs the spark tier and then
the k8s tier's tests that need no node (NODELESS_FILES: the local backend's, whose drivers are
processes on this machine, and the admission policies'), on a plane of its own without a node;
the other runs the tests of the session's
plane in order (the host checks, then the rest of the k8s tier and the node tier). The unit
tests come first, shared out between both. Both wait on servers and drivers much of the time,
so side by side they take little more than the longer alone.
"""
from __future__ import annotations

import os
import subprocess
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

from hack_servers import hack_server
from kafka_helpers import KAFKA_ENV, kafka_broker
from kube_helpers import Kube, wait_until
from lifetimes import end_after, until_last_use
from operator_helpers import CRD_FILE
from planes import Plane, real_node_wanted, session_plane
from short_lived_jvms import use_for_short_lived_jvms

INSTALL_HELM = Path(__file__).resolve().parents[1] / "hack" / "install-helm"

#: The session's order: by the first of these markers an item has (unmarked items go first).
ORDER = ("unit", "machine_to_itself", "spark", "k8s", "node")
#: Which xdist worker runs a tier's tests (tests/<tier>/...), by the tier's directory: the spark
#: tier in one, and the tests of the session's plane in the other, in ORDER (the host checks need
#: the machine to themselves before the plane's real node starts). Unit tests go anywhere.
_GROUPS = {"spark": "spark", "k8s": "plane", "node": "plane"}
#: Files of the k8s tier that need an API server and no node (operators that run jobs on the
#: local backend; the admission policies, each request a dry run): they join the spark tier's
#: group (after it, by ORDER), which balances the workers; the plane they start has no real
#: node (a machine has room for one, the other's).
NODELESS_FILES = frozenset({"test_operator_streaming.py", "test_operator_snapshots.py",
                            "test_operator_autoscaler.py", "test_operator_local.py",
                            "test_program_manifests.py", "test_admission_policies.py"})
#: The test being run: the plane fixture serves the tests of its group.
_CURRENT = pytest.StashKey[pytest.Item]()

use_for_short_lived_jvms()


def scheduling_group(nodeid: str) -> str:
    """The xdist scope of a test: its tier's group, or the test itself (a unit test)."""
    parts = nodeid.split("/", 2)
    if len(parts) < 3 or parts[0] != "tests":
        return nodeid
    if parts[1] == "k8s" and parts[2].split("::", 1)[0] in NODELESS_FILES:
        return "spark"
    return _GROUPS.get(parts[1], nodeid)


def _rank(item: pytest.Item) -> int:
    return next((rank for rank, marker in enumerate(ORDER) if item.get_closest_marker(marker)),
                0)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=_rank)  # stable: within a tier, the collection's order


class TierScheduling(LoadScopeScheduling):
    """xdist's load-by-scope scheduling with a tier's tests as one scope, taken in ORDER: the
    unit tests (one scope each) go to both workers, then each takes one of the two tiers."""

    def _split_scope(self, nodeid: str) -> str:
        return scheduling_group(nodeid)


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> TierScheduling:
    config.option.loadscopereorder = False  # the scopes in the session's order, not by size
    return TierScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.session.stash[_CURRENT] = item


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None]:
    try:
        return (yield)
    finally:
        end_after(item)


@pytest.fixture(scope="session")
def helm() -> str:
    """The pinned helm binary (built from its Go module on first use); fails, never skips."""
    result = subprocess.run([str(INSTALL_HELM)], capture_output=True, text=True, timeout=1800,
                            stdin=subprocess.DEVNULL)
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.fail(f"hack/install-helm failed (exit {result.returncode}):\n{result.stderr}",
                    pytrace=False)
    return lines[-1]


@pytest.fixture(scope="session")
def kafka_bootstrap(request: pytest.FixtureRequest) -> Iterator[str]:
    """Bootstrap servers of a Kafka broker: ``$DATAFLOW_TEST_KAFKA_BOOTSTRAP`` when a user
    points the tests at one, else a broker of ``hack/kafka up`` until its last test ran."""
    external = os.environ.get(KAFKA_ENV)
    if external:
        yield external
        return
    with until_last_use(request) as stack:
        yield stack.enter_context(kafka_broker())


@pytest.fixture(scope="session")
def hdfs_uri(request: pytest.FixtureRequest) -> Iterator[str]:
    """A Hadoop filesystem's root URI: ``$DATAFLOW_TEST_HDFS`` when a user points the tests at
    one, else an HDFS of ``hack/hdfs up`` until its last test ran."""
    external = os.environ.get("DATAFLOW_TEST_HDFS")
    if external:
        yield external.rstrip("/")
        return
    with until_last_use(request) as stack:
        yield stack.enter_context(hack_server("hdfs"))


@pytest.fixture(scope="session")
def plane(request: pytest.FixtureRequest) -> Iterator[Plane]:
    """The cluster of the k8s and node tiers (tests/planes.py): DATAFLOW_TEST_KUBECONFIG's, or
    one plane started for both, with a real node if the node tier runs; the k8s tier then runs
    where pods really run, with the project's image. The two tiers come last in their worker,
    and the plane ends with them (after its dependents, session fixtures of theirs). An xdist
    worker runs whole groups: its plane serves the group of the test that first needs it (the
    spark tier's group then starts a plane without a node)."""
    users = request.session.items
    if hasattr(request.config, "workerinput"):
        group = scheduling_group(request.session.stash[_CURRENT].nodeid)
        users = [item for item in users if scheduling_group(item.nodeid) == group]
    with session_plane(real_node_wanted(users)) as started:
        yield started


@pytest.fixture(scope="session")
def crd(plane: Plane) -> None:
    """The DataflowJob and DataflowSnapshot CRDs, installed once per session."""
    kube: Kube = plane.kube
    kube.kubectl("apply", "-f", str(CRD_FILE.parent))
    for name in ("dataflowjobs.dataflow.io", "dataflowsnapshots.dataflow.io"):
        # `kubectl wait` fails outright while the new CRD has no conditions yet.
        wait_until("the CRD's conditions", lambda name=name: (kube.get(  # type: ignore[misc]
            "crd", name) or {}).get("status", {}).get("conditions"))
        kube.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{name}")
