"""Jobs, volumes and readers for tests whose pods really run."""

from __future__ import annotations

import base64
import copy
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dataflow_operator.status.subtask_encoding import decode_runs, decode_states
from kube_helpers import Kube, wait_until

STORAGE_CLASS_ENV = "DATAFLOW_TEST_STORAGE_CLASS"


@dataclass
class RealCluster:
    kube: Kube
    image: str
    #: True when this session started the plane (its volumes then live on this machine).
    started_here: bool

#: The image's user: volumes on this machine must be writable by it.
IMAGE_UID = 185
#: Sized to fit a 2-core node beside CoreDNS: a 250m driver and executors of 2 slots of 200m.
SMALL: dict[str, Any] = {
    "slotsPerExecutor": 2,
    "slotSharingGroups": [{"name": "default", "cpu": "200m", "memory": "512Mi"}],
    "driver": {"cpu": "250m", "memory": "1Gi"},
}
#: spark.conf of the jobs whose executor pods a test deletes. Spark's watch takes a pod deleted
#: with --force for a running one (it has no terminated state), so only its poll of the pods
#: (every 30 s by default), and then a detect delta (30 s), tell it the executor is lost; the
#: test polls sooner, so that a loss costs seconds of the test instead of a minute.
EXECUTOR_LOSS_SEEN_SOONER = {"spark.kubernetes.executor.apiPollingInterval": "3s",
                             "spark.kubernetes.executor.missingPodDetectDelta": "5s"}
#: User code the jobs import on the executors, shipped as a ConfigMap on PYTHONPATH.
FUNCTIONS_MODULE = "nodefns"
FUNCTIONS_SOURCE = '''"""Functions of the node tier's jobs."""
import time


def slow(value):
    """Identity, 50 ms per record: keeps a subtask running long enough to disturb it."""
    time.sleep(0.05)
    return value


def modulo_three(value):
    return value % 3


def index_modulo_four(row):
    """The key of a datagen row (index, value)."""
    return row[0] % 4


class PageClicks:
    """ProcessFunction of kafka click records: (page, its Kafka timestamp, n)."""

    def process_element(self, value, ctx):
        yield value["page"], ctx.timestamp(), value["n"]


page_clicks = PageClicks


def add_page_clicks(a, b):
    """ReduceFunction of (page, timestamp, n): the latest timestamp, the total."""
    return a[0], max(a[1], b[1]), a[2] + b[2]
'''


def run_hack(script: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def create_restricted_namespace(kube: Kube, name: str) -> None:
    """A namespace enforcing the `restricted` Pod Security Standard, with its default account."""
    kube.kubectl("create", "namespace", name)
    kube.kubectl("label", "namespace", name, "pod-security.kubernetes.io/enforce=restricted",
                 "pod-security.kubernetes.io/warn=restricted")
    wait_until(f"the default service account of {name}",
               lambda: kube.get("serviceaccount", "default", "--namespace", name))


def pod_templates(claim: str | None = None, functions: str | None = None) -> dict[str, Any]:
    """Driver and executor templates mounting a claim at /data and user code on PYTHONPATH."""

    def template(container: str) -> dict[str, Any]:
        mounts: list[dict[str, Any]] = []
        volumes: list[dict[str, Any]] = []
        env: list[dict[str, str]] = []
        if claim:
            mounts.append({"name": "data", "mountPath": "/data"})
            volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": claim}})
        if functions:
            mounts.append({"name": "functions", "mountPath": "/opt/functions", "readOnly": True})
            volumes.append({"name": "functions", "configMap": {"name": functions}})
            env.append({"name": "PYTHONPATH", "value": "/opt/functions"})
        return {"spec": {"containers": [{"name": container, "volumeMounts": mounts, "env": env}],
                         "volumes": volumes}}

    return {"driver": template("driver"), "executor": template("executor")}


def manifest(name: str, pipeline: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
            "metadata": {"name": name},
            "spec": {**copy.deepcopy(SMALL), "parallelism": 2, "pipeline": pipeline, **spec}}


def functions_config_map(kube: Kube, namespace: str) -> str:
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "functions"},
                "data": {f"{FUNCTIONS_MODULE}.py": FUNCTIONS_SOURCE}}, namespace=namespace)
    return "functions"


