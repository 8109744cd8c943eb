"""Helpers for tests against a real cluster: kubectl around a kubeconfig, and polling."""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import urllib3

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
    _api: InProcessApi | None = field(default=None, init=False, repr=False, compare=False)

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
        """`kubectl get ARGS -o json`, or None when the object does not exist.

        Read in this process, through the API (tests poll it several times a second, and a
        kubectl process per poll cost a loaded 2-core machine a fifth of its CPU); kubectl
        reads what InProcessApi does not know, e.g. a get with other options."""
        request = _GetRequest.parse(args)
        if request is not None:
            try:
                return self.api.get(request)
            except UnknownResource:
                pass
        return self._kubectl_get(args)

    @property
    def api(self) -> InProcessApi:
        if self._api is None:
            self._api = InProcessApi(self.kubeconfig)
        return self._api

    def create_namespace(self, name: str) -> None:
        """`kubectl create namespace NAME`, in this process."""
        status, answer = self.api.call("POST", "/api/v1/namespaces", [], body={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status != 201:
            raise KubectlError(1, ["create", "namespace", name], "", json.dumps(answer))

    def delete_namespace(self, name: str) -> None:
        """`kubectl delete namespace NAME --wait=false --ignore-not-found`, in this process:
        its deletion starts (the namespace controller empties it afterwards)."""
        status, answer = self.api.call("DELETE", f"/api/v1/namespaces/{name}", [])
        if status not in (200, 202, 404):
            raise KubectlError(1, ["delete", "namespace", name], "", json.dumps(answer))

    def dry_run_create(self, obj: dict[str, Any], namespace: str, user: str | None = None
                       ) -> str:
        """`kubectl create --dry-run=server [--as=USER]` of ``obj``, in this process: '' when
        admitted, else the API server's refusal (its message)."""
        found = self.api.resource(str(obj["kind"]).lower())
        if found is None:
            raise UnknownResource(obj["kind"])
        _, plural, namespaced = found
        api_version = obj["apiVersion"]
        path = (("/api/v1" if api_version == "v1" else f"/apis/{api_version}")
                + (f"/namespaces/{namespace}" if namespaced else "") + f"/{plural}")
        status, answer = self.api.call("POST", path, [("dryRun", "All")], body=obj,
                                       headers={"Impersonate-User": user} if user else None)
        return "" if status in (200, 201) else str(answer.get("message") or answer)

    def can_i(self, verb: str, resource: str, *, account: str, namespace: str | None,
              subresource: str | None = None) -> bool:
        """`kubectl auth can-i VERB RESOURCE --as=ACCOUNT`, asked in this process (the tests
        ask hundreds at a time) by a SelfSubjectAccessReview made as ``account``,
        impersonated as kubectl's ``--as`` does (so the API server gives a service account
        its groups); ``namespace`` None: in every namespace."""
        found = self.api.resource(resource.lower())
        attributes = {"verb": verb, "group": _group(found[0]) if found is not None else "",
                      "resource": found[1] if found is not None else resource,
                      "subresource": subresource or "", "namespace": namespace or ""}
        status, review = self.api.call(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", [],
            body={"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                  "spec": {"resourceAttributes": attributes}},
            headers={"Impersonate-User": account})
        if status != 201:
            raise KubectlError(1, ["auth", "can-i", verb, resource], "", json.dumps(review))
        return bool(review.get("status", {}).get("allowed"))

    def _kubectl_get(self, args: tuple[str, ...]) -> dict[str, Any] | None:
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


@dataclass(frozen=True)
class _GetRequest:
    """The `kubectl get` forms the tests poll with: a resource, a name or selectors, and a
    namespace (`default` where none is given, as the tests' kubeconfigs have no other)."""

    resource: str
    name: str | None = None
    namespace: str = "default"
    label_selector: str | None = None
    field_selector: str | None = None

    @classmethod
    def parse(cls, args: tuple[str, ...]) -> _GetRequest | None:
        """The request, or None for a form kubectl has to read (several names, other flags)."""
        positional: list[str] = []
        options = {"--namespace": "namespace", "-n": "namespace", "-l": "label_selector",
                   "--selector": "label_selector", "--field-selector": "field_selector"}
        values: dict[str, str] = {}
        tokens = iter(args)
        for token in tokens:
            flag, equals, value = token.partition("=")
            if flag in options:
                values[options[flag]] = value if equals else next(tokens, "")
            elif token.startswith("-") or "/" in token or "," in token:
                return None
            else:
                positional.append(token)
        if not 1 <= len(positional) <= 2 or "" in values.values():
            return None
        name = positional[1] if len(positional) == 2 else None
        if name is not None and ("label_selector" in values or "field_selector" in values):
            return None
        return cls(positional[0].lower(), name, **values)


class UnknownResource(LookupError):
    """A resource name that the API's discovery does not list."""


class InProcessApi:
    """The Kubernetes API from this process, for what the tests ask most often without a
    kubectl process each time (Kube.get, create_namespace, dry_run_create, can_i); resources
    found by discovery (a plural, singular, short name, kind or plural.group, the core group
    first, as kubectl resolves them)."""

    def __init__(self, kubeconfig: Path) -> None:
        from kubernetes import config

        self._client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig))
        self._lock = threading.Lock()
        self._resources: dict[str, tuple[str, str, bool]] = {}

    def get(self, request: _GetRequest) -> dict[str, Any] | None:
        """The object (None if it does not exist), or the list, as `kubectl get -o json`."""
        found = self.resource(request.resource)
        if found is None:
            raise UnknownResource(request.resource)
        prefix, plural, namespaced = found
        path = prefix + (f"/namespaces/{request.namespace}" if namespaced else "") + f"/{plural}"
        query = [(key, value) for key, value in (("labelSelector", request.label_selector),
                                                 ("fieldSelector", request.field_selector))
                 if value is not None]
        status, document = self.call(
            "GET", path + (f"/{request.name}" if request.name else ""), query)
        if status == 404 and request.name is not None:
            return None
        if status != 200:
            raise KubectlError(1, ["GET", path], "", json.dumps(document))
        if request.name is not None:
            return _as_kubectl_prints(document)
        # As kubectl prints a list: kind List, each item with its apiVersion and kind.
        kind = str(document.get("kind", "")).removesuffix("List")
        items = [_as_kubectl_prints({"apiVersion": document.get("apiVersion"), "kind": kind,
                                     **item}) for item in document.get("items") or []]
        return {"apiVersion": "v1", "items": items, "kind": "List",
                "metadata": {"resourceVersion": ""}}

    def call(self, verb: str, path: str, query: list[tuple[str, str]],
             body: dict[str, Any] | None = None, headers: dict[str, str] | None = None
             ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) of one request, as the kubeconfig's user (and as
        ``Impersonate-User`` in ``headers``, when given)."""
        method, url, header_params, serialized, _ = self._client.param_serialize(
            verb, path, query_params=query, body=body,
            header_params={"Accept": "application/json", "Content-Type": "application/json",
                           **(headers or {})},
            auth_settings=["BearerToken"])
        try:
            response = self._client.call_api(method, url, header_params=header_params,
                                             body=serialized, _request_timeout=60)
            response.read()
        except urllib3.exceptions.HTTPError as error:  # as kubectl fails: the server is away
            raise KubectlError(1, [verb, url], "", str(error)) from error
        try:
            return response.status, json.loads(response.data or b"{}")
        except ValueError:  # not JSON: e.g. "404 page not found" from a group not served yet
            return response.status, {"message": response.data.decode(errors="replace")}

    def resource(self, name: str) -> tuple[str, str, bool] | None:
        """(path prefix, plural, namespaced) of ``name``; discovery is read again on a miss,
        for a CRD installed since."""
        with self._lock:
            if name not in self._resources:
                self._resources = self._discover()
            return self._resources.get(name)

    def _discover(self) -> dict[str, tuple[str, str, bool]]:
        prefixes = ["/api/v1"]
        _, groups = self.call("GET", "/apis", [])
        prefixes += [f"/apis/{g['preferredVersion']['groupVersion']}"
                     for g in groups.get("groups", [])]
        resources: dict[str, tuple[str, str, bool]] = {}
        for prefix in prefixes:
            status, listed = self.call("GET", prefix, [])
            for resource in listed.get("resources", []) if status == 200 else []:
                plural = resource["name"]
                if "/" in plural:  # a subresource
                    continue
                found = (prefix, plural, bool(resource.get("namespaced")))
                group = _group(prefix)
                names = [plural, resource.get("singularName"), resource.get("kind", "").lower(),
                         *resource.get("shortNames", []), f"{plural}.{group}" if group else None]
                for alias in filter(None, names):
                    resources.setdefault(alias.lower(), found)
        return resources


def _group(prefix: str) -> str:
    """The API group of a discovery path prefix ('' for the core group's /api/v1)."""
    return prefix.split("/")[2] if prefix.startswith("/apis/") else ""


def _as_kubectl_prints(found: dict[str, Any]) -> dict[str, Any]:
    """Without metadata.managedFields, which kubectl leaves out unless asked."""
    (found.get("metadata") or {}).pop("managedFields", None)
    return found


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
