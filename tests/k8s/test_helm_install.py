"""The Helm chart installed on a real API server: the operator's pod is admitted under the
`restricted` Pod Security Standard, and its account may do what the operator does, and no more,
for both watch scopes (every namespace, a list of namespaces)."""

from __future__ import annotations

import base64
import contextlib
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kube_helpers import REPO_ROOT, Kube, free_port, wait_until
from operator_helpers import OperatorProcess, job_manifest, wait_condition, wait_job_status
from planes import SIMULATED_TAINT

pytestmark = pytest.mark.k8s

CHART = REPO_ROOT / "helm" / "dataflow-operator"
CRD = "customresourcedefinition/dataflowjobs.dataflow.io"

#: (verb, resource, subresource) the operator's account must be allowed in a watched namespace.
MUST: list[tuple[str, str, str]] = [
    *[(v, "dataflowjobs.dataflow.io", "") for v in ("get", "list", "watch", "patch")],
    *[(v, "dataflowjobs.dataflow.io", "status") for v in ("get", "patch", "update")],
    *[(v, "pods", "")
      for v in ("get", "list", "watch", "create", "delete", "deletecollection", "patch")],
    *[(v, r, "") for r in ("configmaps", "services", "serviceaccounts")
      for v in ("get", "create", "patch", "delete")],
    ("get", "services", "proxy"),
    *[(v, f"{r}.rbac.authorization.k8s.io", "") for r in ("roles", "rolebindings")
      for v in ("get", "create", "patch", "delete")],
    ("create", "events", ""),
    ("patch", "events", ""),
]

#: ... and must not be allowed in a watched namespace.
MUST_NOT_NAMESPACED: list[tuple[str, str, str]] = [
    *[(v, "secrets", "") for v in ("get", "list", "watch", "create")],
    ("create", "pods", "exec"),
    ("get", "pods", "exec"),
    ("create", "pods", "attach"),
    ("create", "pods", "portforward"),
    ("update", "pods", ""),
    ("create", "dataflowjobs.dataflow.io", ""),
    ("delete", "dataflowjobs.dataflow.io", ""),
    ("create", "deployments.apps", ""),
    ("escalate", "roles.rbac.authorization.k8s.io", ""),
    ("bind", "roles.rbac.authorization.k8s.io", ""),
    ("impersonate", "serviceaccounts", ""),
]

#: Cluster-scoped things it must never do.
MUST_NOT_CLUSTER: list[tuple[str, str, str]] = [
    *[(v, "clusterroles.rbac.authorization.k8s.io", "") for v in ("create", "bind", "escalate")],
    ("create", "clusterrolebindings.rbac.authorization.k8s.io", ""),
    ("delete", "namespaces", ""),
    ("create", "namespaces", ""),
    *[(v, "customresourcedefinitions.apiextensions.k8s.io", "")
      for v in ("create", "patch", "update", "delete")],
    ("list", "secrets", ""),  # across all namespaces
    ("create", "nodes", ""),
]


