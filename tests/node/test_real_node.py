"""The real node itself: what `hack/cluster up --real-node` changes on the machine is undone by
`down`, one real node per machine (a killed session's node is reclaimed), and the chart's
operator running in it as a pod.

The host checks start nodes of their own: they cannot run beside another real node on the same
machine. Marked `machine_to_itself`, they run before the k8s tier (tests/conftest.py), which
already runs on the session's real-node plane.

Whether the k8s tier, written against KWOK's simulated nodes, holds where pods really run is
not a test here: when the node tier runs, the k8s tier runs on its real node (tests/planes.py).
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from node_helpers import RealCluster, create_restricted_namespace, manifest, run_hack

from kube_helpers import CLUSTER_SCRIPT, REPO_ROOT, Kube, wait_until

pytestmark = pytest.mark.node

sys.path.insert(0, str(REPO_ROOT / "hack"))
from localcluster import hostnet, procs  # noqa: E402

CHART = REPO_ROOT / "helm" / "dataflow-operator"


def _host_state() -> dict[str, Any]:
    """What a real node may change on the machine, as comparable values."""

    def rules(tool: str) -> list[str]:
        lines = subprocess.run([f"{tool}-save"], capture_output=True, text=True).stdout
        return sorted(line for line in lines.splitlines()
                      if line.startswith("-A ")
                      or (line.startswith(":") and line.split()[1] == "-"))  # custom chains

    cgroups = sorted(str(path) for path in Path("/sys/fs/cgroup").glob("*/kubepods*"))
    mounts = sorted(line.split()[4] for line in Path("/proc/self/mountinfo").read_text()
                    .splitlines())
    links = sorted(path.name for path in Path("/sys/class/net").iterdir())
    return {
        "iptables": rules("iptables"),
        "ip6tables": rules("ip6tables"),
        "nft tables": sorted(hostnet.nft_tables()),
        "sysctls": hostnet.read_sysctls(),
        "links": links,
        "mounts": mounts,
        "cgroups": cgroups,
        "paths": {path: os.path.exists(path) for path in hostnet.FIXED_PATHS},
    }


def _node_processes() -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv0 = (entry / "cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if Path(argv0).name in ("kubelet", "kube-proxy", "containerd",
                                    "containerd-shim-runc-v2", "coredns", "pause"):
                found.append(f"{entry.name} {argv0}")
    return found


def _machine_to_itself() -> None:
    """No real node may run on the machine; one a killed session left behind (no process of
    it runs) is taken down first, as `up --real-node` would."""
    pruned = run_hack(CLUSTER_SCRIPT, "prune", timeout=300)
    assert pruned.returncode == 0, pruned.stderr
    assert not hostnet.bridge_exists(), (
        "a real node already runs on this machine: this test needs the machine to itself")


@pytest.mark.machine_to_itself
def test_down_undoes_every_host_change_of_a_real_node() -> None:
    _machine_to_itself()
    before = _host_state()
    up = run_hack(CLUSTER_SCRIPT, "up", "--real-node", "--no-image", "--timeout", "240",
                  timeout=600)
    kubeconfig = up.stdout.strip().splitlines()[-1] if up.stdout.strip() else ""
    try:
        assert up.returncode == 0, up.stderr[-4000:]
        kube = Kube.for_kubeconfig(Path(kubeconfig), started_here=True)
        during = _host_state()
        # The node really changed the machine, so the comparison below means something.
        assert hostnet.BRIDGE in during["links"]
        assert during["cgroups"] and during["iptables"] != before["iptables"]
        assert any("DATAFLOW-NODE" in rule for rule in during["iptables"])
        ready = kube.kubectl("get", "deployment", "coredns", "--namespace", "kube-system",
                             "-o", "jsonpath={.status.readyReplicas}")
        assert ready.stdout == "1"
    finally:
        down = run_hack(CLUSTER_SCRIPT, "down", *([kubeconfig] if kubeconfig else []),
                        timeout=300)
    assert down.returncode == 0, down.stderr
    assert _host_state() == before
    assert _node_processes() == []


@pytest.mark.machine_to_itself
def test_a_killed_sessions_real_node_is_taken_down_by_the_next_up() -> None:
    """A session killed with its node up leaves the bridge, mounts and rules behind; the next
    `up --real-node` must reclaim them instead of refusing the machine forever."""
    _machine_to_itself()
    before = _host_state()
    first = run_hack(CLUSTER_SCRIPT, "up", "--real-node", "--no-build", "--no-image",
                     "--timeout", "240", timeout=600)
    assert first.returncode == 0, first.stderr[-4000:]
    abandoned = Path(first.stdout.strip().splitlines()[-1]).parent
    second = None
    try:
        for pid in procs.read_pids(abandoned).values():
            if procs.is_ours(pid, abandoned):
                os.kill(pid, signal.SIGKILL)
        listed = run_hack(CLUSTER_SCRIPT, "list", timeout=60).stdout
        assert f"{abandoned}  0/" in listed, listed
        assert hostnet.bridge_exists()

        second = run_hack(CLUSTER_SCRIPT, "up", "--real-node", "--no-build", "--no-image",
                          "--timeout", "240", timeout=600)
        assert second.returncode == 0, second.stderr[-4000:]
        assert f"took down {abandoned}" in second.stderr
        assert not abandoned.exists()
        kube = Kube.for_kubeconfig(Path(second.stdout.strip().splitlines()[-1]),
                                   started_here=True)
        nodes = kube.kubectl("get", "nodes", "-o", "name").stdout.split()
        assert nodes == ["node/dataflow-node"]
    finally:
        targets = [abandoned]
        if second is not None and second.returncode == 0:
            targets.append(Path(second.stdout.strip().splitlines()[-1]))
        for target in targets:
            if target.exists():
                run_hack(CLUSTER_SCRIPT, "down", str(target), timeout=300)
    assert _host_state() == before
    assert _node_processes() == []


def test_a_second_real_node_on_the_machine_is_refused(real_cluster: RealCluster) -> None:
    if not real_cluster.started_here:
        pytest.skip("the session's cluster is DATAFLOW_TEST_KUBECONFIG's: no local real node")
    second = run_hack(CLUSTER_SCRIPT, "up", "--real-node", "--no-build", timeout=120)
    assert second.returncode == 1
    assert "one real node per machine" in second.stderr, second.stderr
    # ... and the running node was not disturbed.
    nodes = real_cluster.kube.kubectl("get", "nodes", "-o", "name").stdout.split()
    assert "node/dataflow-node" in nodes


def test_the_charts_operator_runs_a_job_in_cluster_and_a_deleted_job_leaves_nothing(
        real_cluster: RealCluster, helm: str, tmp_path: Path) -> None:
    kube = real_cluster.kube
    suffix = secrets.token_hex(3)
    system, jobs = f"dfo-{suffix}", f"dfj-{suffix}"
    for namespace in (system, jobs):
        create_restricted_namespace(kube, namespace)
    repository, tag = real_cluster.image.rsplit(":", 1)
    env = dict(kube.env, HELM_CONFIG_HOME=str(tmp_path / "helm"),
               HELM_CACHE_HOME=str(tmp_path / "helm"), HELM_DATA_HOME=str(tmp_path / "helm"))
    helm_args = [helm, "--kubeconfig", str(kube.kubeconfig), "--namespace", system]
    try:
        installed = subprocess.run(
            [*helm_args, "install", "dfo", str(CHART), "--skip-crds", "--wait",
             "--timeout", "180s", "--set", f"image.repository={repository}",
             "--set", f"image.tag={tag}", "--set", f"watchNamespaces={{{jobs}}}"],
            env=env, capture_output=True, text=True, timeout=240)
        assert installed.returncode == 0, installed.stderr
        assert "violate PodSecurity" not in installed.stderr
        operator_pods = (kube.get("pods", "--namespace", system) or {})["items"]
        assert [p["status"]["phase"] for p in operator_pods] == ["Running", "Running"]
        # Two replicas, one leader: the Lease names one of the pods.
        lease = wait_until("the leader's Lease", lambda: kube.get(
            "lease", "dfo-dataflow-operator", "--namespace", system))
        holder = lease["spec"]["holderIdentity"].rsplit("_", 1)[0]
        assert holder in {p["metadata"]["name"] for p in operator_pods}

        job = manifest("in-cluster", [
            {"name": "numbers", "type": "sequence", "args": {"from": 1, "to": 1000},
             "parallelism": 1},
            {"name": "squares", "type": "map", "function": "square", "inputs": ["numbers"]},
            {"name": "out", "type": "discard", "inputs": ["squares"]}])
        kube.apply(job, namespace=jobs)
        kube.kubectl("wait", "--for=condition=Succeeded", "--timeout=180s",
                     "dataflowjob/in-cluster", "--namespace", jobs, timeout=200)
        vertices = kube.get("dataflowjob", "in-cluster", "--namespace", jobs)["status"]["vertices"]
        assert (vertices[0]["name"], vertices[0]["recordsOut"]) == ("Source: Sequence Source",
                                                                   1000)
        assert vertices[1]["recordsIn"] == 1000

        kube.kubectl("delete", "dataflowjob", "in-cluster", "--namespace", jobs)

        def nothing_left() -> bool:
            for kind in ("pods", "services", "configmaps", "serviceaccounts", "roles"):
                found = kube.get(kind, "--namespace", jobs, "-l", "dataflow.io/job=in-cluster")
                if (found or {}).get("items"):
                    return False
            return True

        wait_until("the job's pods, Service, ConfigMap and account garbage-collected",
                   nothing_left, timeout=120, interval=1)
    finally:
        subprocess.run([*helm_args, "uninstall", "dfo", "--wait", "--timeout", "120s"],
                       env=env, capture_output=True, timeout=180)
        for namespace in (system, jobs):
            kube.kubectl("delete", "namespace", namespace, "--wait=false", check=False)
