"""A thin client for the few object kinds the operator manages, over the REST paths.

The generated per-kind APIs of the Kubernetes client differ only in their paths; one generic
client keeps create-or-adopt logic in one place.
"""

from __future__ import annotations

import json
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from dataflow_engine.spec.model import API_GROUP, API_VERSION

_PATHS = {
    "ConfigMap": ("/api/v1", "configmaps"),
    "Pod": ("/api/v1", "pods"),
    "Service": ("/api/v1", "services"),
    "ServiceAccount": ("/api/v1", "serviceaccounts"),
    #: Read by the local backend alone (a developer's kubeconfig); pods mount them instead.
    "Secret": ("/api/v1", "secrets"),
    "Event": ("/api/v1", "events"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings"),
    "DataflowJob": (f"/apis/{API_GROUP}/{API_VERSION}", "dataflowjobs"),
    "DataflowSnapshot": (f"/apis/{API_GROUP}/{API_VERSION}", "dataflowsnapshots"),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases"),
}
#: Failures worth retrying: conflicts, throttling, server trouble.
TRANSIENT_STATUSES = {409, 429, 500, 502, 503, 504}


def load_config(kubeconfig: str | None = None) -> client.ApiClient:
    """In-cluster when running in a pod, else the given or default kubeconfig."""
    configuration = client.Configuration()
    try:
        if kubeconfig is None:
            config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
        else:
            raise config.ConfigException("kubeconfig given")
    except config.ConfigException:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=kubeconfig, client_configuration=configuration)
    configuration.retries = 3
    # One connection per concurrent handler thread (see THREADS in main.py).
    configuration.connection_pool_maxsize = 64
    return client.ApiClient(configuration)


class ForeignObjectError(RuntimeError):
    """An object the operator would create exists and belongs to someone else."""


class StaleObjectError(RuntimeError):
    """An object exists from an earlier DataflowJob of the same name (deleted and created again):
    the garbage collector is about to remove it, so the caller retries."""


def owner_uids(obj: dict[str, Any]) -> set[str]:
    return {ref.get("uid", "") for ref in obj.get("metadata", {}).get("ownerReferences") or []}


