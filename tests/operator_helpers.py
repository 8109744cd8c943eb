"""Operator processes against the test cluster, DataflowJob manifests, and status lookups."""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from kube_helpers import REPO_ROOT, Kube, wait_until
from short_lived_jvms import SHORT_LIVED

CRD_FILE = REPO_ROOT / "crds" / "dataflowjobs.dataflow.io.yaml"
CHART = REPO_ROOT / "helm" / "dataflow-operator"

BASE_SPEC: dict[str, Any] = {
    "parallelism": 2,
    "restartStrategy": {"type": "fixed-delay", "attempts": 2, "delay": "1s"},
    "pipeline": [
        {"name": "source", "type": "sequence", "args": {"from": 1, "to": 100}, "parallelism": 1},
        {"name": "square", "type": "map", "function": "square", "inputs": ["source"]},
        {"name": "out", "type": "discard", "inputs": ["square"]},
    ],
}


#: An unbounded datagen source into a keyed running sum (keyed state) and a discarding sink.
KEYED_SUM_PIPELINE: list[dict[str, Any]] = [
    {"name": "events", "type": "datagen", "args": {"rowsPerSecond": 200}},
    {"name": "sums", "type": "sum", "args": {"field": 1},
     "inputs": [{"from": "events", "keyBy": 0}]},
    {"name": "out", "type": "discard", "inputs": ["sums"]}]


#: Records per event-time window of :func:`window_count_pipeline`.
WINDOW_RECORDS = 1000


def window_count_pipeline(output: str) -> list[dict[str, Any]]:
    """An unbounded datagen whose record index is its event time in ms, counted in 1 s
    tumbling event-time windows and written as JSON to files under `output`: a whole window
    counts WINDOW_RECORDS, so a count says whether a record was lost or repeated. Run at
    parallelism 1, the watermark follows the index exactly."""
    return [
        {"name": "events", "type": "datagen", "args": {"rowsPerSecond": 400, "seed": 3}},
        {"name": "stamped", "type": "timestamps", "inputs": ["events"],
         "watermarkStrategy": {"type": "forMonotonousTimestamps", "timestampField": 0}},
        {"name": "ones", "type": "map", "function": "with_one", "inputs": ["stamped"]},
        {"name": "counts", "type": "window_all", "inputs": ["ones"],
         "function": "dataflow_engine.functions.library:sum_counts",
         "window": {"assigner": {"type": "tumbling", "time": "event", "size": "1000ms"},
                    "kind": "reduce"}},
        {"name": "out", "type": "file", "inputs": ["counts"],
         "args": {"path": output, "format": "json"}}]


def published_windows(lines: str) -> list[tuple[int, int]]:
    """(first index, count) of every window in the JSON lines of window_count_pipeline's
    files, by first index."""
    return sorted((first, count) for (first, _), count in
                  (json.loads(line) for line in lines.splitlines() if line.strip()))


def assert_drained_windows(published: list[tuple[int, int]]) -> None:
    """Every window once and in order, whole, but the last: the window a drain fired open."""
    *whole, (_, last_count) = published
    assert [first for first, _ in published] == [
        WINDOW_RECORDS * i for i in range(len(published))], published
    assert {count for _, count in whole} == {WINDOW_RECORDS}, published
    assert 0 < last_count < WINDOW_RECORDS, published


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "dataflow.io/v1alpha1", "kind": "DataflowJob",
            "metadata": {"name": name}, "spec": {**copy.deepcopy(BASE_SPEC), **spec}}


def render_chart(helm: str, release: str, namespace: str, *sets: str) -> list[dict[str, Any]]:
    """`helm template` of the chart: its objects."""
    args = [helm, "template", release, str(CHART), "--namespace", namespace,
            *[arg for value in sets for arg in ("--set", value)]]
    rendered = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert rendered.returncode == 0, rendered.stderr
    return [doc for doc in yaml.safe_load_all(rendered.stdout) if doc]


def admission_policies(helm: str, image: str, *sets: str) -> list[dict[str, Any]]:
    """The chart's admission policies and their bindings, for drivers and executors of
    `image`."""
    return [o for o in render_chart(helm, "dataflow", "dataflow-system",
                                    f"executorImage={image}", *sets)
            if o["kind"].startswith("ValidatingAdmissionPolicy")]


