"""The one cluster of a test session (or of its xdist worker that runs the plane's group), shared
by the k8s and node tiers (the `plane` fixture of tests/conftest.py).

- DATAFLOW_TEST_KUBECONFIG names a cluster of the user's: nothing is started or stopped, and
  DATAFLOW_TEST_IMAGE (if set) is an image of this project its nodes can run.
- Else, when the session's tests include the node tier and this is root: a plane with a real
  node (`hack/cluster up --real-node`) and the project's image built into it (`hack/image
  build`), plus one KWOK node tainted with SIMULATED_TAINT (hack/localcluster/components.py),
  so that the k8s tier's tests of KWOK's simulated nodes run on the same plane.
- Else: a plane of KWOK nodes only (`hack/cluster up`); no pod really runs, and there is no
  image.

Set DATAFLOW_TEST_KEEP_CLUSTER=1 to leave a started plane running after the session (its
kubeconfig path is printed); `hack/cluster down` stops it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from kube_helpers import (
    CLUSTER_SCRIPT,
    IMAGE_ENV,
    KEEP_ENV,
    KUBECONFIG_ENV,
    REPO_ROOT,
    Kube,
)

sys.path.insert(0, str(REPO_ROOT / "hack"))
from localcluster.components import SIMULATED_TAINT

IMAGE_SCRIPT = REPO_ROOT / "hack" / "image"
#: Pod spec fields that place a pod on a KWOK node, on either kind of plane (beside a real node,
#: the KWOK node is tainted with SIMULATED_TAINT).
ON_KWOK = {"nodeSelector": {"type": "kwok"},
           "tolerations": [{**SIMULATED_TAINT, "operator": "Equal"}]}


@dataclass
class Plane:
    """The session's cluster."""

    kube: Kube
    #: An image of this project that the cluster's nodes run (drivers and the chart's operator
    #: then really start); None on a plane of KWOK nodes only.
    image: str | None
    #: True when this session started the plane (its volumes then live on this machine).
    started_here: bool
    #: True when this session started it with a real node (the node tier's plane).
    real_node: bool = False


def real_node_wanted(items: Iterable[pytest.Item]) -> bool:
    """Whether the session's own plane gets a real node: its tests include the node tier and
    it can start one (root)."""
    return os.geteuid() == 0 and any(item.get_closest_marker("node") for item in items)


def run_hack(script: Path, *args: str, timeout: float | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _last_line(result: subprocess.CompletedProcess[str], what: str) -> str:
    lines = result.stdout.strip().splitlines()
    if result.returncode != 0 or not lines:
        pytest.fail(f"{what} failed (exit {result.returncode}):\n{result.stderr[-6000:]}",
                    pytrace=False)
    return lines[-1]


@contextlib.contextmanager
def session_plane(real_node: bool) -> Iterator[Plane]:
    """The session's cluster (see the module's docstring); a started one is stopped after."""
    external = os.environ.get(KUBECONFIG_ENV)
    if external:
        yield _external(external)
        return
    # A first run builds the binaries (minutes); later runs find them cached.
    build = ("build", "--node") if real_node else ("build",)
    built = run_hack(CLUSTER_SCRIPT, *build, timeout=3600)
    if built.returncode != 0:
        pytest.fail(f"hack/cluster {' '.join(build)} failed:\n{built.stderr[-6000:]}",
                    pytrace=False)
    image = None
    if real_node:
        # Before the node, which loads the cached image as it starts (a stale one, loaded by a
        # node started first, would be replaced by a new build: twice the time).
        image = _build_image()
    up = ("up", "--real-node", "--nodes", "1", "--timeout", "240") if real_node else ("up",)
    kubeconfig = Path(_last_line(run_hack(CLUSTER_SCRIPT, *up, "--no-build", timeout=600),
                                 f"hack/cluster {' '.join(up)}"))
    try:
        if real_node:
            # Cached now: under a second, and it loads the image if the node's start did not.
            image = _build_image()
        yield Plane(Kube.for_kubeconfig(kubeconfig, started_here=True), image, True, real_node)
    finally:
        if os.environ.get(KEEP_ENV):
            print(f"\nkept the plane running: KUBECONFIG={kubeconfig}", file=sys.stderr)
        else:
            stopped = run_hack(CLUSTER_SCRIPT, "down", str(kubeconfig), timeout=300)
            print(stopped.stderr, file=sys.stderr, end="")
            if stopped.returncode != 0:
                pytest.fail(f"hack/cluster down failed:\n{stopped.stderr}", pytrace=False)


def _build_image() -> str:
    return _last_line(run_hack(IMAGE_SCRIPT, "build", timeout=3600), "hack/image build")


def _external(kubeconfig: str) -> Plane:
    path = Path(kubeconfig).expanduser().resolve()
    if not path.is_file():
        pytest.fail(f"{KUBECONFIG_ENV}={kubeconfig}: no such file", pytrace=False)
    kube = Kube.for_kubeconfig(path, started_here=False)
    ready = kube.kubectl("get", "--raw", "/readyz", check=False, timeout=30)
    if ready.returncode != 0 or ready.stdout.strip() != "ok":
        pytest.fail(f"cluster of {KUBECONFIG_ENV} is not ready:\n{ready.stderr}", pytrace=False)
    return Plane(kube, os.environ.get(IMAGE_ENV) or None, False)