class Helm:
    """helm against the test cluster, with its own config and cache directories."""

    def __init__(self, binary: str, kube: Kube, home: Path) -> None:
        self.binary = binary
        self.kube = kube
        self.env = dict(kube.env, HELM_CONFIG_HOME=str(home / "config"),
                        HELM_CACHE_HOME=str(home / "cache"), HELM_DATA_HOME=str(home / "data"))

    def __call__(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([self.binary, "--kubeconfig", str(self.kube.kubeconfig), *args],
                                env=self.env, capture_output=True, text=True, timeout=300,
                                stdin=subprocess.DEVNULL)
        if check:
            assert result.returncode == 0, f"helm {' '.join(args)}:\n{result.stderr}"
        return result

    def install(self, release: str, namespace: str, *sets: str) -> str:
        # CRDs are cluster-wide and other tests apply the same one: helm only creates it when
        # it is missing (and, like every helm release, never deletes it on uninstall).
        crd_present = self.kube.kubectl("get", CRD, check=False).returncode == 0
        args = ["install", release, str(CHART), "--namespace", namespace,
                *[arg for value in sets for arg in ("--set", value)]]
        if crd_present:
            args.append("--skip-crds")
        result = self(*args)
        # The API server warns when a workload's pod template breaks the namespace's policy.
        assert "violate PodSecurity" not in result.stderr, result.stderr
        return result.stdout


@pytest.fixture
def chart(helm: str, kube: Kube, tmp_path: Path) -> Helm:
    return Helm(helm, kube, tmp_path / "helm")


def _wait_for_running_pod(kube: Kube, namespace: str, release: str,
                          timeout: float = 90) -> dict[str, Any]:
    """The operator's pod, Running on a node it may go to (a KWOK node of a plane of KWOK
    nodes; beside a real node, not the KWOK node, whose taint it does not tolerate); on timeout,
    fail with the namespace's events (a pod turned away by Pod Security shows as the
    ReplicaSet's FailedCreate)."""
    selector = f"app.kubernetes.io/instance={release},app.kubernetes.io/name=dataflow-operator"
    nodes = {n["metadata"]["name"] for n in (kube.get("nodes") or {}).get("items", [])
             if not any(taint.get("key") == SIMULATED_TAINT["key"]
                        for taint in n["spec"].get("taints") or [])}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = (kube.get("pods", "--namespace", namespace, "-l", selector) or {}).get("items", [])
        running = [p for p in pods if p.get("status", {}).get("phase") == "Running"
                   and p["spec"].get("nodeName") in nodes]
        if running:
            return running[0]
        time.sleep(0.5)
    events = kube.kubectl("get", "events", "--namespace", namespace, check=False).stdout
    pytest.fail(f"no Running operator pod in {namespace} after {timeout:.0f} s; events:\n"
                f"{events}")


def _can_i(kube: Kube, account: str, check: tuple[str, str, str],
           namespace: str | None) -> bool:
    verb, resource, sub = check
    return kube.can_i(verb, resource, account=account, namespace=namespace,
                      subresource=sub or None)


def _matrix(kube: Kube, account: str,
            expected: list[tuple[tuple[str, str, str], str | None, bool]]) -> None:
    """Asks every (check, namespace) at once; fails listing every wrong answer."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        answers = list(pool.map(lambda e: _can_i(kube, account, e[0], e[1]), expected))
    wrong = [f"{'may' if got else 'may not'} {' '.join(filter(None, check))} in "
             f"{namespace or 'all namespaces'}"
             for (check, namespace, want), got in zip(expected, answers, strict=True)
             if got != want]
    assert wrong == [], "\n".join(wrong)


def _check_pod(kube: Kube, pod: dict[str, Any], namespace: str, account: str) -> None:
    assert pod["spec"]["serviceAccountName"] == account
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    container = pod["spec"]["containers"][0]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # A change of the enforced policy makes Pod Security check the pods already there, and warn
    # about those that violate it: pinning `latest` to the server's version is such a change.
    server = json.loads(kube.kubectl("version", "-o", "json").stdout)["serverVersion"]
    pinned = f"v{server['major']}.{server['minor'].rstrip('+')}"
    relabel = kube.kubectl("label", "namespace", namespace, "--overwrite", "--dry-run=server",
                           "pod-security.kubernetes.io/enforce=restricted",
                           f"pod-security.kubernetes.io/enforce-version={pinned}")
    assert "violate" not in relabel.stderr, relabel.stderr


@pytest.fixture
def extra_namespaces(kube: Kube, namespace: str) -> Iterator[list[str]]:
    """Two more namespaces for the operator to watch; deleted after the test."""
    names = [f"{namespace}-a", f"{namespace}-b"]
    for name in names:
        kube.kubectl("create", "namespace", name)
    try:
        yield names
    finally:
        for name in names:
            kube.kubectl("delete", "namespace", name, "--wait=false", "--ignore-not-found",
                         check=False)


@dataclass
class Release:
    name: str
    namespace: str
    notes: str

    @property
    def fullname(self) -> str:
        return f"{self.name}-dataflow-operator"

    @property
    def account(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.fullname}"


def _image_sets(image: str | None, key: str) -> list[str]:
    """Helm values naming the project's image, on a cluster whose pods really run (the
    session's real node, or DATAFLOW_TEST_IMAGE's): the chart's default image may not exist
    there. `key` is "image" or "executorImage"."""
    if not image:
        return []
    if key == "executorImage":
        return [f"executorImage={image}"]
    repository, tag = image.rsplit(":", 1)
    return [f"image.repository={repository}", f"image.tag={tag}"]


@contextlib.contextmanager
def _installed(chart: Helm, kube: Kube, namespace: str, *sets: str) -> Iterator[Release]:
    """The chart installed into `namespace` (enforcing restricted), uninstalled afterwards."""
    kube.kubectl("label", "namespace", namespace, "--overwrite",
                 "pod-security.kubernetes.io/enforce=restricted",
                 "pod-security.kubernetes.io/enforce-version=latest")
    release = Release(f"dfo-{namespace[-6:]}", namespace, "")
    release.notes = chart.install(release.name, namespace, *sets)
    try:
        yield release
    finally:
        chart("uninstall", release.name, "--namespace", namespace, "--wait", "--timeout", "120s")


def test_clusterwide_install(kube: Kube, namespace: str, chart: Helm, image: str | None) -> None:
    with _installed(chart, kube, namespace, "clusterWide=true",
                    *_image_sets(image, "image")) as release:
        assert "NOTES:" in release.notes and "every namespace" in release.notes
        kube.kubectl("wait", "--for=condition=Established", "--timeout=60s", CRD)
        pod = _wait_for_running_pod(kube, namespace, release.name)
        _check_pod(kube, pod, namespace, release.fullname)
        assert kube.get("clusterrolebinding", release.fullname) is not None

        expected: list[tuple[tuple[str, str, str], str | None, bool]] = []
        for watched in (namespace, "default", "some-future-namespace"):
            expected += [(check, watched, True) for check in MUST]
            expected += [(check, watched, False) for check in MUST_NOT_NAMESPACED]
        # kopf lists and watches DataflowJobs across the cluster.
        expected += [(check, None, True) for check in MUST]
        expected += [(check, None, False) for check in MUST_NOT_CLUSTER]
        _matrix(kube, release.account, expected)
    assert kube.get("clusterrole", release.fullname) is None
    assert kube.get("clusterrolebinding", release.fullname) is None


def test_namespace_list_install(kube: Kube, namespace: str, extra_namespaces: list[str],
                                chart: Helm, image: str | None) -> None:
    watched = extra_namespaces
    with _installed(chart, kube, namespace, f"watchNamespaces={{{','.join(watched)}}}",
                    "executorImage=registry.example/dataflow-operator:0.1.0",
                    *_image_sets(image, "image")) as release:
        assert "NOTES:" in release.notes
        assert all(f"  - {name}" in release.notes for name in watched)
        pod = _wait_for_running_pod(kube, namespace, release.name)
        _check_pod(kube, pod, namespace, release.fullname)
        args = pod["spec"]["containers"][0]["args"]
        assert args[args.index("--image") + 1] == "registry.example/dataflow-operator:0.1.0"
        assert [args[i + 1] for i, a in enumerate(args) if a == "--namespace"] == watched
        assert kube.get("clusterrole", release.fullname) is None
        for name in watched:
            assert kube.get("role", release.fullname, "--namespace", name) is not None

        expected: list[tuple[tuple[str, str, str], str | None, bool]] = []
        for name in watched:
            expected += [(check, name, True) for check in MUST]
            expected += [(check, name, False) for check in MUST_NOT_NAMESPACED]
        # Nothing at all outside the list: not its own namespace, not the others.
        for unwatched in (namespace, "default"):
            expected += [(check, unwatched, False) for check in MUST + MUST_NOT_NAMESPACED]
        expected += [(check, None, False) for check in MUST_NOT_CLUSTER + MUST]
        _matrix(kube, release.account, expected)
    for name in watched:
        assert kube.get("role", release.fullname, "--namespace", name) is None


# -- the operator itself, under the chart's account ----------------------------------------------


def _account_kubeconfig(kube: Kube, release: Release, path: Path) -> Path:
    """A kubeconfig of the test cluster that authenticates as the release's ServiceAccount."""
    token = kube.kubectl("create", "token", release.fullname, "--namespace", release.namespace,
                         "--duration=20m").stdout.strip()
    config = json.loads(kube.kubectl("config", "view", "--minify", "--flatten", "--raw",
                                     "-o", "json").stdout)
    config["users"] = [{"name": "operator", "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = "operator"
    path.write_text(json.dumps(config))
    return path


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return str(response.read().decode())
    except OSError:
        return None


@contextlib.contextmanager
def _operator_as(kube: Kube, release: Release, tmp_path: Path) -> Iterator[OperatorRun]:
    """`dataflow operator` with the Deployment's own arguments, as the chart's account, from
    this machine (no image runs on KWOK nodes); health and metrics on free local ports."""
    args = _deployment_args(kube, release)
    health, metrics = free_port(), free_port()
    args[args.index("--health-port") + 1] = str(health)
    args[args.index("--metrics-port") + 1] = str(metrics)
    args[args.index("--status-key-file") + 1] = str(
        _status_key_file(kube, release, tmp_path / "status-key"))
    kubeconfig = _account_kubeconfig(kube, release, tmp_path / "operator-kubeconfig")
    log = tmp_path / "operator.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "dataflow_engine.cli", *args, "--kubeconfig", str(kubeconfig)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=REPO_ROOT,
            start_new_session=True)
    run = OperatorRun(process, log, health, metrics)
    try:
        yield run
    finally:
        run.stop()
        print(run.output()[-6000:], file=sys.stderr)  # shown when the test failed


@dataclass
class OperatorRun(OperatorProcess):
    health_port: int
    metrics_port: int

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _running_jobs(metrics: str | None) -> float:
    """dataflow_operator_jobs{job_status="RUNNING"} (a cluster-wide operator also counts the
    jobs other tests left behind)."""
    found = re.search(r'^dataflow_operator_jobs\{job_status="RUNNING"\} (\S+)$', metrics or "",
                      re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _status_key_file(kube: Kube, release: Release, path: Path) -> Path:
    """The key the chart mounts from its Secret, written where this machine's operator reads it
    (the Secret, not a fresh key: the drivers' tokens must match the chart's)."""
    secret = kube.get("secret", f"{release.fullname}-status-key", "--namespace",
                      release.namespace)
    assert secret is not None, "the chart installs the status key's Secret"
    path.write_bytes(base64.b64decode(secret["data"]["key"]))
    path.chmod(0o600)
    return path


def _deployment_args(kube: Kube, release: Release) -> list[str]:
    deployment = kube.get("deployment", release.fullname, "--namespace", release.namespace)
    assert deployment is not None
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[0] == "operator"  # the entrypoint's mode: it runs `dataflow operator ...`
    return list(args)


@pytest.mark.parametrize("scope", ["all-namespaces", "namespace-list"])
def test_the_charts_account_is_enough_to_run_a_job(
        kube: Kube, namespace: str, extra_namespaces: list[str], chart: Helm, crd: None,
        image: str | None, tmp_path: Path, scope: str) -> None:
    sets = (["clusterWide=true"] if scope == "all-namespaces"
            else [f"watchNamespaces={{{extra_namespaces[0]}}}"])
    # The chart's own operator pod stays without a runnable image (it would reconcile the same
    # job); the drivers get one.
    sets += _image_sets(image, "executorImage")
    target = extra_namespaces[0]
    with _installed(chart, kube, namespace, *sets) as release, \
            _operator_as(kube, release, tmp_path) as run:
        health = f"http://127.0.0.1:{run.health_port}/healthz"
        wait_until("the operator's /healthz", lambda: _get(health) is not None, timeout=60)
        kube.apply(job_manifest("wc"), namespace=target)
        # Compiling, then the driver's ServiceAccount, Role (the operator may only grant what
        # it holds itself), RoleBinding, Service, ConfigMap and Pod: all under the account.
        wait_condition(kube, target, "wc", "Provisioned", timeout=30)
        wait_job_status(kube, target, "wc", "RUNNING", timeout=30)
        metrics = f"http://127.0.0.1:{run.metrics_port}/metrics"
        wait_until("the RUNNING job in /metrics", lambda: _running_jobs(_get(metrics)) >= 1,
                   timeout=30)
        # RBAC's refusals name the account ("User ... cannot list resource ...").
        denied = [line for line in run.output().splitlines()
                  if f'User "{release.account}" cannot' in line]
        assert denied == [], "\n".join(denied[:5])
