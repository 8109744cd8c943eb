"""Operator benchmark (on demand): ``python benchmarks/bench_operator.py [--jobs 200]``.

Starts its own control plane (hack/cluster), then measures:
1. Provisioning throughput with the Kubernetes backend: N DataflowJobs applied at once, from
   apply to every one Provisioned, in jobs per minute. Anchor: Kubeflow's spark-operator tops
   out around 130-150 applications a minute; target: over 1,000.
   Same-run baseline: the API server creating the same objects with no operator (one
   ``kubectl apply`` of every ConfigMap, ServiceAccount, Role, RoleBinding, Service and Pod the
   operator would create), printed as a ratio.
2. Apply-to-Running latency with the local backend (a real embedded-Spark driver).
3. The operator's resident memory after managing N jobs.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "engine"), str(REPO / "operator")]

from dataflow_engine.compiler.validation import parse_spec  # noqa: E402
from dataflow_operator.backends.kubernetes import supporting_objects  # noqa: E402
from dataflow_operator.plan import build_plan  # noqa: E402
from dataflow_operator.resources.driver import driver_pod  # noqa: E402
from dataflow_operator.resources.meta import JobRef  # noqa: E402

SPEC: dict[str, Any] = {
    "parallelism": 2,
    "pipeline": [
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 1000}},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]},
    ],
}


def kubectl(kubeconfig: Path, *args: str, data: str | None = None) -> str:
    return subprocess.run(["kubectl", f"--kubeconfig={kubeconfig}", *args], input=data,
                          text=True, capture_output=True, check=True).stdout


def manifest(names: list[str]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
         "metadata": {"name": n}, "spec": SPEC} for n in names]})


def provisioned(kubeconfig: Path, namespace: str) -> int:
    jobs = json.loads(kubectl(kubeconfig, "get", "dfj", "-n", namespace, "-o", "json"))
    return sum(1 for j in jobs["items"] if any(
        c["type"] == "Provisioned" and c["status"] == "True"
        for c in (j.get("status") or {}).get("conditions", [])))


def start_operator(kubeconfig: Path, namespace: str, backend: str,
                   state: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dataflow_engine.cli", "operator", "--backend", backend,
         "-n", namespace, "--kubeconfig", str(kubeconfig), "--health-port", "0",
         "--metrics-port", "0", "--state-dir", str(state)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, cwd=REPO)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def baseline_objects(names: list[str], namespace: str) -> str:
    """Every object the operator would create for the jobs, for a plain apply."""
    spec = parse_spec(SPEC)
    items: list[dict[str, Any]] = []
    for name in names:
        job = JobRef(name, namespace, "00000000-0000-0000-0000-000000000000")
        plan = build_plan(name, namespace, spec)
        for obj in [*supporting_objects(job, spec, plan, "img"),
                    driver_pod(job, spec, "img", plan.status.hash, 0)]:
            obj["metadata"].pop("ownerReferences", None)
            items.append(obj)
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def throughput(kubeconfig: Path, jobs: int,
               state: Path) -> tuple[float, float, float, float]:
    names = [f"bench-{i:04d}" for i in range(jobs)]
    kubectl(kubeconfig, "create", "namespace", "bench-base")
    objects = baseline_objects(names, "bench-base")
    start = time.perf_counter()
    kubectl(kubeconfig, "create", "-n", "bench-base", "-f", "-", data=objects)
    baseline = time.perf_counter() - start

    kubectl(kubeconfig, "create", "namespace", "bench")
    operator = start_operator(kubeconfig, "bench", "kubernetes", state)
    time.sleep(3)  # started and watching
    cpu_before = cpu_seconds(operator.pid)
    start = time.perf_counter()
    kubectl(kubeconfig, "apply", "-n", "bench", "-f", "-", data=manifest(names))
    while provisioned(kubeconfig, "bench") < jobs:
        time.sleep(0.2)
    elapsed = time.perf_counter() - start
    cpu = cpu_seconds(operator.pid) - cpu_before
    time.sleep(2)
    memory = rss_mib(operator.pid)
    os.killpg(operator.pid, signal.SIGTERM)
    operator.wait()
    return elapsed, baseline, memory, cpu


def local_latency(kubeconfig: Path, state: Path) -> float:
    kubectl(kubeconfig, "create", "namespace", "bench-local")
    operator = start_operator(kubeconfig, "bench-local", "local", state)
    time.sleep(3)
    start = time.perf_counter()
    kubectl(kubeconfig, "apply", "-n", "bench-local", "-f", "-", data=manifest(["latency"]))
    while True:
        job = json.loads(kubectl(kubeconfig, "get", "dfj", "latency", "-n", "bench-local",
                                 "-o", "json"))
        if (job.get("status") or {}).get("jobStatus") in ("RUNNING", "FINISHED"):
            break
        time.sleep(0.1)
    elapsed = time.perf_counter() - start
    os.killpg(operator.pid, signal.SIGTERM)
    operator.wait()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=200)
    args = parser.parse_args()
    up = subprocess.run([sys.executable, str(REPO / "hack" / "cluster"), "up"], text=True,
                        capture_output=True, check=True)
    kubeconfig = Path(up.stdout.strip().splitlines()[-1])
    try:
        kubectl(kubeconfig, "apply", "-f", str(REPO / "crds"))
        kubectl(kubeconfig, "wait", "--for=condition=Established",
                "crd/dataflowjobs.dataflow.io")
        with tempfile.TemporaryDirectory() as state:
            # As root, local drivers run as an unprivileged user, who must reach the state.
            os.chmod(state, 0o711)
            elapsed, baseline, memory, cpu = throughput(kubeconfig, args.jobs, Path(state))
            per_minute = args.jobs / elapsed * 60
            print(f"Provisioning {args.jobs} DataflowJobs (Kubernetes backend, KWOK nodes)")
            print(f"  apply -> all Provisioned: {elapsed:.2f} s = {per_minute:,.0f} jobs/minute "
                  f"(spark-operator ~130-150/min: x{per_minute / 140:.1f}; target > 1,000)")
            objects = len(json.loads(baseline_objects(["x"], "bench"))["items"]) * args.jobs
            print(f"  baseline, the same {objects} objects created by one kubectl call "
                  f"without an operator: {baseline:.2f} s; operator/baseline = "
                  f"{elapsed / baseline:.2f}")
            print(f"  operator CPU while provisioning: {cpu:.1f} s of {elapsed:.1f} s "
                  f"({cpu / elapsed:.0%} of one core; the machine has {os.cpu_count()})")
            print(f"  operator resident memory after {args.jobs} jobs: {memory:.0f} MiB")
            latency = local_latency(kubeconfig, Path(state))
            print(f"Local backend: apply -> RUNNING {latency:.2f} s (embedded Spark driver)")
    finally:
        subprocess.run([sys.executable, str(REPO / "hack" / "cluster"), "down",
                        str(kubeconfig)], capture_output=True)


if __name__ == "__main__":
    main()
