"""Real-node benchmark (on demand, root): ``python benchmarks/bench_real_node.py [--runs 3]``.

Needs the machine to itself (one real node per machine). Measures:
1. ``hack/cluster up --real-node``: start to a Ready node with CoreDNS serving, and ``down``.
2. ``hack/image build`` with its cache warm (hash, no rebuild) and the import into the node.
3. The word count on real pods (examples/wordcount-kubernetes.yaml, the operator as a process
   with the Kubernetes backend): apply to Succeeded, per run (target: under 20 s warm on
   2 cores); and the executor pod's start, from its creation to its container running.
   Same-run baseline: the same job with the local backend (embedded Spark, no pods), as a ratio.
Cold figures (empty caches) come from `hack/cluster build --node` and a first `hack/image
build`, whose own logs print their durations.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
IMAGE_UID = 185


def run(*argv: str, data: str | None = None) -> str:
    return subprocess.run(argv, input=data, text=True, capture_output=True, check=True).stdout


def kubectl(kubeconfig: Path, *args: str, data: str | None = None) -> str:
    return run("kubectl", f"--kubeconfig={kubeconfig}", *args, data=data)


def timed(*argv: str) -> tuple[float, str]:
    started = time.monotonic()
    out = run(*argv)
    return time.monotonic() - started, out.strip().splitlines()[-1]


def operator(kubeconfig: Path, namespace: str, backend: str, image: str,
             state: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "dataflow_engine.cli", "operator", "--backend", backend,
         "--namespace", namespace, "--kubeconfig", str(kubeconfig), "--image", image,
         "--health-port", "0", "--metrics-port", "0", "--poll-interval", "0.5",
         "--state-dir", str(state)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


def volume(kubeconfig: Path, namespace: str, directory: Path) -> None:
    directory.mkdir(parents=True)
    os.chown(directory, IMAGE_UID, IMAGE_UID)
    pv = f"{namespace}-wordcount-output"
    objects = [
        {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
         "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                  "storageClassName": "", "hostPath": {"path": str(directory)},
                  "claimRef": {"namespace": namespace, "name": "wordcount-output"}}},
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "wordcount-output", "namespace": namespace},
         "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": "", "volumeName": pv,
                  "resources": {"requests": {"storage": "1Gi"}}}},
    ]
    kubectl(kubeconfig, "apply", "-f", "-",
            data=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def apply_to_succeeded(kubeconfig: Path, namespace: str, job: dict[str, Any]) -> float:
    kubectl(kubeconfig, "delete", "dfj", job["metadata"]["name"], "-n", namespace,
            "--ignore-not-found", "--wait=true")
    started = time.monotonic()
    kubectl(kubeconfig, "apply", "-n", namespace, "-f", "-", data=json.dumps(job))
    kubectl(kubeconfig, "wait", "-n", namespace, "--for=condition=Succeeded", "--timeout=300s",
            f"dfj/{job['metadata']['name']}")
    return time.monotonic() - started


def executor_start_seconds(kubeconfig: Path, namespace: str) -> list[float]:
    pods = json.loads(kubectl(kubeconfig, "get", "pods", "-n", namespace, "-l",
                              "dataflow.io/role=executor", "-o", "json"))["items"]
    starts = []
    for pod in pods:
        created = datetime.fromisoformat(pod["metadata"]["creationTimestamp"])
        for status in pod["status"].get("containerStatuses", []):
            running = (status.get("state") or {}).get("running") or {}
            if running.get("startedAt"):
                starts.append((datetime.fromisoformat(running["startedAt"]) - created)
                              .total_seconds())
    return starts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()

    up_seconds, kubeconfig_text = timed(sys.executable, str(REPO / "hack" / "cluster"), "up",
                                        "--real-node", "--no-build")
    kubeconfig = Path(kubeconfig_text)
    work = Path(tempfile.mkdtemp(prefix="bench-real-node-"))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        image_seconds, image = timed(sys.executable, str(REPO / "hack" / "image"), "build")
        kubectl(kubeconfig, "apply", "-f", str(REPO / "crds"))
        kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s",
                "crd/dataflowjobs.dataflow.io")
        job = yaml.safe_load((REPO / "examples" / "wordcount-kubernetes.yaml").read_text())
        results: dict[str, list[float]] = {}
        for backend in ("kubernetes", "local"):
            namespace = f"bench-{backend}"
            kubectl(kubeconfig, "create", "namespace", namespace)
            volume(kubeconfig, namespace, work / backend / "output")
            processes.append(operator(kubeconfig, namespace, backend, image,
                                      work / backend / "state"))
            spec = dict(job["spec"])
            if backend == "local":  # no volume: the embedded driver writes where it runs
                spec.pop("podTemplate")
                spec["pipeline"] = [*spec["pipeline"][:-1], {
                    **spec["pipeline"][-1], "args": {"path": str(work / "local-out"),
                                                     "format": "json"}}]
            results[backend] = []
            for _ in range(args.runs):
                results[backend].append(
                    apply_to_succeeded(kubeconfig, namespace, {**job, "spec": spec}))
                if backend == "kubernetes":  # executors linger a little after the job ends
                    results.setdefault("executor start", []).extend(
                        executor_start_seconds(kubeconfig, namespace))
    finally:
        for process in processes:
            os.killpg(process.pid, signal.SIGTERM)
        down_started = time.monotonic()
        subprocess.run([sys.executable, str(REPO / "hack" / "cluster"), "down", str(kubeconfig)],
                       capture_output=True)
        down_seconds = time.monotonic() - down_started

    real, local = results["kubernetes"], results["local"]
    print(f"real node up (warm binaries): {up_seconds:.1f} s; down: {down_seconds:.1f} s")
    print(f"hack/image build, warm cache, import into the node: {image_seconds:.1f} s")
    print(f"word count on real pods, apply -> Succeeded: "
          f"{', '.join(f'{s:.1f}' for s in real)} s (median {statistics.median(real):.1f} s)")
    print(f"same job, local backend (baseline): "
          f"{', '.join(f'{s:.1f}' for s in local)} s (median {statistics.median(local):.1f} s)")
    ratio = statistics.median(real) / statistics.median(local)
    print(f"ratio real pods / local backend: {ratio:.2f}")
    starts = results.get("executor start", [])
    if starts:
        print(f"executor pod creation -> container running: median "
              f"{statistics.median(starts):.0f} s, max {max(starts):.0f} s (whole seconds)")


if __name__ == "__main__":
    main()