class Volume:
    """A ReadWriteMany claim for a job's output: a PersistentVolume on this machine (a
    directory the image's user owns), or one provisioned by DATAFLOW_TEST_STORAGE_CLASS."""

    def __init__(self, cluster: RealCluster, namespace: str, claim: str) -> None:
        self.cluster = cluster
        self.kube = cluster.kube
        self.namespace = namespace
        self.claim = claim
        self.pv: str | None = None
        self.directory: Path | None = None
        storage_class = os.environ.get(STORAGE_CLASS_ENV, "")
        pvc: dict[str, Any] = {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": claim},
            "spec": {"accessModes": ["ReadWriteMany"], "storageClassName": storage_class,
                     "resources": {"requests": {"storage": "1Gi"}}}}
        if not storage_class:
            self.directory = Path(tempfile.mkdtemp(prefix="dataflow-node-volume-"))
            self.directory.chmod(0o755)
            os.chown(self.directory, IMAGE_UID, IMAGE_UID)
            self.pv = f"{namespace}-{claim}"
            pvc["spec"]["volumeName"] = self.pv
            self.kube.apply({
                "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": self.pv},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany"],
                         "persistentVolumeReclaimPolicy": "Retain", "storageClassName": "",
                         "hostPath": {"path": str(self.directory), "type": "Directory"},
                         "claimRef": {"namespace": namespace, "name": claim}}})
        self.kube.apply(pvc, namespace=namespace)

    def read_bytes(self, pattern: str) -> bytes:
        """As :meth:`read`, for files that are not text (checkpoints)."""
        return base64.b64decode(self.read(pattern, "| base64 -w0"))

    def read(self, pattern: str, then: str = "") -> str:
        """The concatenated files matching `pattern` under the volume's root, read by a pod
        that mounts the claim (so the bytes are the ones the job's pods wrote); `then` pipes
        them through a command."""
        return self._in_pod(f"cat /data/{pattern} {then}")

    def list(self, directory: str) -> list[str]:
        """The names in `directory` under the volume's root, as the job's pods see them."""
        return self._in_pod(f"ls -1 /data/{directory}").split()

    def _in_pod(self, command: str) -> str:
        """What `command` prints in a pod that mounts the claim at /data."""
        name = f"reader-{secrets.token_hex(3)}"
        context = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]},
                   "runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
        self.kube.apply({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": "Never",
                     "securityContext": {"runAsUser": IMAGE_UID, "runAsGroup": IMAGE_UID},
                     "containers": [{"name": "cat", "image": self.cluster.image,
                                     "imagePullPolicy": "IfNotPresent",
                                     "command": ["/bin/sh", "-c", command],
                                     "securityContext": context,
                                     "volumeMounts": [{"name": "data", "mountPath": "/data"}]}],
                     "volumes": [{"name": "data",
                                  "persistentVolumeClaim": {"claimName": self.claim}}]}},
            namespace=self.namespace)

        def done() -> bool:
            pod = self.kube.get("pod", name, "--namespace", self.namespace) or {}
            phase = pod.get("status", {}).get("phase")
            assert phase != "Failed", self.kube.kubectl("logs", "-n", self.namespace, name,
                                                        check=False).stdout
            return phase == "Succeeded"

        wait_until(f"pod {name} reading the volume", done, timeout=90, interval=0.5)
        return self.kube.kubectl("logs", "--namespace", self.namespace, name).stdout

    def delete(self) -> None:
        self.kube.kubectl("delete", "pvc", self.claim, "--namespace", self.namespace,
                          "--wait=false", "--ignore-not-found", check=False)
        if self.pv:
            self.kube.kubectl("delete", "pv", self.pv, "--wait=false", "--ignore-not-found",
                              check=False)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)


def subtask_states(vertex: dict[str, Any]) -> list[str]:
    return [state.name for state in decode_states(vertex.get("subtasks", ""))]


def attempts(vertex: dict[str, Any]) -> list[int]:
    return decode_runs(vertex.get("attempts", ""))


def running_subtasks(status: dict[str, Any]) -> int:
    return sum(vertex.get("states", {}).get("RUNNING", 0)
               for vertex in status.get("vertices", []))


def pods(kube: Kube, namespace: str, selector: str) -> list[dict[str, Any]]:
    found = kube.get("pods", "--namespace", namespace, "-l", selector) or {}
    return list(found.get("items", []))