def driver_reachable_directory(mode: int = 0o777) -> Path:
    """A new directory that local drivers may use (by default: write to, like /tmp): when the
    tests run as root, drivers run as an unprivileged user of their own (docs/security.md), who
    cannot reach pytest's private tmp_path."""
    path = Path(tempfile.mkdtemp(prefix="dataflow-test-"))
    path.chmod(mode)
    return path


@dataclass
class OperatorProcess:
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()


class Operators:
    """Starts operator processes scoped to one namespace; stops them all afterwards."""

    def __init__(self, kube: Kube, namespace: str, directory: Path,
                 image: str | None = None) -> None:
        self.kube = kube
        self.namespace = namespace
        self.directory = directory
        self.image = image
        self.started: list[OperatorProcess] = []
        #: The local backend's state: outside pytest's private tmp_path, which the user that a
        #: root operator's drivers run as cannot reach.
        self.state_dir = driver_reachable_directory(0o711)

    def start(self, backend: str = "kubernetes", *extra: str) -> OperatorProcess:
        log = self.directory / f"operator-{len(self.started)}.log"
        command = [sys.executable, "-m", "dataflow_engine.cli", "operator", "--backend", backend,
                   "--namespace", self.namespace, "--kubeconfig", str(self.kube.kubeconfig),
                   "--health-port", "0", "--metrics-port", "0", "--poll-interval", "0.5",
                   "--state-dir", str(self.state_dir),
                   # Its jobs' JVMs are as short-lived as the tests' own.
                   f"--jvm-options={SHORT_LIVED}"]
        if self.image:
            command += ["--image", self.image]
        command += extra
        with open(log, "ab") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                       cwd=REPO_ROOT, start_new_session=True)
        started = OperatorProcess(process, log)
        self.started.append(started)
        return started

    def stop_all(self) -> None:
        for process in self.started:
            process.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def logs(self) -> str:
        return "\n".join(p.log.read_text(errors="replace") for p in self.started
                         if p.log.exists())


def job(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    found = kube.get("dataflowjob", name, "--namespace", namespace)
    assert found is not None, f"DataflowJob {namespace}/{name} is gone"
    return found


def status(kube: Kube, namespace: str, name: str) -> dict[str, Any]:
    return job(kube, namespace, name).get("status") or {}


def condition(kube: Kube, namespace: str, name: str, type_: str) -> dict[str, Any] | None:
    for cond in status(kube, namespace, name).get("conditions", []):
        if cond["type"] == type_:
            return dict(cond)
    return None


def wait_condition(kube: Kube, namespace: str, name: str, type_: str, value: str = "True",
                   timeout: float = 60) -> dict[str, Any]:
    def met() -> dict[str, Any] | None:
        found = condition(kube, namespace, name, type_)
        return found if found and found["status"] == value else None

    result: dict[str, Any] = wait_until(f"{name} condition {type_}={value}", met, timeout)
    return result


def wait_job_status(kube: Kube, namespace: str, name: str, expected: str,
                    timeout: float = 60) -> dict[str, Any]:
    result: dict[str, Any] = wait_until(
        f"{name} jobStatus {expected}",
        lambda: (s := status(kube, namespace, name)).get("jobStatus") == expected and s,
        timeout)
    return result


def owned(kube: Kube, namespace: str, kind: str, name: str) -> list[dict[str, Any]]:
    found = kube.get(kind, "--namespace", namespace, "-l", f"dataflow.io/job={name}")
    return list((found or {}).get("items", []))


def events(kube: Kube, namespace: str, name: str, reason: str | None = None) -> list[str]:
    found = kube.get("events", "--namespace", namespace, "--field-selector",
                     f"involvedObject.kind=DataflowJob,involvedObject.name={name}")
    return [e["reason"] + ": " + e.get("message", "") for e in (found or {}).get("items", [])
            if reason is None or e["reason"] == reason]


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    """An operator's /healthz on this machine: the HTTP status (0: nothing answered) and the
    probes' JSON (empty unless it answered 200)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=15) as answer:
            return answer.status, json.loads(answer.read() or b"{}")
    except urllib.error.HTTPError as exc:
        return exc.code, {}
    except OSError:
        return 0, {}
