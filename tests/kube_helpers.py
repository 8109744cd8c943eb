"""Helpers for tests against a real cluster: kubectl around a kubeconfig, and polling."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
CLUSTER_SCRIPT = REPO_ROOT / "hack" / "cluster"
KUBECONFIG_ENV = "DATAFLOW_TEST_KUBECONFIG"
KEEP_ENV = "DATAFLOW_TEST_KEEP_CLUSTER"
#: With DATAFLOW_TEST_KUBECONFIG: an image of this project the cluster's nodes can run (its
#: drivers and the chart's operator then really start).
IMAGE_ENV = "DATAFLOW_TEST_IMAGE"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl call; its message carries the command and kubectl's stderr."""

    def __str__(self) -> str:
        command = " ".join(self.cmd)
        return f"`{command}` exited {self.returncode}:\n{self.stderr}{self.output}"


@dataclass
class Kube:
    """A cluster to test against: its admin kubeconfig and helpers around kubectl."""

    kubeconfig: Path
    env: dict[str, str] = field(default_factory=dict)
    started_here: bool = False

    @classmethod
    def for_kubeconfig(cls, kubeconfig: Path, started_here: bool) -> Kube:
        env = dict(os.environ, KUBECONFIG=str(kubeconfig))
        return cls(kubeconfig=kubeconfig, env=env, started_here=started_here)

    def kubectl(
        self, *args: str, input: str | None = None, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster; raise KubectlError on failure when `check`."""
        cmd = ["kubectl", f"--kubeconfig={self.kubeconfig}", *args]
        result = subprocess.run(
            cmd, input=input, env=self.env, capture_output=True, text=True, timeout=timeout
        )
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, cmd, result.stdout, result.stderr)
        return result

    def apply(self, *objects: dict[str, Any], namespace: str | None = None) -> None:
        """`kubectl apply` the given objects."""
        manifest = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        extra = ["--namespace", namespace] if namespace else []
        self.kubectl("apply", *extra, "-f", "-", input=manifest)

    def get(self, *args: str) -> dict[str, Any] | None:
        """`kubectl get ARGS -o json`, or None when the object does not exist."""
        result = self.kubectl("get", *args, "-o", "json", check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr or "not found" in result.stderr:
                return None
            raise KubectlError(result.returncode, result.args, result.stdout, result.stderr)
        found: dict[str, Any] = json.loads(result.stdout)
        return found

    @staticmethod
    def wait_until(
        what: str, condition: Callable[[], Any], timeout: float = 30, interval: float = 0.25
    ) -> Any:
        """Poll `condition` until it returns something truthy (returned); fail after `timeout`."""
        return wait_until(what, condition, timeout, interval)

    def kwok_nodes(self) -> list[str]:
        """Names of the nodes that KWOK simulates."""
        nodes = self.get("nodes") or {"items": []}
        return [
            node["metadata"]["name"]
            for node in nodes["items"]
            if (node["metadata"].get("annotations") or {}).get(KWOK_NODE_ANNOTATION) == "fake"
        ]


def wait_until(
    what: str, condition: Callable[[], Any], timeout: float = 30, interval: float = 0.25
) -> Any:
    """Poll `condition` until it returns something truthy (returned); fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


#: Ports below Linux's default ephemeral range (32768-60999): no process's outgoing connection
#: takes one between free_port() and the bind that follows, as one took 40039 from an operator
#: replica's health server while the spark tier ran beside it.
_LISTEN_PORTS = range(20000, 32768)


def free_port() -> int:
    """A port nothing listens on (yet), on every address, outside the ephemeral range."""
    while True:
        port = random.choice(_LISTEN_PORTS)
        with socket.socket() as sock:
            try:
                sock.bind(("0.0.0.0", port))
            except OSError:
                continue
        return port