def check_owned(existing: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Raises ForeignObjectError unless `existing` has the owner `wanted` names."""
    if not owner_uids(existing) & owner_uids(wanted):
        meta = wanted["metadata"]
        owner = (meta.get("ownerReferences") or [{}])[0]
        for ref in existing["metadata"].get("ownerReferences") or []:
            if (ref.get("kind"), ref.get("name")) == (owner.get("kind"), owner.get("name")):
                raise StaleObjectError(f"{wanted['kind']} {meta['namespace']}/{meta['name']} "
                                       "belongs to an earlier job of this name; waiting for the "
                                       "garbage collector")
        raise ForeignObjectError(
            f"{wanted['kind']} {meta['namespace']}/{meta['name']} already exists and is not "
            f"owned by {owner.get('kind', 'this')} {owner.get('name', '')}: refusing to take it "
            "over (delete or rename it)")


class Kube:
    def __init__(self, api: client.ApiClient) -> None:
        self.api = api

    def _request(self, method: str, path: str, body: Any = None,
                 query: list[tuple[str, str]] | None = None,
                 content_type: str = "application/json", timeout: float = 30,
                 extra_headers: dict[str, str] | None = None) -> bytes:
        """One request; a non-2xx answer raises ApiException with the server's message."""
        headers = {"Accept": "application/json", **(extra_headers or {})}
        if body is not None:
            headers["Content-Type"] = content_type
        _, url, headers, body, _ = self.api.param_serialize(
            method=method, resource_path=path, query_params=query or [],
            header_params=headers, body=body, auth_settings=["BearerToken"])
        response = self.api.call_api(method, url, header_params=headers, body=body,
                                     _request_timeout=timeout)
        data: bytes = response.read()  # type: ignore[no-untyped-call]
        if not 200 <= response.status < 300:
            raise ApiException(http_resp=response)
        return data

    def _call(self, method: str, path: str, body: Any = None,
              query: list[tuple[str, str]] | None = None,
              content_type: str = "application/json") -> dict[str, Any]:
        result = json.loads(self._request(method, path, body, query, content_type) or b"{}")
        return result if isinstance(result, dict) else {}

    @staticmethod
    def path(kind: str, namespace: str, name: str | None = None, sub: str | None = None) -> str:
        prefix, plural = _PATHS[kind]
        path = f"{prefix}/namespaces/{namespace}/{plural}"
        if name:
            path += f"/{name}"
        if sub:
            path += f"/{sub}"
        return path

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return self._call("GET", self.path(kind, namespace, name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, kind: str, namespace: str, selector: str) -> list[dict[str, Any]]:
        result = self._call("GET", self.path(kind, namespace), query=[("labelSelector", selector)])
        return list(result.get("items", []))

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self._call("POST", self.path(obj["kind"], obj["metadata"]["namespace"]), body=obj)

    def replace(self, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT: with metadata.resourceVersion set, a concurrent change answers 409."""
        meta = obj["metadata"]
        return self._call("PUT", self.path(obj["kind"], meta["namespace"], meta["name"]),
                          body=obj)

    def merge_patch(self, kind: str, namespace: str, name: str, patch: dict[str, Any],
                    sub: str | None = None) -> dict[str, Any]:
        return self._call("PATCH", self.path(kind, namespace, name, sub), body=patch,
                          content_type="application/merge-patch+json")

    def delete(self, kind: str, namespace: str, name: str,
               grace_seconds: int | None = None) -> bool:
        body: dict[str, Any] = {"propagationPolicy": "Background"}
        if grace_seconds is not None:
            body["gracePeriodSeconds"] = grace_seconds
        try:
            self._call("DELETE", self.path(kind, namespace, name), body=body)
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def ping(self, timeout: float = 5) -> None:
        """Raises unless the API server answers this operator's credentials and serves the
        DataflowJob API (discovery needs an authenticated user, unlike /version)."""
        self._request("GET", f"/apis/{API_GROUP}/{API_VERSION}", timeout=timeout)

    def proxy_get(self, service: str, port: str, namespace: str, path: str,
                  timeout: float = 5) -> Any:
        """GET through the API server's service proxy: works in and out of the cluster."""
        proxy = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/{path}"
        return json.loads(self._request("GET", proxy, timeout=timeout))

    def proxy_post(self, service: str, port: str, namespace: str, path: str,
                   body: dict[str, Any], headers: dict[str, str] | None = None,
                   timeout: float = 10) -> Any:
        """POST JSON through the API server's service proxy (which passes ``headers`` on)."""
        proxy = f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/{path}"
        return json.loads(self._request("POST", proxy, body=body, timeout=timeout,
                                        extra_headers=headers) or b"{}")

    def create_or_adopt(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Creates the object, or brings an existing one that the same owner made (before a
        restart) up to date. One that someone else made is never taken over."""
        try:
            return self.create(obj)
        except ApiException as exc:
            if exc.status != 409:
                raise
        meta = obj["metadata"]
        existing = self.get(obj["kind"], meta["namespace"], meta["name"])
        if existing is not None:
            check_owned(existing, obj)
        update = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
        update["metadata"] = {"labels": meta.get("labels", {}),
                              "ownerReferences": meta.get("ownerReferences", [])}
        if obj["kind"] == "Service":
            update["spec"] = {k: v for k, v in obj["spec"].items() if k != "clusterIP"}
        return self.merge_patch(obj["kind"], meta["namespace"], meta["name"], update)


def api_message(exc: BaseException) -> str:
    """What an API server (or anything else) said went wrong, in one line for status."""
    if isinstance(exc, ApiException):
        try:
            return str(json.loads(exc.body or "").get("message", exc.reason))
        except (TypeError, ValueError):
            return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


def merge_patch_between(before: dict[str, Any] | None, after: dict[str, Any]) -> dict[str, Any]:
    """The JSON merge patch (RFC 7386) that turns ``before`` into ``after``: ``after`` itself,
    with a null for every map key that ``before`` had and ``after`` lacks (a merge patch keeps
    keys it does not name, e.g. a slot sharing group a new plan no longer has)."""
    patch = dict(after)
    for key, old in (before or {}).items():
        if key not in after:
            patch[key] = None
        elif isinstance(old, dict) and isinstance(after[key], dict):
            patch[key] = merge_patch_between(old, after[key])
    return patch
